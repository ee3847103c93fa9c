"""Event-loop stall probe: how long the trio thread went without running its tasks.

Every task on the broker shares one thread, so any request that computes for 200 ms without an ``await``
delays every other client's answer by 200 ms. The probe is a background task that asks to sleep ``interval``
seconds and measures by how much it woke late (the overshoot: the time the loop was busy elsewhere). It
keeps the longest stall and a small histogram on the broker state (``state.loopwatch``), and logs a WARNING
when a stall exceeds ``kafkalite.loop.stall.warn.ms`` (default 100; 0 turns the warning off), at most one
per ``WARN_EVERY_S`` (the suppressed ones are counted in the next warning).

What held the loop is known cheaply: the connection calls :meth:`LoopWatch.note_request` as it starts each
request (a clock read and a store into a ring of the last eight). A stall's report names the last request
that started after the probe went to sleep and before the stall began: the one whose handler held the loop
(requests answered in the same scheduler batch as the probe's wake-up start after the stall, so they are not
blamed).

That ring only sees requests *starting* during a stall. A request that awaits first (a worker thread, a
slice pause) and then holds the loop in its continuation -- a gzip bomb's Produce resuming after its
validation thread -- started long before, so the ring blamed nobody ("a background task"). A sampler thread
catches those: it looks at the loop's heartbeat every ``interval`` and, once the loop has been silent for a
quarter of the warning threshold, takes one sample of the loop thread's stack (``sys._current_frames``, as
a sampling profiler does): the request is the ``header`` of the connection's request frame on that stack
(``Connection._handle_frame``), and the innermost frame of our own code says where it was. A sample taken
during the stall names it; the ring is the fallback (a stall shorter than the sampler's period, or a stack
with no request frame on it).

The clock is ``time.perf_counter`` (wall time), not trio's clock, so a test's ``MockClock`` does not fool it.

Wall time alone cannot tell a stall the broker caused from one the machine caused: on a shared machine (two
cores, load average 9) a process gets a fraction of a core, and 20 ms of the loop's work took 100 ms and more of
wall time. So the probe also reads the loop thread's CPU time (``time.thread_time``) and the process's
(``time.process_time``) at each wake-up: ``max_busy_cpu_ms`` is the most CPU the loop thread spent between two
wake-ups (the work that held it, whatever the load), and the longest wall-time stall is reported with the loop
thread's and the process's CPU during it (process CPU well below the wall time: the OS ran other processes;
process CPU near it but loop CPU low: another thread of ours held the GIL).
"""
from __future__ import annotations

import bisect
import logging
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

import trio

from kafkalite_wire.messages import REGISTRY

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

WARN_KEY = "kafkalite.loop.stall.warn.ms"
DEFAULT_WARN_MS = 100
INTERVAL_S = 0.010
WARN_EVERY_S = 10.0
#: histogram bucket upper bounds (ms) of the overshoot; the last bucket holds everything above 1000 ms
BUCKETS_MS = (1, 5, 10, 50, 100, 500, 1000)


