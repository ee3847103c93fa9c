"""FaultPlan: one broker's faults on command — injected errors, latency, dropped connections, a pause.

Each broker owns one plan (``state.faults``). The connection's dispatch checks ``plan.active`` (a plain
attribute, False while no rule is set and the broker is not paused) before every request; only when it is
True does the request go through :meth:`FaultPlan.intercept`. All methods run on the broker's trio thread
(``kafkalite.Broker.faults`` and the HTTP control API call them there).

What a rule does to a request, in this order:

1. **pause** (:meth:`pause`): the request has been read; it waits, unanswered, until :meth:`resume`. A
   response a handler finishes while paused (a long poll) waits too. This is what a hung Kafka broker looks
   like (a stop-the-world GC, a SIGSTOP, a stuck disk): the kernel still accepts connections and buffers
   requests, nothing comes back, the client's ``request.timeout.ms`` expires and it closes the connection
   and retries elsewhere or later. On resume every held request is carried out and answered, as a broker
   that wakes up works through what it has read; answers to clients that gave up go nowhere (their
   connection is closed), and an idempotent producer's retry of a held Produce is caught as a duplicate.
2. **drop** (:meth:`drop_connections` with an API): the connection that sends that API is closed without an
   answer (the client sees a disconnect mid-request). Without an API, every open connection is closed now.
3. **latency** (:meth:`latency`): the request waits ``ms`` before it is handled (per API, or for every API
   of the broker; an API's own rule wins over the broker-wide one). Only this connection waits: others go on,
   and since a Kafka connection answers in request order, so does this one (its next request is not read
   meanwhile, as Kafka mutes a channel with a request in flight).
4. **error** (:meth:`inject`): the request is answered with the error code (see
   :mod:`kafkalite.faults.inject` for where the code goes and the ``answer``/``through`` modes). When several
   error rules match a request, the oldest fires.

A rule fires for its next ``count`` matching requests (None: until cleared), then expires. Every rule set,
fired, expired and cleared is one INFO line on the ``kafkalite.faults`` logger and a count in
:attr:`FaultPlan.counters` (plain ints, for the metrics package).
"""
from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.errors import ConnectionClosed
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import REGISTRY

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.faults")

MODES = ("answer", "through")
_rule_ids = itertools.count(1)


class FaultError(ValueError):
    """A fault request that makes no sense (unknown API or error name, bad count); the message says why."""


def api_key_of(api: int | str) -> int:
    """A Kafka API by key (0, "0") or name ("Produce", "produce", "OffsetCommit"); FaultError if unknown."""
    if isinstance(api, bool):
        raise FaultError(f"unknown API {api!r}")
    if isinstance(api, int) or (isinstance(api, str) and api.strip().isdigit()):
        key = int(api)
        if key in REGISTRY:
            return key
        raise FaultError(f"unknown API key {key}")
    wanted = str(api).strip().replace("_", "").replace("-", "").lower()
    for key, info in REGISTRY.items():
        if info.name.lower() == wanted:
            return key
    raise FaultError(f"unknown API {api!r} (use Kafka's name, e.g. Produce, or its key)")


def api_name(key: int | None) -> str:
    if key is None:
        return "every API"
    info = REGISTRY.get(key)
    return info.name if info is not None else str(key)


