"""The protocol fuzzer's session: send mutated frames to a broker over real sockets and classify each outcome.

Every frame goes out on a fresh connection (so an outcome belongs to one frame) and ends as one of:

- ``answered``: a response with the frame's correlation id that decodes at the frame's (api, version); the
  fuzzer decodes each frame itself first (same codec), so it knows whether an answer is due at all;
- ``closed``: the broker closed the connection and logged why in one line (WARNING/INFO, no traceback);
- ``parked``: a long poll (Fetch, JoinGroup, SyncGroup) still waiting after a short while: allowed;
- ``abandoned``: a half-sent frame whose client went away (only the health checks judge it);
- ``skipped``: a known problem owned by another change (see :data:`KNOWN`), not sent;
- BAD: ``traceback`` (a handler or task failed: logged with a traceback or at ERROR), ``unlogged_close``,
  ``hang`` (no answer and no close within the timeout, while the broker answers others), ``bad_response``
  (undecodable, wrong correlation id, or an answer to a frame that must be refused), ``decoder`` (the codec
  raised something other than DecodeError), ``stall`` (the broker's event loop, seen by
  ``kafkalite.runtime.loopwatch``, stalled more than ``stall_ms`` on this frame three times out of three), and for
  the run: ``dead`` (the broker stopped), ``unhealthy`` (a fresh connection got no ApiVersions or Metadata
  answer), ``lost`` (acknowledged canary records no longer readable), ``rss`` (the process grew more than
  ``rss_bound_mb``).

After every batch of frames the health checks run: ApiVersions and Metadata on a fresh connection and a read
of the canary topic, produced with acks=-1 before fuzzing and never named by the generator.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import os
import random
import re
import socket
import struct
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalite.tests.fuzz import mutate
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.testing import encode_batch
from kafkalite_wire import api
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import (
    REGISTRY,
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)

BAD_KINDS = ("traceback", "unlogged_close", "hang", "bad_response", "decoder", "stall")
OUTCOMES = ("answered", "closed", "parked", "abandoned", "skipped", *BAD_KINDS)
LONG_POLLS = frozenset({1, 11, 14})     # Fetch, JoinGroup, SyncGroup may legitimately wait
CANARY = "fuzz-canary"
FUZZ_TOPICS = ("fuzz-a", "fuzz-b")


def _creates_many_partitions(hdr: Any, body: Any) -> bool:
    """A valid CreateTopics/CreatePartitions may make up to 10,000 partitions (beyond that the broker answers
    POLICY_VIOLATION at once, as Kafka does): each is a directory and files, ~1 ms apiece here, so such frames
    would spend the fuzzer's budget on the filesystem. Requests over the bound are sent; large creations are
    measured by bench/bench_partitions.py and kafkalite/tests/e2e/test_fd_limit.py instead."""
    if hdr.api_key == 19:
        total = sum((t.num_partitions if t.num_partitions > 0 else 1) + len(t.assignments or ())
                    for t in body.topics)
        return 64 < total <= 10_000
    if hdr.api_key == 37:
        total = sum(max(t.count, 0) for t in body.topics)
        return 64 < total <= 10_000
    return False


#: known problems outside the fuzzer's area: name -> (predicate on the decoded (header, body), send). Frames
#: that match count as ``skipped`` under that name: not sent when ``send`` is False (the problem stalls or
#: breaks the broker), else sent and a BAD outcome is forgiven (the health checks still judge them).
#: Remove an entry once its fix is merged.
KNOWN: dict[str, tuple[Callable[[Any, Any], bool], bool]] = {
    "BUDGET_MANY_PARTITIONS": (_creates_many_partitions, False),
}


class LogCollector(logging.Handler):
    """Keeps the broker's log records (from ``kafkalite.*``) so each outcome can be checked against them: those
    since the current frame went out (:meth:`Fuzzer._exchange` clears the list). Kept for the whole run, they
    were the run's RSS growth (~600 MB by frame 29,500 of seed 7): a record of a closed connection holds its
    exception, whose traceback holds the handler's frames and their locals -- memoryviews of multi-MB request
    frames among them (at frame 24,000: 11,066 records, 88,556 tracebacks, 12,333 memoryviews alive)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Stats:
    by_api: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    by_kind: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    skipped: Counter[str] = field(default_factory=Counter)
    close_reasons: Counter[tuple[str, str]] = field(default_factory=Counter)   # (kind, log line) of closes
    findings: list[dict[str, Any]] = field(default_factory=list)
    run_bad: list[str] = field(default_factory=list)
    max_stall_ms: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    frames: int = 0

    def bad(self, timing: bool = True) -> int:
        kinds = BAD_KINDS if timing else tuple(k for k in BAD_KINDS if k != "stall")
        return sum(c[k] for c in self.by_api.values() for k in kinds) + len(self.run_bad)

    def table(self) -> str:
        cols = ("sent", "answered", "closed", "parked", "abandoned", "skipped", "bad")
        lines = [f"{'api':<28}" + "".join(f"{c:>10}" for c in cols) + f"{'stall ms':>10}"]
        total: Counter[str] = Counter()
        for key in sorted(self.by_api):
            c = self.by_api[key]
            row = {**c, "bad": sum(c[k] for k in BAD_KINDS)}
            total.update(row)
            lines.append(f"{REGISTRY[key].name + f' ({key})':<28}" + "".join(f"{row.get(k, 0):>10}" for k in cols)
                         + f"{self.max_stall_ms[key]:>10.0f}")
        lines.append(f"{'total':<28}" + "".join(f"{total.get(k, 0):>10}" for k in cols)
                     + f"{max(self.max_stall_ms.values(), default=0.0):>10.0f}")
        if self.skipped:
            lines.append("skipped (known, owned elsewhere): " + ", ".join(f"{k}={v}" for k, v in self.skipped.items()))
        for f in self.findings[:40]:
            lines.append(f"BAD {f['outcome']}: {f['api']} v{f['version']} kind={f['kind']} seed={f['seed']} "
                         f"frame#{f['index']}: {f['detail']}")
        lines += [f"BAD run: {r}" for r in self.run_bad]
        return "\n".join(lines)