class LoopWatch:
    """Stall statistics of one event loop; ``run()`` is the probe task."""

    def __init__(self, warn_ms: float = DEFAULT_WARN_MS, interval: float = INTERVAL_S) -> None:
        self.warn_ms = warn_ms
        self.interval = interval
        self.max_stall_ms = 0.0
        self.max_stall_what: str | None = None
        self.histogram = [0] * (len(BUCKETS_MS) + 1)
        self.samples = 0
        self.max_busy_cpu_ms = 0.0         # the most loop-thread CPU time between two wake-ups
        self.max_stall_cpu: tuple[float, float] = (0.0, 0.0)   # (loop thread, process) CPU ms of max_stall_ms
        self._ring: list[tuple[float, int, int, int]] = [(0.0, 0, 0, 0)] * 8   # (start, key, version, conn)
        self._n = 0
        self._last_warn = -WARN_EVERY_S
        self._suppressed = 0
        self._beat = 0.0              # when the probe last ran (the loop's heartbeat), for the sampler
        self._sample: tuple[float, tuple[int, int, int] | None, str | None] | None = None   # (beat, what, where)

    def note_request(self, api_key: int, api_version: int, conn_id: int) -> None:
        """Called by a connection as it starts handling a request (cheap: a clock read and one store)."""
        self._ring[self._n & 7] = (time.perf_counter(), api_key, api_version, conn_id)
        self._n += 1

    def culprit(self, since: float, until: float) -> tuple[int, int, int] | None:
        """The last request noted in [since, until]."""
        best = max((e for e in self._ring if since <= e[0] <= until), default=None, key=lambda e: e[0])
        return None if best is None else (best[1], best[2], best[3])

    def reset(self) -> None:
        """Forget the statistics (a benchmark phase starts)."""
        self.max_stall_ms = 0.0
        self.max_stall_what = None
        self.histogram = [0] * (len(BUCKETS_MS) + 1)
        self.samples = 0
        self.max_busy_cpu_ms = 0.0
        self.max_stall_cpu = (0.0, 0.0)

    def snapshot(self) -> dict[str, Any]:
        labels = [f"<={b}ms" for b in BUCKETS_MS] + [f">{BUCKETS_MS[-1]}ms"]
        return {"max_stall_ms": round(self.max_stall_ms, 1), "max_stall_what": self.max_stall_what,
                "max_stall_loop_cpu_ms": round(self.max_stall_cpu[0], 1),
                "max_stall_process_cpu_ms": round(self.max_stall_cpu[1], 1),
                "max_busy_cpu_ms": round(self.max_busy_cpu_ms, 1), "samples": self.samples, "histogram": dict(zip(labels, self.histogram, strict=True))}

    def record(self, stall_ms: float, what: tuple[int, int, int] | None, now: float,
               where: str | None = None, cpu: tuple[float, float] | None = None) -> None:
        """Account one overshoot of ``stall_ms``; ``what`` is the request that held the loop, if any, and
        ``where`` the project's innermost frame the sampler saw during it; ``cpu`` the (loop thread, process) CPU
        milliseconds spent meanwhile."""
        self.samples += 1
        self.histogram[bisect.bisect_left(BUCKETS_MS, stall_ms)] += 1
        desc = describe(what)
        if where is not None:
            desc = f"{desc or 'no request (a background task)'} at {where}"
        if cpu is not None and cpu[0] > self.max_busy_cpu_ms:
            self.max_busy_cpu_ms = cpu[0]
        if stall_ms > self.max_stall_ms:
            self.max_stall_ms = stall_ms
            self.max_stall_what = desc
            self.max_stall_cpu = cpu or (0.0, 0.0)
        if self.warn_ms > 0 and stall_ms > self.warn_ms:
            if now - self._last_warn >= WARN_EVERY_S:
                more = f" ({self._suppressed} more since the last warning)" if self._suppressed else ""
                log.warning("event loop stalled %.0f ms (%s = %.0f ms); running: %s%s", stall_ms, WARN_KEY,
                            self.warn_ms, desc or "no request (a background task)", more)
                self._last_warn = now
                self._suppressed = 0
            else:
                self._suppressed += 1

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        interval = self.interval
        clock = time.perf_counter
        stop = threading.Event()
        self._beat = clock()
        sampler = threading.Thread(target=self._sampler, args=(threading.get_ident(), stop),
                                   name="kafkalite-loopwatch", daemon=True)
        sampler.start()
        task_status.started()
        try:
            while True:
                c0, p0 = thread_cpu(), time.process_time()
                t0 = self._beat = clock()
                await trio.sleep(interval)
                now = clock()
                cpu = ((thread_cpu() - c0) * 1000, (time.process_time() - p0) * 1000)
                stall = max(now - t0 - interval, 0.0)
                what = where = None
                if stall * 1000 > self.warn_ms / 4:
                    sample = self._sample
                    if sample is not None and sample[0] == t0:   # sampled during this stall: what held it
                        _beat, what, where = sample
                    if what is None:
                        what = self.culprit(t0, now - stall / 2)
                self.record(stall * 1000, what, now, where, cpu)
        finally:
            stop.set()

    def _sampler(self, loop_thread: int, stop: threading.Event) -> None:
        """Thread: one stack sample of the loop thread per stall that lasts over a quarter of ``warn_ms``."""
        silent = max(self.warn_ms / 4000, 2 * self.interval)
        clock = time.perf_counter
        while not stop.wait(self.interval):
            beat = self._beat
            if clock() - beat < silent or (self._sample is not None and self._sample[0] == beat):
                continue
            frame = sys._current_frames().get(loop_thread)
            if frame is None:
                return
            self._sample = (beat, *_blame(frame))
            del frame


thread_cpu = getattr(time, "thread_time", time.process_time)   # the calling thread's CPU seconds


#: where the project's own files are: this file is <root>/kafkalite/runtime/loopwatch.py
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_OURS = tuple(_ROOT + os.sep + pkg + os.sep for pkg in ("kafkalite", "kafkalite_storage", "kafkalite_wire"))


def _blame(frame: Any) -> tuple[tuple[int, int, int] | None, str | None]:
    """The request being handled on this stack (the ``header`` of a connection's request frame), and the
    innermost frame of the project's code (``file:line function``)."""
    what = None
    where = None
    f = frame
    while f is not None:
        code = f.f_code
        if where is None and code.co_filename.startswith(_OURS):
            where = f"{os.path.basename(code.co_filename)}:{f.f_lineno} {code.co_name}"
        if code.co_name == "_handle_frame":
            loc = f.f_locals
            header, conn = loc.get("header"), loc.get("self")
            if header is not None and conn is not None:
                what = (int(header.api_key), int(header.api_version), int(getattr(conn, "conn_id", 0)))
                break
        f = f.f_back
    return what, where


def describe(what: tuple[int, int, int] | None) -> str | None:
    if what is None:
        return None
    key, version, conn_id = what
    info = REGISTRY.get(key)
    name = info.name if info is not None else f"api key {key}"
    return f"{name} v{version} on connection #{conn_id}"


#: the probes of the brokers running in this process, by bound port (tests and the fuzzer read them)
_BY_PORT: weakref.WeakValueDictionary[int, LoopWatch] = weakref.WeakValueDictionary()


def for_port(port: int) -> LoopWatch | None:
    """The probe of the in-process broker listening on ``port`` (e.g. an embedded ``kafkalite.Broker``)."""
    return _BY_PORT.get(port)


def start(state: BrokerState, nursery: trio.Nursery) -> LoopWatch:
    """Create the probe for ``state`` (as ``state.loopwatch``) and start it in ``nursery``."""
    warn_ms = state.config.get_int(WARN_KEY, DEFAULT_WARN_MS)
    watch = LoopWatch(warn_ms=warn_ms)
    state.loopwatch = watch
    for lst in state.listeners:
        _BY_PORT[lst.port] = watch
    nursery.start_soon(watch.run)
    return watch
