"""Kafka's quota measurements: a sampled Rate and the TokenBucket of controller mutations.

``Rate`` is Kafka's ``Rate`` over a ``SampledStat`` (org.apache.kafka.common.metrics.stats): ``samples``
windows of ``window_ms`` each; a record goes into the current window, and a new window starts (replacing the
oldest) once the current one is ``window_ms`` old. The rate is the sum of the windows that are not obsolete
(older than ``samples * window_ms``) divided by the time they span, where the span is at least
``samples - 1`` whole windows: a new client is not measured over a few milliseconds.

A quota violated by a record gives Kafka's throttle time (``QuotaUtils.throttleTime``): ``(rate - bound) /
bound * span``, the time after which the measured rate would be back at the bound.

``TokenBucket`` (Kafka's ControllerMutationQuotaManager, KIP-599): a bucket of ``bound * samples *
window`` tokens refilled at ``bound`` per second; a mutation takes as many tokens as partitions it creates or
deletes and may drive the bucket negative; the throttle time is the time to refill it to zero.
"""
from __future__ import annotations


class Rate:
    __slots__ = ("_current", "_starts", "_values", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(samples, 1)
        self.window_ms = max(window_ms, 1)
        self._starts: list[int] = []
        self._values: list[float] = []
        self._current = -1

    def record(self, value: float, now_ms: int) -> None:
        cur = self._current
        if cur < 0 or now_ms - self._starts[cur] >= self.window_ms:
            if len(self._starts) < self.samples:
                self._starts.append(now_ms)
                self._values.append(0.0)
                cur = len(self._starts) - 1
            else:
                cur = (cur + 1) % self.samples
                self._starts[cur] = now_ms
                self._values[cur] = 0.0
            self._current = cur
        self._values[cur] += value

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for i, start in enumerate(self._starts):
            if now_ms - start >= expire:
                self._starts[i] = now_ms
                self._values[i] = 0.0

    def span_ms(self, now_ms: int) -> int:
        """Kafka's Rate.windowSize: time since the oldest window began, at least samples - 1 windows."""
        self._purge(now_ms)
        oldest = min(self._starts) if self._starts else now_ms
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        span = self.span_ms(now_ms)
        return sum(self._values) * 1000.0 / span

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        """0 while the rate is within ``bound``, else how long until it is back to it."""
        span = self.span_ms(now_ms)
        rate = sum(self._values) * 1000.0 / span
        if rate <= bound:
            return 0
        return round((rate - bound) / bound * span)


class TokenBucket:
    __slots__ = ("burst_s", "last_ms", "tokens")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.burst_s = max(samples, 1) * max(window_ms, 1) / 1000.0   # bucket size, in seconds of quota
        self.tokens: float | None = None
        self.last_ms = 0

    def _refill(self, bound: float, now_ms: int) -> float:
        burst = bound * self.burst_s
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + bound * (now_ms - self.last_ms) / 1000.0)
        self.last_ms = now_ms
        return self.tokens

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        tokens = self._refill(bound, now_ms)
        return 0 if tokens >= 0 else round(-tokens / bound * 1000)

    def record(self, value: float, bound: float, now_ms: int) -> int:
        self._refill(bound, now_ms)
        assert self.tokens is not None
        self.tokens -= value
        return self.throttle_ms(bound, now_ms)
