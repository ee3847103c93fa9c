"""``.snapshot`` dumps agree with ``kafkalite_storage.producer_state`` (the reader the broker itself uses).

Kafka's line per producer (DumpLogSegments.dumpProducerIdSnapshot): ``producerId producerEpoch coordinatorEpoch
currentTxnFirstOffset (an OptionalLong) lastTimestamp`` and, when the entry has batch metadata (lastOffset >= 0),
``firstSequence lastSequence lastOffset offsetDelta timestamp``.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

from kafkalite_storage import LogConfig, LogManager
from kafkalite_storage.dumplog import dump_files
from kafkalite_storage.producer_state import ProducerEntry, ProducerStateManager
from kafkalite_storage.testing import Rec, encode_batch


def _line(e: ProducerEntry, *, as_written: bool = False) -> str:
    """Kafka's dump line for an entry; ``as_written``: the entry after a snapshot round trip, where Kafka stores
    ``lastTimestamp`` in the single timestamp field (ProducerStateManager.writeSnapshot) and reads it back as
    the batch metadata's timestamp too."""
    txn = "OptionalLong.empty" if e.current_txn_first_offset < 0 else f"OptionalLong[{e.current_txn_first_offset}]"
    line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} lastTimestamp: {e.last_timestamp} ")
    if e.batches:
        m = e.batches[-1] if as_written else e.batches[0]  # Kafka writes the newest; the dump shows the head
        ts = e.last_timestamp if as_written else m.timestamp
        line += (f"firstSequence: {m.first_seq} lastSequence: {m.last_seq} lastOffset: {m.last_offset} "
                 f"offsetDelta: {m.offset_delta} timestamp: {ts}")
    return line


def _dump(path: Path) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    assert dump_files([str(path)], out=out, err=err) == 0
    assert err.getvalue() == ""
    lines = out.getvalue().split("\n")
    assert lines[0] == f"Dumping {path}" and lines[-1] == ""
    return lines[1:-1]


def test_fixture_snapshots_agree_with_producer_state(reference: Path) -> None:
    snaps = sorted((reference / "fixtures" / "segments").glob("*/*/*.snapshot"))
    assert len(snaps) > 20
    with_entries = 0
    for snap in snaps:
        entries = ProducerStateManager.decode_snapshot(snap.read_bytes())
        with_entries += bool(entries)
        assert _dump(snap) == [_line(e) for e in entries], snap
    assert with_entries >= 3


def test_storage_written_snapshot_agrees(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig(), node_id=1)
    log = lm.create_log("p", 0, uuid.uuid4())
    now = 1_700_000_000_000
    log.append(encode_batch([Rec(b"a"), Rec(b"b")], base_timestamp=now, producer_id=9, producer_epoch=2,
                            base_sequence=0), leader_epoch=0, now_ms=now)
    log.append(encode_batch([Rec(b"c")], base_timestamp=now + 5, producer_id=9, producer_epoch=2,
                            base_sequence=2), leader_epoch=0, now_ms=now + 5)
    # an open transaction (no marker yet) and a committed one
    log.append(encode_batch([Rec(b"t1"), Rec(b"t2"), Rec(b"t3")], base_timestamp=now + 10, producer_id=11,
                            producer_epoch=0, base_sequence=0, transactional=True), leader_epoch=0, now_ms=now + 10)
    log.append(encode_batch([Rec(b"u")], base_timestamp=now + 20, producer_id=12, producer_epoch=1,
                            base_sequence=0, transactional=True), leader_epoch=0, now_ms=now + 20)
    log.append_control(1, producer_id=12, producer_epoch=1, coordinator_epoch=4, leader_epoch=0, now_ms=now + 30)
    state = {pid: _line(e, as_written=True) for pid, e in log.producer_state.producers.items()}
    lm.close()
    snaps = sorted((tmp_path / "p-0").glob("*.snapshot"))
    assert snaps, "a clean close writes a producer snapshot"
    lines = _dump(snaps[-1])
    assert sorted(lines) == sorted(state.values())
    assert [_line(e) for e in ProducerStateManager.decode_snapshot(snaps[-1].read_bytes())] == lines
    by_pid = {int(line.split()[1]): line for line in lines}
    for line in lines:  # Kafka's snapshot keeps one timestamp per producer
        assert line.split(" lastTimestamp: ")[1].split(" ")[0] == line.rsplit(" timestamp: ", 1)[1]
    assert by_pid[9].endswith("firstSequence: 2 lastSequence: 2 lastOffset: 2 offsetDelta: 0 "
                              f"timestamp: {now + 5}")
    assert " currentTxnFirstOffset: OptionalLong[3] " in by_pid[11]
    assert by_pid[12].startswith("producerId: 12 producerEpoch: 1 coordinatorEpoch: 4 "
                                 "currentTxnFirstOffset: OptionalLong.empty ")
