"""read_committed Fetch trims file regions at the last stable offset, on batch boundaries."""
from __future__ import annotations

import os
from pathlib import Path

from kafkalite.handlers.fetch import trim_regions
from kafkalite_storage.testing import encode_batch


def test_trim_regions_stops_before_first_batch_at_or_past_end(tmp_path: Path) -> None:
    batches = [encode_batch([b"a", b"b"], base_offset=0), encode_batch([b"c"], base_offset=2),
               encode_batch([b"d", b"e"], base_offset=3)]
    path = tmp_path / "seg.log"
    path.write_bytes(b"".join(batches))
    fd = os.open(path, os.O_RDONLY)
    try:
        total = sum(map(len, batches))
        assert trim_regions([(fd, 0, total)], 3) == [(fd, 0, len(batches[0]) + len(batches[1]))]
        assert trim_regions([(fd, 0, total)], 2) == [(fd, 0, len(batches[0]))]
        assert trim_regions([(fd, 0, total)], 0) == []
        assert trim_regions([(fd, 0, total)], 99) == [(fd, 0, total)]
        # several regions: everything after the cut is dropped
        split = len(batches[0])
        assert trim_regions([(fd, 0, split), (fd, split, total - split)], 2) == [(fd, 0, split)]
    finally:
        os.close(fd)
