"""A garbage, truncated or missing checkpoint/metadata file of any kind never stops a log dir from opening.

Kafka's handling, which these follow: a malformed offset checkpoint (recovery point, log start offset,
replication, cleaner) is logged and ignored (LogManager resets to nothing: after an unclean stop that means
recovering every segment); a producer snapshot that fails its CRC is deleted and an older one (or the log)
is replayed (ProducerStateManager); a missing leader-epoch checkpoint or partition.metadata starts empty.
Where Kafka would take the whole log dir offline instead (a malformed leader-epoch checkpoint or
partition.metadata), the broker still starts: the epochs are rebuilt from the batches' PartitionLeaderEpoch
fields and the topic id is left to whoever knows it (`create_log`/`set_topic_id` rewrites the file).
"""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, LogManager
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
CFG = LogConfig.from_props({"segment.bytes": "600"})
LOG_DIR_FILES = ["recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown"]
PARTITION_FILES = ["leader-epoch-checkpoint", "partition.metadata", "snapshot"]
DAMAGE = ["garbage", "truncated", "missing", "empty"]


def _build(d: Path) -> tuple[uuid.UUID, list[tuple[int, int]], list[int]]:
    lm = LogManager.open(str(d), CFG)
    tid = uuid.uuid4()
    log = lm.create_log("t", 0, tid)
    for i in range(12):
        log.append(encode_batch([Rec(b"v%d" % i)], producer_id=5, producer_epoch=0, base_sequence=i,
                                base_timestamp=NOW + i), leader_epoch=0 if i < 6 else 2, now_ms=NOW + i)
    epochs = list(log.leader_epochs)
    offsets = [h.base_offset for _s, _p, h in log.batches()]
    lm.close()
    assert epochs == [(0, 0), (2, 6)] and len(list((d / "t-0").glob("*.snapshot"))) >= 2
    return tid, epochs, offsets


def _damage(path: Path, how: str) -> None:
    if how == "missing":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: max(1, len(data) // 2)])
    else:
        path.write_bytes(bytes(random.Random(len(path.name)).randrange(256) for _ in range(40)) + b"\xff\xfe")


CASES = [(name, clean) for name in LOG_DIR_FILES + PARTITION_FILES for clean in (True, False)
         if clean or name != ".kafka_cleanshutdown"]   # after a crash there is no marker to damage


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize(("name", "clean"), CASES, ids=[f"{n}-{'clean' if c else 'crash'}" for n, c in CASES])
def test_a_damaged_file_never_stops_the_log_dir_from_opening(tmp_path: Path, name: str, how: str,
                                                             clean: bool) -> None:
    tid, epochs, offsets = _build(tmp_path)
    if not clean:
        (tmp_path / ".kafka_cleanshutdown").unlink()
    if name == "snapshot":
        target = max((tmp_path / "t-0").glob("*.snapshot"))
    elif name in PARTITION_FILES:
        target = tmp_path / "t-0" / name
    else:
        target = tmp_path / name
    _damage(target, how)
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.get_log("t", 0)
    assert log is not None
    assert [h.base_offset for _s, _p, h in log.batches()] == offsets
    assert log.log_end_offset == 12 and log.log_start_offset == 0
    assert log.leader_epochs == epochs                       # rebuilt from the batches when damaged
    if name == "partition.metadata" and how != "missing":
        assert log.topic_id in (tid, None)
    elif name != "partition.metadata":
        assert log.topic_id == tid
    lm.create_log("t", 0, tid)                               # what the broker does: the id is rewritten
    assert log.topic_id == tid
    # the producer state is whole: a retry of the last batch is a duplicate, the next sequence follows
    last = encode_batch([Rec(b"v11")], producer_id=5, producer_epoch=0, base_sequence=11, base_timestamp=NOW + 11)
    assert log.append(last, now_ms=NOW + 20).duplicate
    nxt = encode_batch([Rec(b"v12")], producer_id=5, producer_epoch=0, base_sequence=12, base_timestamp=NOW + 12)
    assert log.append(nxt, leader_epoch=2, now_ms=NOW + 20).base_offset == 12
    lm.close()
    lm = LogManager.open(str(tmp_path), CFG)                 # and everything was rewritten properly
    log = lm.get_log("t", 0)
    assert log is not None and log.topic_id == tid and log.leader_epochs == epochs and log.log_end_offset == 13
    assert lm.was_clean
    lm.close()
    assert not [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".tmp")]
