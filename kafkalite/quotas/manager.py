"""Client quota enforcement, as Kafka's ClientQuotaManager / ClientRequestQuotaManager /
ControllerMutationQuotaManager do it, for one broker.

- ``producer_byte_rate``: each Produce request's size is recorded against the client's (user, client id)
  measurement after it is handled; over the quota, the response carries ``throttle_time_ms`` and the
  connection reads nothing more until that time has passed (Kafka mutes the channel; KIP-219).
- ``consumer_byte_rate``: a Fetch's response size is recorded; if that breaks the quota, the bytes are taken
  back and the client gets an empty response with the throttle time, as Kafka does, and is muted. A fetch is
  also never sized above what the quota allows in a window (``bound * (samples - 1) * window``).
- ``request_percentage``: the time a request spends being handled (the event loop's thread CPU time from the
  handler's start to its end, kafkalite's stand-in for Kafka's request-handler thread time) as a percentage
  of one thread; ApiVersions and the SASL requests are exempt, as in Kafka.
- ``controller_mutation_rate``: partitions created or deleted by CreateTopics / CreatePartitions /
  DeleteTopics take tokens from a bucket. Versions with THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+,
  CreatePartitions v3+, DeleteTopics v5+) are refused per topic while the bucket is empty (strict); older ones
  always go through and are throttled afterwards (permissive).
- The response's throttle time is the largest of those that apply; ``quota.window.num`` samples of
  ``quota.window.size.seconds`` make each measurement.

With no quota configured ``active`` is False and the connection skips all of it (one attribute test).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.errors import StartupError
from kafkalite.metadata.quotas import CONSUMER, MUTATION, PRODUCER, REQUEST, QuotaStore
from kafkalite.quotas.rate import Rate, TokenBucket

if TYPE_CHECKING:
    from kafkalite.handlers.registry import RequestContext

_EXEMPT_KEYS = frozenset({17, 18, 36})   # SaslHandshake, ApiVersions, SaslAuthenticate
_PRODUCE = 0
_MAX_SENSORS = 20_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class QuotaManager:
    def __init__(self, config: Any, store: QuotaStore) -> None:
        """``store``: the quota configs, shared by every broker of a cluster (``MetadataRoom.shared``); rates
        are measured per broker, as Kafka's quota managers do."""
        self.samples = config.get_int("quota.window.num")
        self.window_ms = config.get_int("quota.window.size.seconds") * 1000
        self.store = store
        self.active = bool(self.store.entries)
        store.listeners.append(self.changed)
        self._sensors: dict[tuple[str, str, str], Any] = {}

    def changed(self) -> None:
        self.active = bool(self.store.entries)

    # -- measurements -------------------------------------------------------------------------------------
    def _who(self, ctx: RequestContext) -> tuple[str, str]:
        return ctx.principal.name, ctx.client_id or ""

    def _sensor(self, key: str, tags: tuple[str, str], bucket: bool = False) -> Any:
        k = (key, *tags)
        s = self._sensors.get(k)
        if s is None:
            if len(self._sensors) >= _MAX_SENSORS:   # client ids are client-chosen: forget the measurements
                self._sensors.clear()
            s = self._sensors[k] = (TokenBucket if bucket else Rate)(self.samples, self.window_ms)
        return s

    def _record(self, key: str, ctx: RequestContext, value: float, now_ms: int) -> int:
        found = self.store.resolve(key, *self._who(ctx))
        if found is None:
            return 0
        bound, tags = found
        rate = self._sensor(key, tags)
        rate.record(value, now_ms)
        return int(rate.throttle_ms(bound, now_ms))

    # -- hooks ------------------------------------------------------------------------------------------
    def after_request(self, ctx: RequestContext, frame_size: int, cpu_ns: int) -> int:
        """Record a handled request (its size if a Produce, its handling time); the throttle time in ms."""
        key = ctx.header.api_key
        if key in _EXEMPT_KEYS:
            return 0
        now = _now_ms()
        throttle = self._record(REQUEST, ctx, cpu_ns * 100 / 1e9, now)
        if key == _PRODUCE:
            throttle = max(throttle, self._record(PRODUCER, ctx, frame_size, now))
        return throttle

    def fetch_throttle(self, ctx: RequestContext, response_bytes: int) -> int:
        """Record a Fetch response's size; if it breaks the quota, take it back and return the throttle time
        (the caller answers an empty response)."""
        found = self.store.resolve(CONSUMER, *self._who(ctx))
        if found is None:
            return 0
        bound, tags = found
        now = _now_ms()
        rate = self._sensor(CONSUMER, tags)
        rate.record(response_bytes, now)
        throttle = int(rate.throttle_ms(bound, now))
        if throttle:
            rate.record(-response_bytes, now)
        return throttle

    def max_fetch_bytes(self, ctx: RequestContext) -> int | None:
        found = self.store.resolve(CONSUMER, *self._who(ctx))
        if found is None:
            return None
        return max(int(found[0] * (self.samples - 1) * self.window_ms / 1000), 1)

    def mutation_refused(self, ctx: RequestContext, partitions: int, strict: bool) -> bool:
        """Partitions about to be created or deleted (controller_mutation_rate): True means refuse this topic
        with THROTTLING_QUOTA_EXCEEDED (``strict`` and the bucket is empty; nothing recorded); otherwise the
        mutation is recorded and may overdraw the bucket (``mutation_throttle`` then says for how long)."""
        found = self.store.resolve(MUTATION, *self._who(ctx))
        if found is None:
            return False
        bound, tags = found
        now = _now_ms()
        bucket = self._sensor(MUTATION, tags, bucket=True)
        if strict and bucket.throttle_ms(bound, now):
            return True
        bucket.record(partitions, bound, now)
        return False

    def mutation_throttle(self, ctx: RequestContext) -> int:
        found = self.store.resolve(MUTATION, *self._who(ctx))
        if found is None:
            return 0
        return int(self._sensor(MUTATION, found[1], bucket=True).throttle_ms(found[0], _now_ms()))


def from_config(config: Any, data_dir: Path | str | None, room: Any = None) -> QuotaManager:
    """The broker's quota manager over the quota configs in ``data_dir`` (one store per metadata ``room``, when
    given); a quota file that cannot be read is a StartupError."""
    def make() -> QuotaStore:
        return QuotaStore(data_dir)

    try:
        return QuotaManager(config, make() if room is None else room.shared("quota-store", make))
    except RuntimeError as exc:
        raise StartupError(str(exc)) from exc
