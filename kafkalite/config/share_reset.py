"""``share.auto.offset.reset``: where a share-partition without state starts (KIP-932, KIP-1106).

Kafka 4.x (``ShareGroupAutoOffsetResetStrategy.fromString`` and its ``Validator``, ``GroupConfig``) accepts
exactly three forms, case-sensitive, after ConfigDef's trim of the string:

- ``earliest``: the log start offset;
- ``latest`` (the default): the end of what the group may read;
- ``by_duration:<ISO-8601 duration>`` (KIP-1106): the first record whose timestamp is at or after
  ``now - duration``, now being the moment the share-partition is initialised (``SharePartition``'s
  ``startOffsetDuringInitialization`` asks the log for that timestamp, READ_UNCOMMITTED). When the log has no
  such record (all older, or no records at all) Kafka's initialisation fails with OffsetNotAvailableException:
  the ShareFetch answers OFFSET_NOT_AVAILABLE for that partition and the next fetch tries again, with a new
  ``now``. kafkalite answers it once the fetch's MaxWaitMs has passed with no such record appended (a record
  that qualifies meanwhile is delivered instead): Kafka answers at once, and librdkafka then re-sends at once,
  thousands of ShareFetches a second.

Anything else (``none``, ``EARLIEST``, ``by_duration`` without a duration, an unparsable or negative
duration) is refused with INVALID_CONFIG and Kafka's message. The duration is ``java.time.Duration.parse``'s
grammar: ``[-+]P[nD][T[nH][nM][n[.f]S]]`` with ASCII letters in either case, signed parts, a fraction of up
to 9 digits (``.`` or ``,``) on the seconds only, at least one part, no ``T`` without a time part, no
weeks, months or years, every number and sum within a Java long of seconds; a negative total is refused
("PT0S" is allowed: the start is the first record stamped now or later).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = "share.auto.offset.reset"
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_NANOS = 1_000_000_000
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?"
                       r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
                       re.IGNORECASE | re.ASCII)


@dataclass(frozen=True, slots=True)
class ResetStrategy:
    kind: str               # "earliest", "latest" or "by_duration"
    duration_ns: int = 0    # by_duration: the duration (>= 0)

    def timestamp(self, now_ms: int) -> int:
        """by_duration: the time to search from (``Instant.now().minus(d).toEpochMilli()``, floored)."""
        return (now_ms * 1_000_000 - self.duration_ns) // 1_000_000


class InvalidStrategy(ValueError):
    pass


def _java_long(text: str) -> int:
    n = int(text)
    if not _LONG_MIN <= n <= _LONG_MAX:
        raise InvalidStrategy(text)
    return n


def _exact(n: int) -> int:
    """Math.*Exact: a result outside a Java long is an ArithmeticException (the parse fails)."""
    if not _LONG_MIN <= n <= _LONG_MAX:
        raise InvalidStrategy("overflow")
    return n


def parse_duration_ns(text: str) -> int:
    """``java.time.Duration.parse`` as a signed number of nanoseconds; InvalidStrategy if Java refuses it."""
    m = _DURATION.fullmatch(text)
    if m is None or (m.group(3) is not None and m.group(3).upper() == "T"):
        raise InvalidStrategy(text)
    days, hours, minutes, seconds, fraction = m.group(2, 4, 5, 6, 7)
    if days is None and hours is None and minutes is None and seconds is None:
        raise InvalidStrategy(text)
    secs = [0 if v is None else _exact(_java_long(v) * k)
            for v, k in ((days, 86400), (hours, 3600), (minutes, 60), (seconds, 1))]
    total = _exact(secs[0] + _exact(secs[1] + _exact(secs[2] + secs[3])))
    nanos = int((fraction or "").ljust(9, "0")) if fraction else 0
    if seconds is not None and seconds.startswith("-"):
        nanos = -nanos
    total = _exact(total + nanos // _NANOS)          # Duration.ofSeconds(seconds, nanoAdjustment)
    ns = total * _NANOS + nanos % _NANOS
    if m.group(1) == "-":
        ns = -ns
        _exact(ns // _NANOS)                          # Duration.negated()
    return ns


def parse(value: str) -> ResetStrategy:
    """The strategy of a (trimmed) config value, as Kafka's fromString; InvalidStrategy if Kafka refuses it."""
    if value in ("earliest", "latest"):
        return ResetStrategy(value)
    if value.startswith("by_duration:"):
        ns = parse_duration_ns(value[len("by_duration:"):])
        if ns < 0:
            raise InvalidStrategy("Negative duration is not supported in by_duration offset reset strategy.")
        return ResetStrategy("by_duration", ns)
    raise InvalidStrategy(value)


def validation_error(value: str) -> str | None:
    """Kafka's INVALID_CONFIG message for a bad value (ConfigException(name, value, validator message)),
    None when the value is accepted."""
    try:
        parse(value)
    except InvalidStrategy:
        return (f"Invalid value {value} for configuration {_NAME}: Invalid value `{value}` for configuration "
                f"{_NAME}. The value must be either 'earliest', 'latest' or of the format "
                "'by_duration:<PnDTnHnMn.nS.>'.")
    return None


#: the rule of the broker-wide default ``kafkalite.share.auto.offset.reset`` (``kafkalite.config.defs``)
BROKER_VALID = "[earliest, latest, by_duration:<PnDTnHnMn.nS.>]"


def broker_default_error(value: str) -> str | None:
    """The broker-wide default (``kafkalite.share.auto.offset.reset``, the value of groups that set no
    ``share.auto.offset.reset``) takes the group config's values, with ConfigDef's trim; None when accepted,
    else why not (the broker does not start)."""
    try:
        parse(value.strip())
    except InvalidStrategy:
        return "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
    return None


def strategy_or_latest(value: str) -> ResetStrategy:
    """For the coordinator: a stored value (validated when it was set; a broker-level default is not), with
    Kafka's default, latest, standing in for one that does not parse."""
    try:
        return parse(value.strip())
    except InvalidStrategy:
        return ResetStrategy("latest")
