"""Capture what a real Apache Kafka release advertises and lists, as data for kafkalite's emulation profiles.

    python tools/capture_kafka.py                                    # Kafka 4.4.0 (tools/bootstrap.sh reference)
    KAFKALITE_REFERENCE_KAFKA=4.3.1 python tools/capture_kafka.py    # another release (bootstrap it the same way)
    python tools/capture_kafka.py --check                            # exit 1 if the committed module differs

Starts the release as the compat harness does (``compat-tests/harness/reference.py``: a one-node KRaft broker
and controller on loopback, formatted ``--standalone``), asks it over the wire with kafkalite's own codec, stops
it, and writes ``kafkalite/config/kafka_releases/kafka_<major>_<minor>.py``:

- ``API_VERSIONS``: its ApiVersions answer (v4 request): every API key with its min and max version;
- ``SUPPORTED_FEATURES`` / ``FINALIZED_FEATURES``: the feature flags of that answer;
- ``TOPIC_CONFIGS``: DescribeConfigs of a fresh topic with nothing set: every topic config with its type and
  default, and the broker synonyms Kafka lists for it at the defaults;
- ``BROKER_CONFIGS``: DescribeConfigs of the broker: every broker config with its type, read-only and sensitive
  flags, and its default (a config the harness sets in server.properties shows its default as a DEFAULT_CONFIG
  synonym; one without a default is null);
- ``GROUP_CONFIGS``: DescribeConfigs of a group: every group config with its type and default.

These are facts Kafka states about itself on the wire (names, numbers, flags), not Kafka's source or prose
(documentation strings are not asked for). Values the harness sets (listeners, ports, paths, ids) are not
recorded, only defaults.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
COMPAT = REPO / "compat-tests"
sys.path[:0] = [str(REPO), str(COMPAT)]

from differential.wireconn import WireConn  # noqa: E402
from harness import reference  # noqa: E402
from harness.broker import BrokerProcess  # noqa: E402

from kafkalite_wire import messages as m  # noqa: E402

OUT_DIR = REPO / "kafkalite" / "config" / "kafka_releases"
TYPES = {1: "boolean", 2: "string", 3: "int", 4: "short", 5: "long", 6: "double", 7: "list", 8: "class",
         9: "password"}
DEFAULT_CONFIG = 5
TOPIC, BROKER, GROUP = 2, 4, 32
TOPIC_NAME = "capture-defaults"
GROUP_NAME = "capture-group"


def _ask(conn: WireConn, body: Any, version: int, what: str, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        resp = conn.request(body, version)
        if resp is not None:
            return resp
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: no answer")
        time.sleep(0.2)


def _describe(conn: WireConn, rtype: int, name: str) -> list[Any]:
    req = m.DescribeConfigsRequest(resources=[m.DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=rtype, resource_name=name, configuration_keys=None)], include_synonyms=True)
    deadline = time.monotonic() + 60
    while True:
        r = _ask(conn, req, 4, "DescribeConfigs").results[0]
        if r.error_code == 0:
            return list(r.configs)
        if time.monotonic() > deadline:
            raise RuntimeError(f"DescribeConfigs {rtype}/{name}: error {r.error_code}")
        time.sleep(0.2)


def _default_of(c: Any) -> str | None:
    """The config's default: its value where it is the default, else the DEFAULT_CONFIG synonym of its name."""
    if c.config_source == DEFAULT_CONFIG:
        return c.value
    return next((s.value for s in c.synonyms if s.name == c.name and s.source == DEFAULT_CONFIG), None)


