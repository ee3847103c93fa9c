"""A full or failing disk seen from clients: error codes, never a closed connection or a dead broker.

Faults are injected under storage's file operations (`kafkalite_storage.fs.faults()`); the embedded broker runs in
this process, so the injector sees its writes.
"""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.errors import error_code_for
from kafkalite.tests.broker.test_coordinator_restart import fetch as fetch_offsets
from kafkalite.tests.broker.test_group_handlers import commit, create_topic
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage import fs
from kafkalite_storage.errors import KafkaStorageError, LogOfflineError, StorageError
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import FetchRequest, InitProducerIdRequest, ProduceRequest


def produce(c: RawClient, topic: str, value: bytes, **kw: int) -> tuple[int, int]:
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=encode_batch([value], **kw))])])
    p = c.request(req, 9).responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def fetch(c: RawClient, topic: str) -> tuple[int, int, bytes]:
    req = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 24, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                             partition_max_bytes=1 << 24)])])
    part = c.request(req, 11).responses[0].partitions[0]
    return part.error_code, part.high_watermark, bytes(part.records or b"")


def test_storage_errors_map_to_kafka_storage_error() -> None:
    for exc in (KafkaStorageError("x"), LogOfflineError("x"), StorageError("x")):
        assert error_code_for(exc) == ErrorCode.KAFKA_STORAGE_ERROR


def test_produce_on_a_full_disk_answers_kafka_storage_error_and_continues_after(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path / "d", overrides={"log.index.interval.bytes": "1"}) as b, \
            RawClient(b.host, b.port) as c:
        create_topic(c, "t", 1)
        assert produce(c, "t", b"a") == (0, 0)
        assert produce(c, "t", b"b") == (0, 1)
        with fs.faults() as inj:
            inj.fail("offset_index", "write", errno.ENOSPC)   # the batch reaches the .log, its index entry not
            for _ in range(3):
                assert produce(c, "t", b"lost")[0] == ErrorCode.KAFKA_STORAGE_ERROR
                err, hw, records = fetch(c, "t")             # reads keep working, nothing half-written shows
                assert err == 0 and hw == 2 and b"lost" not in records
            inj.clear()
        assert produce(c, "t", b"c") == (0, 2)               # same offset: no orphan, no gap
        _err, hw, records = fetch(c, "t")
        assert hw == 3 and b"lost" not in records


def test_offset_commit_on_a_full_disk_answers_an_error_and_keeps_the_old_offset(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with Broker(data_dir=data, overrides={"log.index.interval.bytes": "1"}) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t", 1)
        assert commit(c, "g", 2, "t", {0: 5}) == {0: 0}
        assert commit(c, "g", 2, "t", {0: 6}) == {0: 0}
        with fs.faults() as inj:   # the commit reaches the .log, its index entry does not
            inj.fail("offset_index", "write", errno.ENOSPC, path_contains="__consumer_offsets")
            code = commit(c, "g", 2, "t", {0: 9})[0]
            assert code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
            assert ErrorCode(code).retriable
            assert fetch_offsets(c, "g") == {0: 6}
        assert commit(c, "g", 2, "t", {0: 7}) == {0: 0}
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        for _ in range(500):
            got = fetch_offsets(c, "g")
            if got:
                break
            time.sleep(0.02)
        assert got == {0: 7}


def test_producer_id_block_failures_and_a_lost_producer_ids_file(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t", 1)
        pid = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).producer_id
        assert produce(c, "t", b"x", producer_id=pid, producer_epoch=0, base_sequence=0) == (0, 0)
    for damage in (b"\xff\xfegarbage", None):
        path = data / "kafkalite-producer-ids"
        if damage is None:
            path.unlink()
        else:
            path.write_bytes(damage)
        with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
            with fs.faults() as inj:
                inj.fail("other", "write", errno.ENOSPC, path_contains="kafkalite-producer-ids")
                r = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
                assert r.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and r.producer_id == -1
            new = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
            # never the id of a producer the log knows: its batches would be taken for duplicates
            assert new.error_code == 0 and new.producer_id > pid
            err, off = produce(c, "t", b"y", producer_id=new.producer_id, producer_epoch=0, base_sequence=0)
            assert err == 0 and off >= 1
            pid = new.producer_id


def test_transaction_state_on_a_full_disk_answers_an_error_and_the_transaction_continues(tmp_path: Path) -> None:
    from kafkalite.tests.broker.test_transaction_handlers import add, end, init, txn_produce

    overrides = {"log.index.interval.bytes": "1", "transaction.state.log.num.partitions": "1"}
    with Broker(data_dir=tmp_path / "d", overrides=overrides) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t", 1)
        pid, epoch = init(c, "tx")
        with fs.faults() as inj:   # the state record reaches the .log, its index entry does not
            inj.fail("offset_index", "write", errno.ENOSPC, path_contains="__transaction_state")
            codes = add(c, "tx", pid, epoch, {"t": [0]})
            assert codes[("t", 0)] in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
        assert add(c, "tx", pid, epoch, {"t": [0]}) == {("t", 0): 0}
        assert txn_produce(c, "tx", "t", pid, epoch, 0, [b"a"])[0] == 0
        assert end(c, "tx", pid, epoch, True) == 0


LAUNCHER = """
import os, sys, errno
from kafkalite_storage import fs
trigger = sys.argv[1]
inj = fs.Injector()
for op in ("open", "write", "rename", "fsync"):   # a full disk once the trigger file exists
    inj.fail(op=op, errno=errno.ENOSPC, when=lambda: os.path.exists(trigger))
fs.install(inj)
from kafkalite.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.e2e
def test_sigterm_on_a_full_disk_exits_0_without_the_clean_shutdown_marker(tmp_path: Path) -> None:
    data, trigger = tmp_path / "data", tmp_path / "disk-full"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(trigger), "serve", "--listen", "127.0.0.1:0",
                             "--data-dir", str(data)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kafkalite ready on "), proc.stderr.read() if proc.stderr else ""
        host, port = line.strip().rsplit(" ", 1)[1].rsplit(":", 1)
        with RawClient(host, int(port)) as c:
            create_topic(c, "t", 1)
            for i in range(5):
                assert produce(c, "t", b"v%d" % i) == (0, i)
            trigger.touch()
            assert produce(c, "t", b"lost")[0] == ErrorCode.KAFKA_STORAGE_ERROR
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    _out, err = proc.communicate(timeout=30)
    assert "kafka_cleanshutdown" in err and "Traceback" not in err
    assert not (data / ".kafka_cleanshutdown").exists()
    trigger.unlink()
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:   # recovers, every acked record is there
        err_code, hw, records = fetch(c, "t")
        assert err_code == 0 and hw == 5 and b"lost" not in records
        assert produce(c, "t", b"v5") == (0, 5)


@pytest.fixture(autouse=True)
def _no_leftover_faults() -> None:
    assert fs.pwritev is os.pwritev
