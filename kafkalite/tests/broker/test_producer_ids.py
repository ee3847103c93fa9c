"""Producer-id allocation is immune to client-chosen producer ids (issue 29, first item).

A batch may carry any producer id (Kafka accepts it and applies the producer-state rules to it); allocation
must never be moved by it: not while the id file is there, not when it is missing or damaged, not after a
restart. And a response that cannot be encoded is answered with the API's error, not a closed connection.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.metadata import producer_ids as pids
from kafkalite.metadata.producer_ids import (
    MAX_PRODUCER_ID,
    PRODUCER_ID_BLOCK,
    PRODUCER_IDS_COPY,
    PRODUCER_IDS_FILE,
    ProducerIdAllocator,
    ProducerIdsExhausted,
)
from kafkalite.tests.broker.test_disk_faults_broker import produce
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_transaction_handlers import add, end, init, txn_produce
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ApiVersionsRequest, InitProducerIdRequest

TOP = MAX_PRODUCER_ID   # 2^63-1: the largest id a batch can carry


def _none() -> list[int]:
    return []


# -- the allocator alone ----------------------------------------------------------------------------------
def test_blocks_are_persisted_and_a_new_allocator_continues_after_them(tmp_path: Path) -> None:
    a = ProducerIdAllocator(tmp_path)
    assert [a.allocate(_none, _none) for _ in range(3)] == [0, 1, 2]
    assert (tmp_path / PRODUCER_IDS_FILE).read_text() == f"{PRODUCER_ID_BLOCK}\n"
    assert (tmp_path / PRODUCER_IDS_COPY).read_text() == f"{PRODUCER_ID_BLOCK}\n"
    b = ProducerIdAllocator(tmp_path)
    assert b.allocate(_none, _none) == PRODUCER_ID_BLOCK


def test_ids_in_use_never_move_allocation_they_are_only_stepped_around(tmp_path: Path) -> None:
    poisoned = [TOP, TOP - 1, 2**62, 0, 1, 5]
    a = ProducerIdAllocator(tmp_path)
    first = a.allocate(_none, lambda: poisoned)
    assert first == 6   # clear of the live ids 0, 1, 5; the huge ones are far away and ignored
    assert all(0 <= a.allocate(_none, lambda: poisoned) < 2 * PRODUCER_ID_BLOCK for _ in range(PRODUCER_ID_BLOCK))


def test_skip_in_use_finds_the_first_clear_block() -> None:
    assert pids.skip_in_use(0, []) == 0
    assert pids.skip_in_use(0, [0, 999, 1998, TOP, -7]) == 1999
    assert pids.skip_in_use(10, [3, 5]) == 10


@pytest.mark.parametrize("damage", [None, b"", b"\xff\xfe", b"-5\n", b"12x\n", str(2**63 + 1000).encode(),
                                    str(2**63).encode(), b"9" * 40])
def test_a_missing_or_damaged_file_is_rebuilt_from_the_copy_or_from_own_ids(tmp_path: Path,
                                                                          damage: bytes | None) -> None:
    a = ProducerIdAllocator(tmp_path)
    a.allocate(_none, _none)
    main, copy = tmp_path / PRODUCER_IDS_FILE, tmp_path / PRODUCER_IDS_COPY
    for path in (main, copy):
        if damage is None:
            path.unlink()
        else:
            path.write_bytes(damage)
        # the other file still says where the next block starts
        assert ProducerIdAllocator(tmp_path).allocate(_none, lambda: [TOP]) == PRODUCER_ID_BLOCK
        path.write_text(f"{PRODUCER_ID_BLOCK}\n")
    for path in (main, copy):   # both lost: the transaction coordinators' ids, then clear of ids in use
        if damage is None:
            path.unlink()
        else:
            path.write_bytes(damage)
    got = ProducerIdAllocator(tmp_path).allocate(lambda: [41, -1, TOP + 5], lambda: [42, 43, TOP, 2**62])
    assert got == 44
    assert int(main.read_text()) == 44 + PRODUCER_ID_BLOCK


def test_a_new_data_directory_is_not_warned_about_a_lost_file_is(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger=pids.__name__):
        assert ProducerIdAllocator(tmp_path).allocate(_none, _none) == 0   # fresh: nothing to warn about
        assert not caplog.records
        (tmp_path / PRODUCER_IDS_FILE).unlink()
        (tmp_path / PRODUCER_IDS_COPY).unlink()
        assert ProducerIdAllocator(tmp_path).allocate(_none, lambda: [3]) == 4   # ids in use: they were lost
        assert [r.getMessage() for r in caplog.records if "missing or damaged" in r.getMessage()]
        caplog.clear()
        (tmp_path / PRODUCER_IDS_COPY).write_bytes(b"x")   # only a damaged copy left: warned too
        (tmp_path / PRODUCER_IDS_FILE).unlink()
        ProducerIdAllocator(tmp_path).allocate(_none, _none)
        assert caplog.records


def test_the_range_ends_at_2_63_minus_1(tmp_path: Path) -> None:
    last = pids.LAST_BLOCK_START
    (tmp_path / PRODUCER_IDS_FILE).write_text(f"{last}\n")
    a = ProducerIdAllocator(tmp_path)
    ids = [a.allocate(_none, _none) for _ in range(PRODUCER_ID_BLOCK)]
    assert ids[0] == last and ids[-1] == TOP - 1
    with pytest.raises(ProducerIdsExhausted):
        a.allocate(_none, _none)
    # and a rebuild from ids at the very top does not leave the range either
    for f in (PRODUCER_IDS_FILE, PRODUCER_IDS_COPY):
        (tmp_path / f).unlink()
    with pytest.raises(ProducerIdsExhausted):
        ProducerIdAllocator(tmp_path).allocate(lambda: [TOP - 10], _none)


# -- through the broker -----------------------------------------------------------------------------------
def _init(c: RawClient) -> tuple[int, int]:
    r = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
    return r.error_code, r.producer_id


def _clients_work(c: RawClient, topic: str, txn_id: str) -> tuple[int, int]:
    err, pid = _init(c)
    assert err == 0 and 0 <= pid < 10 * PRODUCER_ID_BLOCK
    assert produce(c, topic, b"idem", producer_id=pid, producer_epoch=0, base_sequence=0)[0] == 0
    tpid, epoch = init(c, txn_id)
    assert 0 <= tpid < 10 * PRODUCER_ID_BLOCK and tpid != pid
    assert add(c, txn_id, tpid, epoch, {topic: [0]}) == {(topic, 0): 0}
    assert txn_produce(c, txn_id, topic, tpid, epoch, 0, [b"txn"])[0] == 0
    assert end(c, txn_id, tpid, epoch, True) == 0
    return pid, tpid


@pytest.mark.parametrize("lose_files", [False, True], ids=["files-kept", "files-lost"])
def test_a_batch_with_producer_id_2_63_minus_1_poisons_nothing(tmp_path: Path, lose_files: bool) -> None:
    data = tmp_path / "d"
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t", 1)
        # Kafka accepts it: an id it never handed out is just a producer it has no state for
        assert produce(c, "t", b"evil", producer_id=TOP, producer_epoch=0, base_sequence=0) == (0, 0)
        assert produce(c, "t", b"evil", producer_id=TOP - 1, producer_epoch=32767, base_sequence=7)[0] == 0
        seen = set(_clients_work(c, "t", "tx"))
    for _ in range(2):   # restarts, with or without the id files: still in range, never an id in use
        if lose_files:
            for f in (PRODUCER_IDS_FILE, PRODUCER_IDS_COPY):
                (data / f).unlink(missing_ok=True)
        with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
            assert produce(c, "t", b"evil", producer_id=TOP, producer_epoch=0, base_sequence=1)[0] == 0
            pid, tpid = _clients_work(c, "t", "tx")
            assert pid not in seen
            seen |= {pid, tpid}


def test_an_old_overflowed_id_file_is_taken_for_damaged(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / PRODUCER_IDS_FILE).write_text(f"{2**63 + PRODUCER_ID_BLOCK}\n")   # what the old allocator wrote
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t", 1)
        _clients_work(c, "t", "tx")


def test_a_response_that_cannot_be_encoded_is_an_error_not_a_closed_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.state import BrokerState

    monkeypatch.setattr(BrokerState, "allocate_producer_id", lambda self: 2**63)   # an int64 cannot hold it
    with Broker(data_dir=tmp_path / "d") as b, RawClient(b.host, b.port) as c:
        assert _init(c) == (ErrorCode.UNKNOWN_SERVER_ERROR, -1)
        assert c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).error_code == 0
        assert _init(c) == (ErrorCode.UNKNOWN_SERVER_ERROR, -1)   # the same connection, still answering
