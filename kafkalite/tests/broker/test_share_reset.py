"""share.auto.offset.reset values as Kafka 4.x takes them (``ShareGroupAutoOffsetResetStrategy.fromString``
and ``java.time.Duration.parse``): which are accepted, what a by_duration duration is, which are refused."""
from __future__ import annotations

import pytest

from kafkalite.config.share_reset import InvalidStrategy, ResetStrategy, parse, validation_error

S = 1_000_000_000


@pytest.mark.parametrize("value, expected", [
    ("earliest", ResetStrategy("earliest")),
    ("latest", ResetStrategy("latest")),
    ("by_duration:PT1H", ResetStrategy("by_duration", 3600 * S)),
    ("by_duration:pt1h", ResetStrategy("by_duration", 3600 * S)),          # Java's letters: either case
    ("by_duration:P2D", ResetStrategy("by_duration", 2 * 86400 * S)),
    ("by_duration:P1DT2H3M4.5S", ResetStrategy("by_duration", (86400 + 7200 + 180 + 4) * S + S // 2)),
    ("by_duration:PT1,25S", ResetStrategy("by_duration", S + S // 4)),     # a comma is a decimal mark too
    ("by_duration:PT0.000000001S", ResetStrategy("by_duration", 1)),
    ("by_duration:PT1.S", ResetStrategy("by_duration", S)),                 # an empty fraction is 0
    ("by_duration:PT0S", ResetStrategy("by_duration", 0)),
    ("by_duration:+PT+90M", ResetStrategy("by_duration", 5400 * S)),
    ("by_duration:-PT-1H", ResetStrategy("by_duration", 3600 * S)),         # the negation of a negative
    ("by_duration:PT2H-30M", ResetStrategy("by_duration", 5400 * S)),       # parts add up, signs and all
    ("by_duration:PT9223372036854775807S", ResetStrategy("by_duration", (2**63 - 1) * S)),
])
def test_accepted(value: str, expected: ResetStrategy) -> None:
    assert parse(value) == expected
    assert validation_error(value) is None


@pytest.mark.parametrize("value", [
    "none", "EARLIEST", "Latest", "", "by_duration", "by_duration:", "BY_DURATION:PT1H", "by_duration :PT1H",
    "by_duration: PT1H", "by_duration:PT1H ", "by_duration:P", "by_duration:PT", "by_duration:P1DT",
    "by_duration:P1W", "by_duration:P1M", "by_duration:P1Y", "by_duration:1H", "by_duration:PT1.5H",
    "by_duration:PT1.0000000001S", "by_duration:-PT1H", "by_duration:PT-0.5S", "by_duration:PT-1S",
    "by_duration:P-1D", "by_duration:PT1H30M-2H",
    "by_duration:PT9223372036854775808S",              # not a Java long
    "by_duration:P106751991167301D",                   # days * 86400 overflows a long
    "by_duration:PT1\u0663S",                          # only ASCII digits
    "by_duration:PT1\u017f",                           # Java's case folding is ASCII-only (long s is not S)
])
def test_refused(value: str) -> None:
    with pytest.raises(InvalidStrategy):
        parse(value)
    assert validation_error(value) == (
        f"Invalid value {value} for configuration share.auto.offset.reset: Invalid value `{value}` for "
        "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
        "'by_duration:<PnDTnHnMn.nS.>'.")


def test_timestamp_is_now_minus_the_duration_floored_to_ms() -> None:
    assert ResetStrategy("by_duration", 3600 * S).timestamp(10_000_000) == 10_000_000 - 3_600_000
    assert ResetStrategy("by_duration", S // 2 + 1).timestamp(1000) == 499   # Instant.toEpochMilli floors


def test_by_duration_start_and_offset_not_available_over_the_wire() -> None:
    """A share-partition of a by_duration:PT1H group starts at the first record stamped within the hour; with
    none such, ShareFetch answers OFFSET_NOT_AVAILABLE for it (Kafka's failed initialisation) and nothing is
    initialised, so the fetch after a newer record arrives starts there."""
    import time

    from kafkalite.embedded import Broker
    from kafkalite.tests.broker.test_configs_protocol import incremental
    from kafkalite.tests.broker.test_protocol import produce_req
    from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_storage.testing import Rec, encode_batch
    from kafkalite_wire.messages import CreateTopicsRequest

    def partition_error(r) -> int:  # type: ignore[no-untyped-def]
        return r.responses[0].partitions[0].error_code

    with Broker() as b, RawClient(b.host, b.port) as c:
        c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="bd", num_partitions=1, replication_factor=1)], timeout_ms=5000), 5)
        now = int(time.time() * 1000)
        old = encode_batch([Rec(b"o0"), Rec(b"o1")], base_timestamp=now - 2 * 3600_000)
        assert c.request(produce_req("bd", old), 9).responses[0].partition_responses[0].error_code == 0
        tid = topic_id(c, "bd")
        assert incremental(c, "g", ("share.auto.offset.reset", 0, "by_duration:PT1H"), rtype=32) == (0, None)
        h = hb(c, "g", "m", 0, ["bd"])
        hb(c, "g", "m", h.member_epoch)
        r = fetch(c, "g", "m", 0, tid)
        assert (partition_error(r), acquired(r)) == (78, [])      # OFFSET_NOT_AVAILABLE
        new = encode_batch([Rec(b"n0"), Rec(b"n1")], base_offset=0, base_timestamp=now)
        assert c.request(produce_req("bd", new), 9).responses[0].partition_responses[0].error_code == 0
        r = fetch(c, "g", "m", 1, tid)
        assert (partition_error(r), acquired(r)) == (0, [2, 3])


def test_offset_not_available_waits_for_max_wait_and_a_qualifying_record_ends_it() -> None:
    """A long-polling ShareFetch of a by_duration group with no record in the window waits (it is not answered
    at once, which would have clients spin), and a record stamped now, appended meanwhile, is delivered."""
    import threading
    import time

    from kafkalite.embedded import Broker
    from kafkalite.tests.broker.test_configs_protocol import incremental
    from kafkalite.tests.broker.test_protocol import produce_req
    from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_storage.testing import Rec, encode_batch
    from kafkalite_wire.messages import CreateTopicsRequest

    with Broker() as b, RawClient(b.host, b.port) as c, RawClient(b.host, b.port) as producer:
        c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="bdw", num_partitions=1, replication_factor=1)], timeout_ms=5000), 5)
        tid = topic_id(c, "bdw")
        assert incremental(c, "gw", ("share.auto.offset.reset", 0, "by_duration:PT1M"), rtype=32) == (0, None)
        h = hb(c, "gw", "m", 0, ["bdw"])
        hb(c, "gw", "m", h.member_epoch)
        fetched: dict[str, object] = {}

        def long_poll() -> None:
            fetched["r"] = fetch(c, "gw", "m", 0, tid, max_wait=30_000)

        t = threading.Thread(target=long_poll, daemon=True)
        t.start()
        time.sleep(0.3)   # (ordering only) the fetch is parked before the record comes
        new = encode_batch([Rec(b"now")], base_timestamp=int(time.time() * 1000))
        assert producer.request(produce_req("bdw", new), 9).responses[0].partition_responses[0].error_code == 0
        t.join(30)
        r = fetched["r"]
        assert r.responses[0].partitions[0].error_code == 0 and acquired(r) == [0]  # type: ignore[attr-defined]


