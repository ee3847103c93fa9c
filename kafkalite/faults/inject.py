"""Building the answer to a request a fault rule fires on: the API's own response with the injected code.

Where the code goes follows Kafka. APIs whose results are per partition (Produce, Fetch, ListOffsets,
OffsetCommit, DeleteRecords, OffsetForLeaderEpoch, TxnOffsetCommit) carry a broker's errors such as
NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR or REQUEST_TIMED_OUT in each partition's ``error_code``; their
top-level code (Fetch v7+) stays NONE, since a client reads a top-level Fetch error as a failed fetch session,
which is not what a partition's leader moving looks like. A rule may name topic-partitions: only those get
the code, the other partitions of the same request are handled as usual. Every other API gets the code where
Kafka's ``getErrorResponse`` puts it (its top level, and every entry the request named:
:func:`kafkalite.handlers.error_response.error_response`).

Two modes:

- ``answer`` (default): the request is not carried out for the partitions (or the whole request) the error
  covers, as Kafka does when it refuses one (an injected NOT_LEADER_OR_FOLLOWER on Produce appends nothing, so
  an idempotent producer's retry is a first write, not a duplicate): the matched partitions are taken out of
  the request before the handler sees it, and answered with the error.
- ``through``: the request is carried out whole, then the answer for the matched partitions (or the whole
  answer) is replaced by the error: a lost acknowledgement. The producer's retry is then a duplicate that the
  broker's idempotence must catch.
"""
from __future__ import annotations

import uuid
from typing import Any

from kafkalite.handlers.error_response import error_response

#: api key -> (request topic list, its partition list, partition field; response topic list, partition list,
#: partition field)
PARTITION_APIS: dict[int, tuple[str, str, str, str, str, str]] = {
    0: ("topic_data", "partition_data", "index", "responses", "partition_responses", "index"),
    1: ("topics", "partitions", "partition", "responses", "partitions", "partition_index"),
    2: ("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    8: ("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    21: ("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    23: ("topics", "partitions", "partition", "topics", "partitions", "partition"),
    28: ("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
}
_ZERO_UUID = uuid.UUID(int=0)


def _clone(obj: Any) -> Any:
    """A shallow copy of a generated message object (plain __slots__ classes)."""
    cls: Any = type(obj)
    out = cls.__new__(cls)
    for name in type(obj).__slots__:
        setattr(out, name, getattr(obj, name))
    return out


def _topic_name(entry: Any, topics_by_id: Any) -> str:
    name = getattr(entry, "name", None) or getattr(entry, "topic", None)
    if name:
        return str(name)
    tid = getattr(entry, "topic_id", None)
    if tid is not None and tid != _ZERO_UUID and topics_by_id:
        info = topics_by_id.get(tid)
        if info is not None:
            return str(info.name)
    return ""


def request_partitions(api_key: int, body: Any, topics_by_id: Any = None) -> list[tuple[str, int]]:
    """The (topic, partition) pairs a partition-scoped request names ([] for other APIs)."""
    spec = PARTITION_APIS.get(api_key)
    if spec is None:
        return []
    tl, pl, pf = spec[:3]
    return [(_topic_name(t, topics_by_id), int(getattr(p, pf)))
            for t in getattr(body, tl, None) or () for p in getattr(t, pl, None) or ()]


def split(api_key: int, body: Any, match: frozenset[tuple[str, int]] | None,
          topics_by_id: Any = None) -> tuple[Any | None, Any | None]:
    """(the request without the matched partitions or None if nothing is left, the request with only the
    matched partitions or None if none matched). ``match`` None matches every partition."""
    tl, pl, pf = PARTITION_APIS[api_key][:3]
    keep_topics: list[Any] = []
    hit_topics: list[Any] = []
    for t in getattr(body, tl, None) or ():
        name = _topic_name(t, topics_by_id)
        keep: list[Any] = []
        hit: list[Any] = []
        for p in getattr(t, pl, None) or ():
            (hit if match is None or (name, int(getattr(p, pf))) in match else keep).append(p)
        if keep:
            kt = _clone(t)
            setattr(kt, pl, keep)
            keep_topics.append(kt)
        if hit:
            ht = _clone(t)
            setattr(ht, pl, hit)
            hit_topics.append(ht)
    rest = matched = None
    if keep_topics:
        rest = _clone(body)
        setattr(rest, tl, keep_topics)
    if hit_topics:
        matched = _clone(body)
        setattr(matched, tl, hit_topics)
    return rest, matched


def partition_errors(api_key: int, response_class: type, matched: Any, code: int) -> Any:
    """The response to ``matched`` with ``code`` on each of its partitions and the top level left NONE."""
    resp = error_response(response_class, matched, code)
    if getattr(resp, "error_code", None) is not None:
        resp.error_code = 0
    return resp


def _same_topic(a: Any, b: Any) -> bool:
    ida, idb = getattr(a, "topic_id", None), getattr(b, "topic_id", None)
    if ida is not None and ida != _ZERO_UUID and ida == idb:
        return True
    na = getattr(a, "name", None) or getattr(a, "topic", None)
    nb = getattr(b, "name", None) or getattr(b, "topic", None)
    return bool(na) and na == nb


def merge(api_key: int, response: Any, errors: Any) -> Any:
    """Put the error entries of ``errors`` into ``response`` (replacing entries for the same partitions)."""
    if response is None:
        return errors
    tl, pl, pf = PARTITION_APIS[api_key][3:]
    topics = list(getattr(response, tl, None) or [])
    for et in getattr(errors, tl, None) or ():
        for rt in topics:
            if _same_topic(rt, et):
                parts = {int(getattr(p, pf)): p for p in getattr(rt, pl, None) or ()}
                for ep in getattr(et, pl, None) or ():
                    parts[int(getattr(ep, pf))] = ep
                setattr(rt, pl, list(parts.values()))
                break
        else:
            topics.append(et)
    setattr(response, tl, topics)
    return response


def whole_error(response_class: type, body: Any, code: int) -> Any:
    """The answer to a request of a non-partition API with ``code`` (Kafka's getErrorResponse)."""
    return error_response(response_class, body, code)
