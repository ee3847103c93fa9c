"""``__share_group_state`` records (ShareSnapshot / ShareUpdate, Kafka 4.x schemas) and their replay."""
from __future__ import annotations

import struct
import uuid

from kafkalite.coordinator.share.partition import ACKNOWLEDGED, ARCHIVED, AVAILABLE, StateBatch
from kafkalite.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareKey,
    ShareValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    java_uuid_str,
    partition_for,
)
from kafkalite.coordinator.share.state import StateReplay
from kafkalite.metadata.partitions import java_string_hash

TID = uuid.UUID("12345678-1234-5678-1234-567812345678")
KEY = ShareKey("g", TID, 3)


def test_key_bytes_follow_the_schema():
    raw = encode_key(SNAPSHOT, KEY)
    assert raw == b"\x00\x00" + b"\x00\x01g" + TID.bytes + b"\x00\x00\x00\x03"
    assert encode_key(UPDATE, KEY)[:2] == b"\x00\x01"
    assert decode_key(raw) == (SNAPSHOT, KEY)
    assert decode_key(b"\x00\x05\x00\x01g") is None       # another record type


def test_snapshot_value_bytes_follow_the_schema():
    v = ShareValue(True, 1, 2, 10, [StateBatch(10, 11, ARCHIVED, 5)], state_epoch=7, create_ts=100,
                   write_ts=200)
    raw = encode_value(v)
    expect = (struct.pack(">hiiiqqq", 0, 1, 7, 2, 10, 100, 200) + b"\x02"
              + struct.pack(">qqbh", 10, 11, 4, 5) + b"\x00" + b"\x00")
    assert raw == expect
    assert decode_value(SNAPSHOT, raw) == v
    v.delivery_complete_count = 2
    raw = encode_value(v)
    assert raw.endswith(b"\x01\x00\x04" + struct.pack(">i", 2))
    assert decode_value(SNAPSHOT, raw) == v


def test_update_value_roundtrip():
    v = ShareValue(False, 3, 0, -1, [StateBatch(1, 1, AVAILABLE, 2), StateBatch(2, 9, ACKNOWLEDGED, 1)])
    raw = encode_value(v)
    assert raw[:2 + 4 + 4 + 8] == struct.pack(">hiiq", 0, 3, 0, -1)
    assert decode_value(UPDATE, raw) == v


def test_replay_snapshot_then_updates():
    r = StateReplay()
    r.feed(encode_key(SNAPSHOT, KEY), encode_value(ShareValue(True, 0, 0, 5, [StateBatch(6, 7, ARCHIVED, 2)],
                                                              state_epoch=1)))
    r.feed(encode_key(UPDATE, KEY), encode_value(ShareValue(False, 0, 0, -1, [StateBatch(5, 5, AVAILABLE, 1)])))
    r.feed(encode_key(UPDATE, KEY), encode_value(ShareValue(False, 0, 0, 6, [StateBatch(7, 8, ACKNOWLEDGED, 3)])))
    st = r.states[KEY]
    assert st.start == 6 and st.state_epoch == 1 and st.updates == 2
    assert st.batches() == [StateBatch(6, 6, ARCHIVED, 2), StateBatch(7, 8, ACKNOWLEDGED, 3)]
    # a new snapshot replaces everything
    r.feed(encode_key(SNAPSHOT, KEY), encode_value(ShareValue(True, 1, 0, 20, [], state_epoch=2)))
    assert r.states[KEY].start == 20 and r.states[KEY].batches() == [] and r.states[KEY].updates == 0
    r.feed(encode_key(SNAPSHOT, KEY), None)
    assert KEY not in r.states
    r.feed(b"\x00", b"")                                  # garbage is skipped, not fatal
    assert r.skipped == 1


def test_java_hash_and_uuid_string():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_uuid_str(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert 0 <= partition_for(KEY, 50) < 50