class Fuzzer:
    def __init__(self, host: str, port: int, *, seed: int = 1, timeout: float = 5.0, batch: int = 250,
                 stall_ms: float | None = 100.0, rss_bound_mb: float = 512.0, watch: Any = None,
                 alive: Callable[[], bool] = lambda: True, max_frame: int = 100 * 1024 * 1024,
                 max_body: int = 16 * 1024 * 1024) -> None:
        self.host, self.port = host, port
        self.seed = seed
        self.timeout = timeout
        self.batch = batch
        self.stall_ms = stall_ms
        self.rss_bound = rss_bound_mb * 1024 * 1024
        self.watch = watch
        self._thread = threading.get_ident()
        self._gc_started: float | None = None
        self.own_gc_ms = 0.0   # see _own_gc
        self.alive = alive
        self.max_frame = max_frame
        self.max_body = max_body
        self.stats = Stats()
        self.logs = LogCollector()
        self.canary: list[bytes] = []
        self.target = mutate.Target(topics={})
        self.advertised: dict[int, tuple[int, int]] = {}

    # -- plumbing ---------------------------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        s = socket.create_connection((self.host, self.port), timeout=self.timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    @staticmethod
    def _recv_frame(s: socket.socket, buf: bytearray) -> bytes | None:
        while True:
            if len(buf) >= 4:
                (n,) = struct.unpack(">i", buf[:4])
                if len(buf) >= 4 + n:
                    out = bytes(buf[4:4 + n])
                    del buf[:4 + n]
                    return out
            data = s.recv(1 << 16)
            if not data:
                return None
            buf += data

    def request(self, body: Any, version: int) -> Any:
        key = type(body).API_KEY
        with self._connect() as s:
            s.sendall(api.encode_request(RequestHeader(key, version, 7, "fuzz-health"), body))
            frame = self._recv_frame(s, bytearray())
        if frame is None:
            raise ConnectionError(f"{REGISTRY[key].name} v{version}: connection closed")
        return api.parse_response(key, version, frame)[1]

    # -- setup and health -------------------------------------------------------------------------------
    def _own_gc(self, phase: str, info: dict[str, int]) -> None:
        """The fuzzer shares its process, so its GIL, with the embedded broker: a full collection in the fuzzer's
        thread (after decoding a frame or an answer of a million entries: 70-140 ms, fuzz seed 7 frames 58286,
        107748) stalls the broker's loop as much as the broker's own work would. Remember the longest."""
        if info.get("generation") != 2 or threading.get_ident() != self._thread:
            return
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started is not None:
            self.own_gc_ms = max(self.own_gc_ms, (time.perf_counter() - self._gc_started) * 1000)
            self._gc_started = None

    def _broker_stall_ms(self) -> float:
        """The loop's longest stall on this frame, less the fuzzer's own longest full collection meanwhile."""
        assert self.watch is not None
        return max(self.watch.max_stall_ms - self.own_gc_ms, 0.0)

    def setup(self) -> None:
        self._thread = threading.get_ident()
        self.own_gc_ms = 0.0
        gc.callbacks.append(self._own_gc)
        logging.getLogger("kafkalite").addHandler(self.logs)
        self._old_level = logging.getLogger("kafkalite").level
        logging.getLogger("kafkalite").setLevel(logging.INFO)
        resp = self.request(ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"), 3)
        self.advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        # the canary's records carry encode_batch's 2023 timestamp: time retention is off for it, or retention's
        # first pass (log.initial.task.delay.ms, 30 s after start, as Kafka) would delete them
        keep = [CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="-1")]
        topics = [CreateTopicsRequest.CreatableTopic(name=n, num_partitions=2, replication_factor=1,
                                                     configs=keep if n == CANARY else [])
                  for n in (*FUZZ_TOPICS, CANARY)]
        self.request(CreateTopicsRequest(topics=topics, timeout_ms=5000), 7)
        md = self.request(MetadataRequest(topics=None), 12)
        self.target = mutate.Target(topics={t.name: t.topic_id for t in md.topics if t.name in FUZZ_TOPICS},
                                    max_frame=self.max_frame, max_body=self.max_body)
        rng = random.Random(self.seed ^ 0xC0FFEE)
        for i in range(20):
            payloads = [f"canary-{i}-{j}-".encode() + rng.randbytes(8) for j in range(5)]
            req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
                name=CANARY, partition_data=[ProduceRequest.PartitionProduceData(
                    index=i % 2, records=encode_batch(payloads))])])
            pr = self.request(req, 9).responses[0].partition_responses[0]
            if pr.error_code == 0:
                self.canary += payloads
        self._rss0 = _rss()

    def teardown(self) -> None:
        with contextlib.suppress(ValueError):   # setup may not have got as far
            gc.callbacks.remove(self._own_gc)
        logging.getLogger("kafkalite").removeHandler(self.logs)
        logging.getLogger("kafkalite").setLevel(self._old_level)

    def read_canary(self) -> list[bytes]:
        got: list[bytes] = []
        for p in (0, 1):
            offset = 0
            while True:
                req = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, topics=[
                    FetchRequest.FetchTopic(topic=CANARY, partitions=[FetchRequest.FetchPartition(
                        partition=p, fetch_offset=offset, partition_max_bytes=1 << 20)])])
                pd = self.request(req, 11).responses[0].partitions[0]
                data = bytes(pd.records or b"")
                if pd.error_code or not data:
                    break
                for pos, hdr in iter_batches(data):
                    offset = hdr.next_offset
                    got += [bytes(r.value or b"") for r in batch_records(data[pos:pos + hdr.size])]
                if offset >= pd.high_watermark:
                    break
        return got

    def health(self) -> None:
        if not self.alive():
            self.stats.run_bad.append(f"dead: the broker stopped after frame #{self.stats.frames}")
            raise RuntimeError("broker died")
        try:
            self.request(ApiVersionsRequest(), 3)
            self.request(MetadataRequest(topics=None), 12)
            got = self.read_canary()
        except (OSError, AssertionError) as exc:
            self.stats.run_bad.append(f"unhealthy after frame #{self.stats.frames}: {exc!r}")
            raise RuntimeError("broker unhealthy") from exc
        missing = [p for p in self.canary if p not in set(got)]
        if missing:
            self.stats.run_bad.append(f"lost: {len(missing)} acknowledged canary records after frame "
                                      f"#{self.stats.frames}")
        grown = _rss() - self._rss0
        if grown > self.rss_bound and not any(r.startswith("rss") for r in self.stats.run_bad):
            self.stats.run_bad.append(f"rss: grew {grown / 2**20:.0f} MB by frame #{self.stats.frames}")
        self._prune_topics()

    def _prune_topics(self) -> None:
        """Delete the topics the fuzz created (Metadata auto-creation, CreateTopics) once there are many,
        so a long run does not accumulate thousands of partitions."""
        md = self.request(MetadataRequest(topics=None), 12)
        extra = [t.name for t in md.topics if t.name not in (*FUZZ_TOPICS, CANARY) and not t.is_internal]
        if len(extra) > 100:
            self.request(DeleteTopicsRequest(topic_names=extra, timeout_ms=30000), 5)

    # -- fuzzing ----------------------------------------------------------------------------------------
    def pairs(self) -> list[tuple[int, int]]:
        return [(k, v) for k, (lo, hi) in sorted(self.advertised.items()) for v in range(lo, hi + 1)]

    def frames(self) -> Iterator[tuple[int, mutate.Frame | None]]:
        """(index, frame) for ever, deterministic for the seed; every (api, version) once per round."""
        rng = random.Random(self.seed)
        pairs = self.pairs()
        i = 0
        while True:
            if i % len(pairs) == 0:
                rng.shuffle(pairs)
            key, version = pairs[i % len(pairs)]
            frame = None
            for _ in range(8):
                frame = mutate.build(key, version, self.advertised, rng, self.target)
                if frame is not None:
                    break
            i += 1
            yield i, frame

    def run(self, frames: int | None = None, duration: float | None = None) -> Stats:
        deadline = time.monotonic() + duration if duration else float("inf")
        try:
            for i, frame in self.frames():
                if (frames is not None and i > frames) or time.monotonic() >= deadline:
                    break
                if frame is not None:
                    self.one(frame, i)
                if i % self.batch == 0:
                    self.health()
            self.health()
        finally:
            self.teardown()
        return self.stats

    def replay(self, index: int) -> tuple[mutate.Frame | None, str]:
        """Send only frame ``index`` of this seed; returns it and its outcome."""
        try:
            for i, frame in self.frames():
                if i == index:
                    return frame, (self.one(frame, i) if frame is not None else "not encodable")
        finally:
            self.teardown()
        raise AssertionError("unreachable")

    def one(self, frame: mutate.Frame, index: int) -> str:
        self.stats.frames += 1
        try:
            expected = mutate.parse(frame)
        except Exception as exc:
            return self._record(frame, index, "decoder", repr(exc))
        known = None
        if expected is not None and expected[1] is not None:
            known = next((name for name, (pred, _) in KNOWN.items() if pred(*expected)), None)
            if known is not None and not KNOWN[known][1]:
                self.stats.skipped[known] += 1
                return self._record(frame, index, "skipped", known)
        outcome, detail = self._exchange(frame, expected)
        if known is not None:
            self.stats.skipped[known] += 1
            if outcome in BAD_KINDS:
                return self._record(frame, index, "skipped", known, sent=True)
        if (outcome not in BAD_KINDS and self.watch is not None and self.stall_ms
                and self._broker_stall_ms() > self.stall_ms):
            stalls = [self._broker_stall_ms()]
            for _ in range(2):   # a stall counts only if the frame reproduces it (the machine is shared)
                self.watch.reset()
                self.own_gc_ms = 0.0
                self._exchange(frame, expected)
                stalls.append(self._broker_stall_ms())
            if min(stalls) > self.stall_ms:
                outcome, detail = "stall", f"{min(stalls):.0f} ms ({self.watch.max_stall_what})"
        if self.watch is not None:
            st = self.stats.max_stall_ms
            st[frame.api_key] = max(st[frame.api_key], self._broker_stall_ms())
            self.watch.reset()
        self.own_gc_ms = 0.0
        return self._record(frame, index, outcome, detail)

    def _record(self, frame: mutate.Frame, index: int, outcome: str, detail: str, sent: bool | None = None) -> str:
        self.stats.by_api[frame.api_key][outcome] += 1
        if outcome != "skipped" if sent is None else sent:
            self.stats.by_api[frame.api_key]["sent"] += 1
        self.stats.by_kind[frame.kind][outcome] += 1
        if outcome == "closed":
            self.stats.close_reasons[frame.kind, re.sub(r"-?\d+", "N", detail)[:100]] += 1
        if outcome in BAD_KINDS:
            self.stats.findings.append({"outcome": outcome, "api": REGISTRY[frame.api_key].name,
                                        "version": frame.version, "kind": frame.kind, "seed": self.seed,
                                        "index": index, "detail": detail[:300], "hex": frame.data[:2048].hex()})
        return outcome

    def _exchange(self, frame: mutate.Frame, expected: tuple[Any, Any] | None) -> tuple[str, str]:
        self.logs.records.clear()   # earlier frames' records are never looked at again
        mark = 0
        s = self._connect()
        buf = bytearray()
        try:
            # the broker may close before reading everything (a too-large size): judged below
            with contextlib.suppress(OSError):
                s.sendall(frame.data)
            if frame.half_sent:
                return "abandoned", ""
            hdr, body = expected if expected is not None else (None, None)
            silent = hdr is not None and hdr.api_key == 0 and getattr(body, "acks", 1) == 0
            if silent:   # acks=0 gets no response: a pipelined ApiVersions must be answered first instead
                with contextlib.suppress(OSError):
                    s.sendall(api.encode_request(RequestHeader(18, 0, 424242, "fuzz"), ApiVersionsRequest()))
            # a request of a million entries takes seconds to decode, handle and encode: allow for its size
            timeout = self.timeout + 5 * len(frame.data) / 1e6
            s.settimeout(0.5 + 5 * len(frame.data) / 1e6 if hdr is not None and hdr.api_key in LONG_POLLS else timeout)
            try:
                resp = self._recv_frame(s, buf)
            except TimeoutError:
                if hdr is not None and hdr.api_key in LONG_POLLS:
                    return "parked", ""
                return "hang", f"no answer or close in {timeout:.0f} s ({len(frame.data)} bytes)"
            except OSError:
                resp = None
            if resp is None:
                return self._closed(mark)
            if self._errors_since(mark):
                return self._closed(mark)
            return self._check_answer(resp, hdr, silent)
        finally:
            s.close()

    def _errors_since(self, mark: int) -> list[logging.LogRecord]:
        return [r for r in self.logs.records[mark:] if r.exc_info or r.levelno >= logging.ERROR]

    def _closed(self, mark: int) -> tuple[str, str]:
        deadline = time.monotonic() + 1.0
        while True:
            errors = self._errors_since(mark)
            if errors:
                r = errors[0]
                exc = r.exc_info[1] if r.exc_info else None
                return "traceback", f"{r.getMessage()} -> {exc!r}"
            closes = [r.getMessage() for r in self.logs.records[mark:] if "clos" in r.getMessage()]
            if closes:
                return "closed", closes[0].split(": ", 1)[-1]
            if time.monotonic() > deadline:
                return "unlogged_close", "connection closed without a log line"
            time.sleep(0.005)

    @staticmethod
    def _check_answer(resp: bytes, hdr: Any, silent: bool) -> tuple[str, str]:
        if hdr is None:
            (cid,) = struct.unpack(">i", resp[:4]) if len(resp) >= 4 else (None,)
            return "bad_response", f"answered (cid {cid}) a frame that must be refused"
        key, version, cid = (18, 0, 424242) if silent else (hdr.api_key, hdr.api_version, hdr.correlation_id)
        try:
            got_cid, _body = api.parse_response(key, version, resp)
        except Exception as exc:
            if key == 18:   # an unsupported ApiVersions version is answered at v0 (KIP-511)
                with contextlib.suppress(Exception):
                    got_cid, _body = api.parse_response(18, 0, resp)
                    if got_cid == cid:
                        return "answered", ""
            return "bad_response", f"response does not decode: {exc!r}"
        if got_cid != cid:
            return "bad_response", f"correlation id {got_cid} != {cid}"
        return "answered", ""


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
