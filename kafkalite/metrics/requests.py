"""Per-request counters: what the connection reports after each handler, read by the exposition.

The connection calls :meth:`RequestMetrics.handle` instead of the handler itself when metrics are on (and
nothing at all when they are off). Everything is counted from objects the request already produced, so the
request path pays a few dictionary updates and no decoding:

- requests per API and version, latency per API (a fixed-bucket histogram in milliseconds, from the decoded
  request to the response built: for Fetch it includes the long-poll wait, as Kafka's TotalTimeMs does);
  a Fetch is counted under "Fetch" and "FetchConsumer" as in Kafka (every fetch here is a consumer's);
- error codes per API, counted as Kafka's ``errorCounts()`` does: every ``error_code`` in the response (the
  top level and each partition/resource entry), NONE included; a response of more than ``WALK_LIMIT``
  entries is counted only that far (a 100,000-partition Metadata answer is not walked on the event loop);
- Produce: per topic, messages and bytes in for every partition appended (error code NONE; acks=0 requests
  get no response, and a failed acks=0 request closes the connection before it is counted). The message
  count is the batch header's RecordsCount (bytes 57-60), which the validator has already checked against
  the records present (``kafkalite.validation``: count = LastOffsetDelta + 1 = the records walked), so no
  record is decoded here. Total and failed produce requests per topic, as Kafka's BrokerTopicMetrics.
- Fetch: per topic, bytes out = the record bytes in the response (file regions counted by length, never
  read); total and failed fetch requests per topic.
"""
from __future__ import annotations

import bisect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import REGISTRY

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

#: latency histogram buckets, milliseconds (le); the last, +Inf, is implicit
BUCKETS_MS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
              30000.0)
#: response entries walked for error codes, at most
WALK_LIMIT = 10_000
_PRODUCE, _FETCH = 0, 1
_SKIP = frozenset(("records", "unknown_tagged_fields"))
_ERROR_NAMES: dict[int, str] = {int(c): c.name for c in ErrorCode}

# per-topic slots
MSGS_IN, BYTES_IN, BYTES_OUT, PRODUCE_REQS, PRODUCE_FAILED, FETCH_REQS, FETCH_FAILED = range(7)


#: Kafka records every consumer Fetch under both "Fetch" and "FetchConsumer" (a follower's under
#: "FetchFollower"; there are none here): requests and latency are kept under this pseudo key as well
FETCH_CONSUMER = -1


def api_name(key: int) -> str:
    if key == FETCH_CONSUMER:
        return "FetchConsumer"
    info = REGISTRY.get(key)
    return info.name if info is not None else str(key)


