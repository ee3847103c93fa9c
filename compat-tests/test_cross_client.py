"""Every client x every client: what each client produces, every client consumes correctly.

Each producer writes 50 records once (two partitions; keys, null keys, tombstones, headers and explicit
timestamps as far as the producer can send them), into its own topic; each cell then reads that topic with
one consumer and compares record by record, per partition, in order.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from harness.clients import CLIENT_NAMES, FEATURES, clients_with
from harness.records import KEEP_OLD_TIMESTAMPS, Rec, assert_same_records, records_for
from harness.topics import create_topic

N = 50


@pytest.fixture(scope="module")
def produced(broker, get_client):
    """producer name -> (topic, records sent); produced lazily on first use, an error is re-raised per cell."""
    cache: dict[str, tuple[str, list[Rec]] | BaseException] = {}

    def get(name: str) -> tuple[str, list[Rec]]:
        if name not in cache:
            try:
                prod = get_client(name)
                topic = f"cross-from-{name}"
                create_topic(broker.bootstrap, topic, 2, KEEP_OLD_TIMESTAMPS)   # read for minutes
                sent = records_for(prod.features, N, partitions=2, prefix=f"from-{name}")
                prod.produce(broker.bootstrap, topic, sent)
                cache[name] = (topic, sent)
            except BaseException as e:
                cache[name] = e
        got = cache[name]
        if isinstance(got, BaseException):
            raise got
        return got
    return get


def _readable(producer: str, consumer: str) -> bool:
    """A consumer whose headers are a map (rskafka) cannot read per-record headers with duplicate names and null
    values: no cell for those producers (a client limitation in MATRIX.md)."""
    return not ("map_headers" in FEATURES[consumer] and "headers" in FEATURES[producer])


@pytest.mark.parametrize(("producer", "consumer"), [
    (p, c) for p in clients_with("produce") for c in clients_with("consume") if _readable(p, c)])
def test_cross_client(broker, produced, get_client, producer, consumer):
    cons = get_client(consumer)
    topic, sent = produced(producer)
    got = cons.consume(broker.bootstrap, topic, [0, 1], len(sent), timeout_s=30)
    if "empty_is_null" in FEATURES[consumer]:   # kafka-go reads b"" back as null (its limitation in MATRIX.md)
        sent = [replace(r, headers=tuple((k, v or None) for k, v in r.headers)) for r in sent]
    assert_same_records(sent, got, what=f"{producer} -> {consumer}")


def test_matrix_is_complete():
    assert clients_with("produce") == list(CLIENT_NAMES) == clients_with("consume")