def error_code_of(error: int | str) -> int:
    """A Kafka error by name (NOT_LEADER_OR_FOLLOWER, case-insensitive) or code (6, "6", -1)."""
    if isinstance(error, bool):
        raise FaultError(f"unknown error {error!r}")
    text = str(error).strip()
    if isinstance(error, int) or text.lstrip("-").isdigit():
        try:
            return int(ErrorCode(int(text)))
        except ValueError:
            raise FaultError(f"unknown error code {text}") from None
    try:
        return int(ErrorCode[text.upper()])
    except KeyError:
        raise FaultError(f"unknown error {error!r} (use Kafka's name, e.g. NOT_LEADER_OR_FOLLOWER, "
                         "or its code)") from None


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _partitions(partitions: Iterable[Any] | None) -> frozenset[tuple[str, int]] | None:
    if partitions is None:
        return None
    out = set()
    for item in partitions:
        if isinstance(item, str):            # "topic:0" or "topic-0" as the CLI writes them
            topic, sep, part = item.rpartition(":")
            if not sep:
                topic, sep, part = item.rpartition("-")
            if not sep or not part.isdigit() or not topic:
                raise FaultError(f"partition {item!r}: expected TOPIC:PARTITION")
            out.add((topic, int(part)))
        elif isinstance(item, dict):
            out.add((str(item["topic"]), int(item["partition"])))
        else:
            topic, part = item
            out.add((str(topic), int(part)))
    if not out:
        raise FaultError("partitions is empty (leave it out to match every partition)")
    return frozenset(out)


@dataclass(slots=True, eq=False)
class Rule:
    kind: str                       # "error" | "latency" | "drop"
    api_key: int | None             # None: every API
    count: int | None               # None: until cleared
    error: int = 0
    partitions: frozenset[tuple[str, int]] | None = None
    mode: str = "answer"
    latency_ms: int = 0
    id: int = field(default_factory=lambda: next(_rule_ids))
    fired: int = 0

    @property
    def remaining(self) -> int | None:
        return None if self.count is None else self.count - self.fired

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "api": api_name(self.api_key) if self.api_key
                               is not None else None, "count": self.count, "fired": self.fired,
                               "remaining": self.remaining}
        if self.kind == "error":
            out.update(error=error_name(self.error), error_code=self.error, mode=self.mode,
                       partitions=None if self.partitions is None else
                       [{"topic": t, "partition": p} for t, p in sorted(self.partitions)])
        elif self.kind == "latency":
            out["ms"] = self.latency_ms
        return out

    def __str__(self) -> str:
        n = "until cleared" if self.count is None else f"x{self.count}"
        if self.kind == "error":
            where = "" if self.partitions is None else " on " + ", ".join(f"{t}-{p}" for t, p in
                                                                       sorted(self.partitions))
            return f"#{self.id} error {error_name(self.error)} on {api_name(self.api_key)}{where} {n} ({self.mode})"
        if self.kind == "latency":
            return f"#{self.id} latency {self.latency_ms} ms on {api_name(self.api_key)} {n}"
        return f"#{self.id} drop the connection sending {api_name(self.api_key)} {n}"


