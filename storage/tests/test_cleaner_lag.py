"""When the cleaner may run: min.cleanable.dirty.ratio, min.compaction.lag.ms and max.compaction.lag.ms.

- A pass runs only when the dirty part (segments above the cleaner checkpoint) is at least the ratio of the
  cleanable range ...
- ... unless the first dirty batch has waited longer than max.compaction.lag.ms, which forces a pass;
- segments younger than min.compaction.lag.ms (by their largest timestamp) are not cleanable, nor is
  anything after them, so recent values of a key survive beside the older ones until they age.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
BASE = LogConfig(segment_bytes=10_000, cleanup_policy="compact", delete_retention_ms=0, file_delete_delay_ms=0)


def _segment(log: PartitionLog, keys: list[bytes], ts: int) -> None:
    log.append(encode_batch([Rec(b"v-%d" % ts, key=k) for k in keys], base_timestamp=ts), now_ms=ts)
    log.roll()


def _keys(log: PartitionLog) -> list[bytes | None]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    return [r.key for pos, h in iter_batches(data) for r in batch_records(data[pos : pos + h.size])]


def test_dirty_ratio_and_max_compaction_lag(tmp_path: Path) -> None:
    cfg = dataclasses.replace(BASE, min_cleanable_dirty_ratio=0.9)
    log = PartitionLog.create(str(tmp_path / "r-0"), "r", 0, uuid.uuid4(), cfg)
    for i in range(4):
        _segment(log, [b"a", b"b", b"u%d" % i], NOW + i)
    assert clean_log(log, NOW + 100) is not None  # first pass: everything is dirty (ratio 1.0)
    _segment(log, [b"a"], NOW + 10)  # a little new data: dirty ratio far below 0.9
    log.append(encode_batch([Rec(b"t", key=b"tail")], base_timestamp=NOW + 11), now_ms=NOW + 11)
    assert clean_log(log, NOW + 100) is None
    assert _keys(log).count(b"a") == 2
    # max.compaction.lag.ms: the dirty batch (timestamp NOW + 10) has waited more than 50 ms at NOW + 100
    log.update_config(dataclasses.replace(cfg, max_compaction_lag_ms=50))
    assert clean_log(log, NOW + 55) is None  # waited 45 ms only
    assert clean_log(log, NOW + 100) is not None
    assert _keys(log).count(b"a") == 1
    log.close()


def test_min_compaction_lag_protects_young_segments(tmp_path: Path) -> None:
    cfg = dataclasses.replace(BASE, min_compaction_lag_ms=1000, min_cleanable_dirty_ratio=0.01)
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), cfg)
    _segment(log, [b"a", b"b"], NOW)
    _segment(log, [b"a", b"b"], NOW + 100)
    _segment(log, [b"a", b"c"], NOW + 2000)  # young at NOW + 2500
    log.append(encode_batch([Rec(b"t", key=b"tail")], base_timestamp=NOW + 2001), now_ms=NOW + 2001)
    assert clean_log(log, NOW + 500) is None  # every segment is younger than 1 s
    res = clean_log(log, NOW + 2500)  # the first two are old enough; the third and after are not
    assert res is not None and res.first_uncleanable_offset == 4
    assert _keys(log) == [b"a", b"b", b"a", b"c", b"tail"]
    assert clean_log(log, NOW + 5000) is not None  # now the third segment is cleanable too
    assert _keys(log) == [b"b", b"a", b"c", b"tail"]
    log.close()