@pytest.mark.parametrize("value, ok", [("by_duration:PT1H", True), ("earliest", True), (" latest ", True),
                                       ("by_duration:P1W", False), ("none", False), ("by_duration:-PT1H", False)])
def test_broker_default_takes_the_group_config_values(value: str, ok: bool) -> None:
    """kafkalite.share.auto.offset.reset (the default of groups without share.auto.offset.reset) takes the
    same values as the group config, by_duration included; a broker with another value does not start."""
    from kafkalite.config.broker import BrokerConfig
    from kafkalite.errors import ConfigError

    if ok:
        BrokerConfig({"kafkalite.share.auto.offset.reset": value})
        return
    with pytest.raises(ConfigError, match="kafkalite.share.auto.offset.reset.*by_duration:<PnDTnHnMn.nS.>"):
        BrokerConfig({"kafkalite.share.auto.offset.reset": value})


def test_broker_default_by_duration_over_the_wire() -> None:
    """A group with no share.auto.offset.reset of its own on a broker defaulting to by_duration:PT1H starts at
    the first record stamped within the hour."""
    import time

    from kafkalite.embedded import Broker
    from kafkalite.tests.broker.test_protocol import produce_req
    from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_storage.testing import Rec, encode_batch
    from kafkalite_wire.messages import CreateTopicsRequest

    with Broker(overrides={"kafkalite.share.auto.offset.reset": "by_duration:PT1H"}) as b, \
            RawClient(b.host, b.port) as c:
        c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="bdd", num_partitions=1, replication_factor=1)], timeout_ms=5000), 5)
        now = int(time.time() * 1000)
        for base, ts in ((0, now - 2 * 3600_000), (0, now - 60_000)):
            batch = encode_batch([Rec(b"x"), Rec(b"y")], base_offset=base, base_timestamp=ts)
            assert c.request(produce_req("bdd", batch), 9).responses[0].partition_responses[0].error_code == 0
        tid = topic_id(c, "bdd")
        h = hb(c, "g", "m", 0, ["bdd"])
        hb(c, "g", "m", h.member_epoch)
        r = fetch(c, "g", "m", 0, tid)
        assert (r.responses[0].partitions[0].error_code, acquired(r)) == (0, [2, 3])


def test_broker_default_lists_the_parsers_valid_values() -> None:
    """config_defs names the valid values itself (so the parser is not imported at start): they agree."""
    from kafkalite.config.defs import BROKER
    from kafkalite.config.share_reset import BROKER_VALID

    assert BROKER["kafkalite.share.auto.offset.reset"].valid == BROKER_VALID
