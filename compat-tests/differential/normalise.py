"""What may legitimately differ between two brokers' answers to the same request, and the comparison.

``normalise(tree)`` rewrites a response tree so that two correct brokers give equal trees:

- values that name the deployment: ``cluster_id``, ``host``, ``port`` (and the listener strings and log dirs
  among DescribeConfigs values), UUIDs (topic ids), producer ids, the member ids a broker gives, log dir paths
  and the file system's sizes;
- values that name the moment: ``throttle_time_ms``, ``log_append_time_ms``, a transaction's start, a voter's
  last fetch, when they are not -1;
- order the protocol leaves free: lists of named things (topics, partitions, configs, api keys, coordinators,
  features, brokers) are sorted by their name or index.

Error codes, offsets, epochs, flags, config values, and ``error_message`` texts are kept: they are behaviour.
``diff(a, b)`` lists the paths where two trees differ; ``classify`` names the outcome of one comparison.
"""

from __future__ import annotations

import re
from typing import Any

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ZERO_UUID = "00000000-0000-0000-0000-000000000000"

# field name -> placeholder, for any value other than the field's "none" value (-1 / None / "")
_PLACEHOLDERS = {
    "cluster_id": "<cluster-id>",
    "host": "<host>",
    "port": "<port>",
    "producer_id": "<producer-id>",
    "log_append_time_ms": "<time>",
    "throttle_time_ms": 0,
    "session_id": "<session-id>",
    "member_id": "<member-id>",          # a classic group's member ids are the broker's: client id + random
    "leader": "<member-id>",
    "log_dir": "<log-dir>",
    "total_bytes": "<bytes>",
    "usable_bytes": "<bytes>",
    "transaction_start_time_ms": "<time>",
    "last_fetch_timestamp": "<time>",
    "last_caught_up_timestamp": "<time>",
}
# DescribeConfigs values that name the machine or the deployment, not behaviour
_DEPLOYMENT_CONFIGS = {"log.dirs", "log.dir", "listeners", "advertised.listeners", "controller.quorum.voters",
                       "metadata.log.dir", "node.id", "broker.id"}
# keys a list element is ordered by, first present wins
_ORDER_KEYS = ("name", "topic", "resource_name", "partition_index", "partition", "index", "api_key", "node_id",
               "broker_id", "key", "group_id", "transactional_id")


def _is_none(v: Any) -> bool:
    return v is None or v == -1 or v == "" or v == ZERO_UUID


def normalise(tree: Any) -> Any:
    if isinstance(tree, list):
        items = [normalise(x) for x in tree]
        if items and all(isinstance(x, dict) for x in items):
            key = next((k for k in _ORDER_KEYS if all(k in x for x in items)), None)
            if key is not None:
                items.sort(key=lambda x: (str(type(x[key])), str(x[key])))
        return items
    if not isinstance(tree, dict):
        if isinstance(tree, str) and UUID_RE.match(tree) and tree != ZERO_UUID:
            return "<uuid>"
        return tree
    out: dict[str, Any] = {}
    for k, v in tree.items():
        if k in _PLACEHOLDERS and not _is_none(v):
            out[k] = _PLACEHOLDERS[k]
        else:
            out[k] = normalise(v)
    if out.get("name") in _DEPLOYMENT_CONFIGS and "value" in out:
        out["value"] = "<deployment>"
        if isinstance(out.get("synonyms"), list):
            out["synonyms"] = [dict(s, value="<deployment>") for s in out["synonyms"]]
    return out


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where ``a`` (kafkalite) and ``b`` (Kafka) differ, as ``path: a != b`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            p = f"{path}.{k}" if path else k
            if k not in a:
                out.append(f"{p}: (absent) != {_short(b[k])}")
            elif k not in b:
                out.append(f"{p}: {_short(a[k])} != (absent)")
            else:
                out += diff(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if a and b and all(isinstance(x, dict) for x in a + b) and _unique_key(a, b) is not None:
            return _diff_named(a, b, path)
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            out += diff(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)} items")
        return out
    return [] if a == b else [f"{path}: {_short(a)} != {_short(b)}"]


def _unique_key(a: list[Any], b: list[Any]) -> str | None:
    """The key that names every element of both lists, once each on each side (then elements pair by it)."""
    key = next((k for k in _ORDER_KEYS if all(k in x for x in a + b)), None)
    if key is None:
        return None
    for side in (a, b):
        if len({str(x[key]) for x in side}) != len(side):
            return None
    return key


def _diff_named(a: list[Any], b: list[Any], path: str) -> list[str]:
    """Lists of named elements: which names only one side has, then the common ones, by name."""
    key = _unique_key(a, b)
    assert key is not None
    am = {str(x[key]): x for x in a}
    bm = {str(x[key]): x for x in b}
    out = []
    only_a = sorted(set(am) - set(bm))
    only_b = sorted(set(bm) - set(am))
    if only_a:
        out.append(f"{path}: only kafkalite has {key} {_names(only_a)}")
    if only_b:
        out.append(f"{path}: only Kafka has {key} {_names(only_b)}")
    for n in sorted(set(am) & set(bm)):
        out += diff(am[n], bm[n], f"{path}[{key}={n}]")
    return out


def _names(names: list[str], n: int = 12) -> str:
    return ", ".join(names[:n]) + (f" (+{len(names) - n} more)" if len(names) > n else "")


def _short(v: Any, n: int = 80) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + "..."


IDENTICAL = "identical"
NORMALISED = "identical after normalising"
MESSAGE_ONLY = "differs: error message text only"
DIFFERS = "differs"


def classify(raw_a: Any, raw_b: Any) -> tuple[str, list[str]]:
    """The outcome of comparing kafkalite's response (a) with Kafka's (b), and the differing paths."""
    if raw_a == raw_b:
        return IDENTICAL, []
    lines = diff(normalise(raw_a), normalise(raw_b))
    if not lines:
        return NORMALISED, []
    if all(re.search(r"error_message[^:]*:", ln) for ln in lines):
        return MESSAGE_ONLY, lines
    return DIFFERS, lines