class RequestMetrics:
    """Counters of one broker; owned by the event loop (no locks)."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.requests: dict[tuple[int, int], int] = {}              # (api key, version) -> count
        self.errors: dict[tuple[int, int], int] = {}                # (api key, error code) -> count
        self.latency: dict[int, list[float]] = {}                   # api key -> [bucket counts..., +Inf, sum]
        self.topics: dict[str, list[int]] = {}                      # topic -> the slots above
        self.totals = [0] * 7                                       # the same, all topics (never dropped)
        self._plans: dict[type, tuple[bool, tuple[str, ...]]] = {}

    async def handle(self, fn: Callable[[Any, Any], Awaitable[Any]], ctx: Any, body: Any) -> Any:
        """Run the handler and count its request and response."""
        start = time.perf_counter()
        response = await fn(ctx, body)
        self.observe(ctx.header.api_key, ctx.header.api_version, body, response,
                     (time.perf_counter() - start) * 1000.0)
        return response

    def observe(self, key: int, version: int, request: Any, response: Any, elapsed_ms: float) -> None:
        self._request(key, version, elapsed_ms)
        if key == _PRODUCE:   # these two count their error codes as they walk their partitions
            self._produce(request, response)
        elif key == _FETCH:
            self._request(FETCH_CONSUMER, version, elapsed_ms)
            self._fetch(response)
        elif response is not None:
            self._count_errors(key, response)

    def _request(self, key: int, version: int, elapsed_ms: float) -> None:
        rk = (key, version)
        self.requests[rk] = self.requests.get(rk, 0) + 1
        hist = self.latency.get(key)
        if hist is None:
            hist = self.latency[key] = [0.0] * (len(BUCKETS_MS) + 2)
        hist[bisect.bisect_left(BUCKETS_MS, elapsed_ms)] += 1
        hist[-1] += elapsed_ms

    # -- per topic ------------------------------------------------------------------------------------
    def _topic(self, name: str) -> list[int]:
        slots = self.topics.get(name)
        if slots is None:
            slots = self.topics[name] = [0] * 7
        return slots

    def _produce(self, req: Any, resp: Any) -> None:
        failed: set[tuple[str, int]] | None = None
        if resp is not None:
            errors = self.errors
            ok = 0
            for t in resp.responses:
                for p in t.partition_responses:
                    code = p.error_code
                    if code:
                        ek = (_PRODUCE, code)
                        errors[ek] = errors.get(ek, 0) + 1
                        if failed is None:
                            failed = set()
                        failed.add((t.name, p.index))
                    else:
                        ok += 1
            if ok:
                errors[(_PRODUCE, 0)] = errors.get((_PRODUCE, 0), 0) + ok
        totals = self.totals
        for t in req.topic_data:
            slots = self._topic(t.name)
            slots[PRODUCE_REQS] += 1
            totals[PRODUCE_REQS] += 1
            topic_failed = False
            for pd in t.partition_data:
                if failed and (t.name, pd.index) in failed:
                    topic_failed = True
                    continue
                records = pd.records
                if records is None or len(records) < 61:
                    continue
                count = int.from_bytes(records[57:61], "big")
                size = len(records)
                slots[MSGS_IN] += count
                slots[BYTES_IN] += size
                totals[MSGS_IN] += count
                totals[BYTES_IN] += size
            if topic_failed:
                slots[PRODUCE_FAILED] += 1
                totals[PRODUCE_FAILED] += 1

    def _fetch(self, resp: Any) -> None:
        totals = self.totals
        errors = self.errors
        by_id = None
        top = (_FETCH, resp.error_code)
        errors[top] = errors.get(top, 0) + 1
        for t in resp.responses:
            name = t.topic
            if not name:    # v13+: topics are named by id
                if by_id is None:
                    by_id = getattr(self.state, "topics_by_id", {})
                info = by_id.get(t.topic_id)
                name = info.name if info is not None else str(t.topic_id)
            slots = self._topic(name)
            slots[FETCH_REQS] += 1
            totals[FETCH_REQS] += 1
            out = 0
            topic_failed = False
            for p in t.partitions:
                ek = (_FETCH, p.error_code)
                errors[ek] = errors.get(ek, 0) + 1
                if ek[1]:
                    topic_failed = True
                rec = p.records
                if type(rec) is list:
                    for c in rec:
                        out += c[2] if type(c) is tuple else len(c)
                elif rec is not None:
                    out += len(rec)
            slots[BYTES_OUT] += out
            totals[BYTES_OUT] += out
            if topic_failed:
                slots[FETCH_FAILED] += 1
                totals[FETCH_FAILED] += 1

    # -- error codes ----------------------------------------------------------------------------------
    def _plan(self, obj: Any) -> tuple[bool, tuple[str, ...]]:
        cls = type(obj)
        plan = self._plans.get(cls)
        if plan is None:
            slots = getattr(cls, "__slots__", ())
            # the array fields (a list, or None for a null array, on the first instance seen)
            lists = tuple(s for s in slots if s not in _SKIP and s != "error_code"
                          and (type(getattr(obj, s, 0)) is list or getattr(obj, s, 0) is None))
            plan = self._plans[cls] = ("error_code" in slots, lists)
        return plan

    def _count_errors(self, key: int, response: Any) -> None:
        errors = self.errors
        stack = [response]
        budget = WALK_LIMIT
        while stack and budget > 0:
            obj = stack.pop()
            budget -= 1
            has_error, fields = self._plan(obj)
            if has_error:
                ek = (key, obj.error_code)
                errors[ek] = errors.get(ek, 0) + 1
            for name in fields:
                value = getattr(obj, name)
                if type(value) is list and value and hasattr(value[0], "__slots__"):
                    stack.extend(value)


def error_name(code: int) -> str:
    return _ERROR_NAMES.get(code, str(code))