def capture() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kafkalite-capture-") as tmp:
        b = BrokerProcess(Path(tmp) / "data", Path(tmp) / "broker.log", kind="kafka")
        try:
            b.start()
            with WireConn(b.bootstrap) as conn:
                av = _ask(conn, m.ApiVersionsRequest(client_software_name="kafkalite-capture",
                                                     client_software_version="1.0"), 4, "ApiVersions")
                create = m.CreateTopicsRequest(topics=[m.CreateTopicsRequest.CreatableTopic(
                    name=TOPIC_NAME, num_partitions=1, replication_factor=1)], timeout_ms=30_000)
                code = _ask(conn, create, 5, "CreateTopics").topics[0].error_code
                if code not in (0, 36):
                    raise RuntimeError(f"CreateTopics: error {code}")
                topic = _describe(conn, TOPIC, TOPIC_NAME)
                broker = _describe(conn, BROKER, "1")
                group = _describe(conn, GROUP, GROUP_NAME)
        finally:
            b.stop()
            b.kill()
    return {
        "api_versions": {k.api_key: (k.min_version, k.max_version) for k in av.api_keys},
        "supported": [(f.name, f.min_version, f.max_version) for f in av.supported_features],
        "finalized": [(f.name, f.max_version_level) for f in av.finalized_features],
        "topic": {c.name: (TYPES.get(c.config_type, "unknown"), c.value,
                           tuple(dict.fromkeys(s.name for s in c.synonyms))) for c in topic},
        "broker": {c.name: (TYPES.get(c.config_type, "unknown"), c.read_only, c.is_sensitive, _default_of(c))
                   for c in broker},
        "group": {c.name: (TYPES.get(c.config_type, "unknown"), c.value) for c in group},
    }


def render(data: dict[str, Any]) -> str:
    v = reference.KAFKA_VERSION
    out = [
        f'"""Apache Kafka {v} as it describes itself on the wire: AUTOGENERATED by `python tools/capture_kafka.py`'
        f"\n(KAFKALITE_REFERENCE_KAFKA={v}), do not edit. What each table holds: that tool's docstring.",
        '"""',
        "from __future__ import annotations",
        "",
        f'RELEASE = "{v}"',
        "",
        "#: api key -> (min version, max version), as its ApiVersions answer advertises them",
        "API_VERSIONS: dict[int, tuple[int, int]] = {",
    ]
    items = sorted(data["api_versions"].items())
    for i in range(0, len(items), 8):
        out.append("    " + " ".join(f"{k}: ({lo}, {hi})," for k, (lo, hi) in items[i:i + 8]))
    out += ["}", "", "#: (name, min level, max level), in the answer's order (ApiVersions v4)",
            "SUPPORTED_FEATURES: tuple[tuple[str, int, int], ...] = ("]
    out += [f"    ({n!r}, {lo}, {hi})," for n, lo, hi in data["supported"]]
    out += [")", "#: (name, finalized level) of a node formatted --standalone, in the answer's order",
            "FINALIZED_FEATURES: tuple[tuple[str, int], ...] = ("]
    out += [f"    ({n!r}, {lv})," for n, lv in data["finalized"]]
    out += [")", "", "#: topic config -> (type, default, broker synonyms listed at the defaults)",
            "TOPIC_CONFIGS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {"]
    out += [f"    {n!r}: ({t!r}, {d!r}, {s!r})," for n, (t, d, s) in sorted(data["topic"].items())]
    out += ["}", "", "#: broker config -> (type, read-only, sensitive, default)",
            "BROKER_CONFIGS: dict[str, tuple[str, bool, bool, str | None]] = {"]
    out += [f"    {n!r}: ({t!r}, {ro}, {se}, {d!r})," for n, (t, ro, se, d) in sorted(data["broker"].items())]
    out += ["}", "", "#: group config -> (type, default)",
            "GROUP_CONFIGS: dict[str, tuple[str, str | None]] = {"]
    out += [f"    {n!r}: ({t!r}, {d!r})," for n, (t, d) in sorted(data["group"].items())]
    out += ["}", ""]
    lines = []
    for ln in out:   # keep the house's line length: long entries are split after the name
        if len(ln) > 120 and ln.startswith("    '") and ": (" in ln:
            name, rest = ln.split(": (", 1)
            lines += [name + ":", "        (" + rest]
        else:
            lines.append(ln)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed module instead of writing")
    a = ap.parse_args()
    why = reference.missing()
    if why:
        print(why, file=sys.stderr)
        return 2
    major, minor = reference.KAFKA_VERSION.split(".")[:2]
    path = OUT_DIR / f"kafka_{major}_{minor}.py"
    text = render(capture())
    if a.check:
        same = path.exists() and path.read_text() == text
        print(f"{path.relative_to(REPO)}: {'up to date' if same else 'differs from what Kafka answers now'}")
        return 0 if same else 1
    path.write_text(text)
    print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