class FaultPlan:
    """One broker's faults. ``state`` is the broker's state (node id, open connections, group coordinator,
    topic ids); read lazily, so the plan can be made before the broker binds."""

    def __init__(self, state: BrokerState | None = None, node_id: int | None = None) -> None:
        self.state = state
        self.node_id = node_id if node_id is not None else getattr(state, "node_id", 0)
        self.rules: list[Rule] = []
        self.paused: trio.Event | None = None     # set: not paused
        self.active = False
        self.counters: dict[str, int] = {"rules_set": 0, "fired": 0, "expired": 0, "cleared": 0,
                                         "errors_injected": 0, "requests_delayed": 0,
                                         "connections_dropped": 0, "requests_paused": 0, "pauses": 0}

    def _update(self) -> None:
        self.active = bool(self.rules) or self.paused is not None

    def _add(self, rule: Rule) -> Rule:
        if rule.count is not None and rule.count < 1:
            raise FaultError(f"count must be at least 1 (got {rule.count}); leave it out for 'until cleared'")
        self.rules.append(rule)
        self.counters["rules_set"] += 1
        self._update()
        log.info("fault set on broker %s: %s", self.node_id, rule)
        return rule

    # -- setting faults (trio thread) ---------------------------------------------------------------------
    def inject(self, api: int | str, error: int | str, count: int | None = 1,
               partitions: Iterable[Any] | None = None, mode: str = "answer") -> Rule:
        """Answer the next ``count`` requests of ``api`` (naming one of ``partitions``, if given) with
        ``error``. ``mode`` "answer": the request (those partitions) is not carried out; "through": it is,
        and its answer is replaced by the error."""
        # inject (and the error responses) only once a fault is set
        from kafkalite.faults.inject import PARTITION_APIS

        key = api_key_of(api)
        code = error_code_of(error)
        if mode not in MODES:
            raise FaultError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
        parts = _partitions(partitions)
        if parts is not None and key not in PARTITION_APIS:
            raise FaultError(f"{api_name(key)} has no partitions to match; partition filters work on "
                             + ", ".join(api_name(k) for k in PARTITION_APIS))
        return self._add(Rule("error", key, count, error=code, partitions=parts, mode=mode))

    def latency(self, ms: int, api: int | str | None = None, count: int | None = None) -> Rule:
        """Delay the next ``count`` requests of ``api`` (None: every API) by ``ms`` before handling."""
        if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
            raise FaultError(f"latency must be a whole number of ms >= 0 (got {ms!r})")
        return self._add(Rule("latency", None if api is None else api_key_of(api), count, latency_ms=ms))

    def drop_connections(self, api: int | str | None = None, count: int | None = 1) -> int | Rule:
        """No API: close every open connection now; returns how many. With an API: close the connection of
        each of the next ``count`` requests of that API, unanswered; returns the rule."""
        if api is not None:
            return self._add(Rule("drop", api_key_of(api), count))
        conns = list(getattr(self.state, "connections", None) or ())
        for conn in conns:
            conn.cancel_scope.cancel()
        self.counters["connections_dropped"] += len(conns)
        log.info("fault on broker %s: dropped %d connection(s)", self.node_id, len(conns))
        return len(conns)

    def pause(self) -> None:
        """Hold every request from now on, unanswered, until :meth:`resume` (see the module docstring)."""
        if self.paused is None:
            self.paused = trio.Event()
            self.counters["pauses"] += 1
            self._update()
            log.info("fault set on broker %s: paused (requests are read, not answered)", self.node_id)

    def resume(self) -> None:
        """Carry out and answer the held requests; new ones are handled at once again."""
        event, self.paused = self.paused, None
        if event is not None:
            event.set()
            self._update()
            log.info("fault cleared on broker %s: resumed", self.node_id)

    def clear(self, rule_id: int | None = None) -> int:
        """Remove one rule (by id) or every rule and resume; returns how many rules were removed."""
        if rule_id is None:
            gone, self.rules = self.rules, []
            self.resume()
        else:
            gone = [r for r in self.rules if r.id == rule_id]
            if not gone:
                raise FaultError(f"no fault rule #{rule_id} on broker {self.node_id}")
            self.rules = [r for r in self.rules if r.id != rule_id]
        for rule in gone:
            log.info("fault cleared on broker %s: %s (fired %d)", self.node_id, rule, rule.fired)
        self.counters["cleared"] += len(gone)
        self._update()
        return len(gone)

    def describe(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "paused": self.paused is not None,
                "rules": [r.describe() for r in self.rules], "counters": dict(self.counters)}

    # -- waiting for a group ----------------------------------------------------------------------------------
    def group_state(self, group: str) -> str:
        """The group's state as DescribeGroups/ListGroups report it ("Dead" when this broker knows no such
        group, as Kafka answers for an unknown group)."""
        for svc in (getattr(self.state, "groups", None), getattr(self.state, "shares", None)):
            if svc is None:
                continue
            listed = svc.list_groups(None, None)
            groups = listed[1] if isinstance(listed, tuple) else listed
            for g in groups:
                if g["group_id"] == group:
                    return str(g["group_state"])
        return "Dead"

    async def wait_for_group_state(self, group: str, state: str,
                                   timeout: float = 30.0) -> str:  # noqa: ASYNC109 (the API takes a timeout)
        """Return once ``group`` is in ``state`` (case-insensitive: Stable, Empty, PreparingRebalance,
        CompletingRebalance, Assigning, Reconciling, Dead); TimeoutError with the last state seen otherwise."""
        wanted = state.lower()
        seen = self.group_state(group)
        with trio.move_on_after(timeout):
            while seen.lower() != wanted:
                await trio.sleep(0.02)
                seen = self.group_state(group)
            return seen
        raise TimeoutError(f"group {group!r} did not reach {state} within {timeout} s (it is {seen})")

    # -- the hook (connection dispatch) -----------------------------------------------------------------------
    def _take(self, rule: Rule, conn: Any) -> None:
        rule.fired += 1
        self.counters["fired"] += 1
        left = rule.remaining
        log.info("fault fired on broker %s: %s for %r%s", self.node_id, rule, conn,
                 "" if left is None else f" ({left} left)")
        if left is not None and left <= 0:
            self.rules.remove(rule)
            self.counters["expired"] += 1
            log.info("fault expired on broker %s: %s", self.node_id, rule)
            self._update()

    def _find(self, kind: str, key: int, parts: list[tuple[str, int]] | None = None) -> Rule | None:
        fallback = None
        for rule in self.rules:
            if rule.kind != kind:
                continue
            if rule.api_key is None:
                fallback = fallback or rule
                continue
            if rule.api_key != key:
                continue
            if rule.partitions is not None and (parts is None or rule.partitions.isdisjoint(parts)):
                continue
            return rule
        return fallback

    async def _hold(self) -> None:
        event = self.paused
        if event is not None:
            self.counters["requests_paused"] += 1
            await event.wait()

    async def intercept(self, conn: Any, spec: Any, ctx: Any, body: Any) -> Any:
        """Handle one request under the plan's rules; returns the response (None: nothing to send)."""
        key = ctx.header.api_key
        await self._hold()
        rule = self._find("drop", key)
        if rule is not None:
            self._take(rule, conn)
            self.counters["connections_dropped"] += 1
            raise ConnectionClosed(f"fault: dropped while sending {api_name(key)} (rule #{rule.id})")
        rule = self._find("latency", key)
        if rule is not None:
            self._take(rule, conn)
            self.counters["requests_delayed"] += 1
            await trio.sleep(rule.latency_ms / 1000)
        response = await self._errors(conn, spec, ctx, body, key)
        await self._hold()
        return response

    async def _errors(self, conn: Any, spec: Any, ctx: Any, body: Any, key: int) -> Any:
        from kafkalite.faults import inject  # inject (and the error responses) only once a fault is set

        scoped = key in inject.PARTITION_APIS
        topics_by_id = getattr(self.state, "topics_by_id", None)
        parts = inject.request_partitions(key, body, topics_by_id) if scoped else None
        rule = None
        for r in self.rules:
            if r.kind == "error" and r.api_key == key and (
                    r.partitions is None or (parts is not None and not r.partitions.isdisjoint(parts))):
                rule = r
                break
        if rule is None:
            return await conn.call_handler(spec, ctx, body)
        self._take(rule, conn)
        self.counters["errors_injected"] += 1
        response_class = _response_class(key)
        acks0 = key == 0 and getattr(body, "acks", None) == 0
        if not scoped:
            if rule.mode == "through":
                await conn.call_handler(spec, ctx, body)
            return inject.whole_error(response_class, body, rule.error)
        rest, matched = inject.split(key, body, rule.partitions, topics_by_id)
        if rule.mode == "through":
            response = await conn.call_handler(spec, ctx, body)
        else:
            response = await conn.call_handler(spec, ctx, rest) if rest is not None else None
        if acks0:   # no response to carry the error: Kafka closes the connection so the client looks again
            raise ConnectionClosed(f"fault: {error_name(rule.error)} on an acks=0 Produce (rule #{rule.id})")
        errors = inject.partition_errors(key, response_class, matched, rule.error)
        return inject.merge(key, response, errors)


def _response_class(key: int) -> type:
    return REGISTRY[key].response_class
