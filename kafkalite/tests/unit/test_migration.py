"""The pure parts of ``kafkalite migrate`` (kafkalite/migration/): the offset map and its journal, the
read_committed classification of source batches, the translation of committed offsets, client properties in
Java's names, SCRAM password checks, topic plans and the progress line."""

from __future__ import annotations

import io
import os

import pytest

from kafkalite.migration import access, groups, offsetmap, progress, props, topics
from kafkalite.migration.source import AbortTracker, SourceError, decode_partition
from kafkalite_storage.batch import parse_header
from kafkalite_storage.testing import Rec, encode_batch, encode_control_batch


# -- the offset map ----------------------------------------------------------------------------------------------
def test_contiguous_records_are_one_run_and_keep_their_offsets() -> None:
    m = offsetmap.PartitionMap()
    for i in range(100):
        m.add(i, i)
    assert m.runs() == [(0, 0, 100)] and m.identity
    assert m.translate(0) == 0 and m.translate(57) == 57 and m.target_of(99) == 99


def test_gaps_make_runs_and_committed_offsets_translate_to_the_next_record() -> None:
    m = offsetmap.PartitionMap()
    # source: 0-4 committed txn data, 5 marker, 6-9 data, 10-19 compacted away, 20-24 data
    for src, tgt in [*((i, i) for i in range(5)), *((6 + i, 5 + i) for i in range(4)),
                     *((20 + i, 9 + i) for i in range(5))]:
        m.add(src, tgt)
    m.src_next = 25
    assert m.runs() == [(0, 0, 5), (6, 5, 4), (20, 9, 5)] and not m.identity
    assert m.translate(3) == 3
    assert m.translate(5) == 5, "the marker's offset: the next record (source 6) is at target 5"
    assert m.translate(7) == 6
    assert m.translate(12) == 9, "inside a compacted gap: the next record"
    assert m.translate(25) == 14, "the end: just after the last copied record"
    assert m.translate(26) is None, "beyond what was copied"
    assert m.target_of(5) is None and m.target_of(21) == 10
    assert m.source_of(9) == 20 and m.source_of(14) is None
    with pytest.raises(ValueError):
        m.add(24, 13)


def test_translate_with_nothing_copied_points_at_the_target_start() -> None:
    m = offsetmap.PartitionMap(target_start=40)
    m.src_next = 0
    assert m.translate(0) == 40
    p = offsetmap.PartitionMap(padded_to=30)
    p.src_next = 30
    assert p.target_next == 30 and p.translate(30) == 30


def test_journal_survives_a_reload_and_ignores_an_incomplete_group(tmp_path) -> None:
    j = offsetmap.Journal(tmp_path)
    tp = ("t", 0)
    j.start(tp, 0)
    for i in range(10):
        j.get(tp).add(i, i)
    j.copied_through(tp, 10)
    j.commit()
    j.get(tp).add(12, 10)
    j.copied_through(tp, 13)
    j.commit()
    text = (tmp_path / offsetmap.FILE_NAME).read_text()
    assert text.startswith(offsetmap.HEADER)
    assert offsetmap.load(tmp_path / offsetmap.FILE_NAME)[tp].runs() == [(0, 0, 10), (12, 10, 1)]
    # a crash mid-write: a group without its "k", and a cut line
    with open(tmp_path / offsetmap.FILE_NAME, "a") as f:
        f.write("r t 0 13 11 5\nt t 0 18\n")
        f.write("r t 0 18 1")
    again = offsetmap.Journal(tmp_path)
    m = again.get(tp)
    assert m.runs() == [(0, 0, 10), (12, 10, 1)] and m.src_next == 13
    # appending after a reload continues the last run without repeating it
    m.add(13, 11)
    again.copied_through(tp, 14)
    again.commit()
    assert offsetmap.load(tmp_path / offsetmap.FILE_NAME)[tp].runs() == [(0, 0, 10), (12, 10, 2)]


def test_journal_writes_nothing_for_an_unchanged_partition(tmp_path) -> None:
    j = offsetmap.Journal(tmp_path)
    j.get(("t", 0)).add(0, 0)
    j.copied_through(("t", 0), 1)
    j.commit()
    size = os.path.getsize(tmp_path / offsetmap.FILE_NAME)
    j.copied_through(("t", 0), 1)
    j.commit()
    assert os.path.getsize(tmp_path / offsetmap.FILE_NAME) == size


# -- read_committed classification --------------------------------------------------------------------------------
def _hdr(**kw: object) -> object:
    return parse_header(encode_batch([b"x"], **kw))   # type: ignore[arg-type]


def test_abort_tracker_follows_kafkas_consumer() -> None:
    t = AbortTracker([(7, 10)])   # producer 7 has an aborted transaction starting at offset 10
    assert t.classify(_hdr(base_offset=5, producer_id=7, transactional=True)) == "data"
    assert t.classify(_hdr(base_offset=10, producer_id=7, transactional=True)) == "aborted"
    assert t.classify(_hdr(base_offset=11, producer_id=8, transactional=True)) == "data", "another producer"
    assert t.classify(_hdr(base_offset=12)) == "data", "a non-transactional batch in between"
    marker = parse_header(encode_control_batch(0, producer_id=7, producer_epoch=0, base_offset=13))
    assert t.classify(marker, control_type=0) == "control"
    assert t.classify(_hdr(base_offset=14, producer_id=7, transactional=True)) == "data", "after its ABORT marker"


def test_decode_partition_marks_aborted_records_and_skips_markers() -> None:
    data = b"".join([
        encode_batch([Rec(b"c0", b"k")], base_offset=0, producer_id=1, transactional=True,
                     base_timestamp=1000),
        encode_control_batch(1, producer_id=1, producer_epoch=0, base_offset=1),
        encode_batch([b"a2", b"a3"], base_offset=2, producer_id=1, transactional=True),
        encode_batch([Rec(b"p4", headers=[("h", None)])], base_offset=4),
        encode_control_batch(0, producer_id=1, producer_epoch=0, base_offset=5),
        encode_batch([b"lat"], base_offset=6, log_append_time=True, max_timestamp=5555),
    ])
    recs, nxt = decode_partition(data, [(1, 2)], 0, "t-0")
    assert nxt == 7
    assert [(r.offset, r.value, r.aborted) for r in recs] == [
        (0, b"c0", False), (2, b"a2", True), (3, b"a3", True), (4, b"p4", False), (6, b"lat", False)]
    assert recs[0].key == b"k" and recs[0].timestamp == 1000 and recs[3].headers == (("h", None),)
    assert recs[4].log_append_time and recs[4].timestamp == 5555
    later, _ = decode_partition(data, [(1, 2)], 3, "t-0")
    assert [r.offset for r in later] == [3, 4, 6], "a batch that starts before the fetch offset is cut"


def test_decode_partition_refuses_a_batch_with_a_bad_crc() -> None:
    data = bytearray(encode_batch([b"value"]))
    data[-1] ^= 0xFF
    with pytest.raises(SourceError, match="CRC"):
        decode_partition(bytes(data), [], 0, "t-0")


def test_decode_partition_keeps_a_partial_trailing_batch_for_the_next_fetch() -> None:
    full = encode_batch([b"a"], base_offset=0)
    recs, nxt = decode_partition(full + encode_batch([b"b"], base_offset=1)[:30], [], 0, "t-0")
    assert [r.value for r in recs] == [b"a"] and nxt == 1


# -- committed offsets ------------------------------------------------------------------------------------------
def test_group_plan_translates_and_says_what_it_skips() -> None:
    m = offsetmap.PartitionMap()
    for i in range(10):
        m.add(i + 5, i)
    m.src_next = 15
    gp = groups.plan_group("g", "classic", {("t", 0): (8, "meta"), ("t", 1): (3, ""), ("other", 0): (1, ""),
                                            ("t", 2): (99, "")},
                           {("t", 0): m, ("t", 2): m}, {"t"})
    assert gp.translated == {("t", 0): 3}
    assert any("other-0" in s and "not migrated" in s for s in gp.skipped)
    assert any("t-2" in s and "beyond" in s for s in gp.skipped)
    assert any("t-1" in s for s in gp.skipped)


# -- client properties -----------------------------------------------------------------------------------------
def test_java_client_properties_become_librdkafkas(tmp_path) -> None:
    f = tmp_path / "client.properties"
    f.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
                 'username="ad\\"min" password="s3cr=t";\n'
                 "ssl.truststore.location=/ca.pem\nssl.truststore.type=PEM\n"
                 "ssl.endpoint.identification.algorithm=\nclient.dns.lookup=use_all_dns_ips\n")
    side = props.Side.from_args("h:1", str(f))
    assert side.props == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                          "sasl.username": 'ad"min', "sasl.password": "s3cr=t", "ssl.ca.location": "/ca.pem",
                          "ssl.endpoint.identification.algorithm": "none"}
    sec = side.security()
    assert (sec.protocol, sec.mechanism, sec.username, sec.check_hostname) == ("SASL_SSL", "SCRAM-SHA-512",
                                                                               'ad"min', False)


def test_client_properties_librdkafka_cannot_use_are_refused(tmp_path) -> None:
    f = tmp_path / "jks.properties"
    f.write_text("security.protocol=SSL\nssl.truststore.location=/t.jks\nssl.truststore.type=JKS\n")
    with pytest.raises(props.PropsError, match="PEM"):
        props.Side.from_args("h:1", str(f))
    g = tmp_path / "oauth.properties"
    g.write_text("sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n")
    with pytest.raises(props.PropsError, match="PlainLoginModule"):
        props.Side.from_args("h:1", str(g))


# -- SCRAM -----------------------------------------------------------------------------------------------------
def test_a_password_is_checked_against_the_stored_keys() -> None:
    from kafkalite.security.scram import credential_from_password

    c = credential_from_password("SCRAM-SHA-512", "pw", 8192)
    stored = access.StoredCredential("u", "SCRAM-SHA-512", c.salt, c.stored_key, c.server_key, c.iterations)
    assert stored.matches("pw") and not stored.matches("pW")


def test_passwords_file(tmp_path) -> None:
    f = tmp_path / "pw"
    f.write_text("# users\nalice=a=b c\n\nbob=\n")
    assert access.read_passwords(f) == {"alice": "a=b c", "bob": ""}
    f.write_text("nobody\n")
    with pytest.raises(ValueError, match=":1:"):
        access.read_passwords(f)


# -- topics and progress -----------------------------------------------------------------------------------------
def test_topic_plan_carries_set_configs_and_says_what_it_changes() -> None:
    src = {"t": topics.SourceTopic({"cleanup.policy": "compact", "min.insync.replicas": "3",
                                    "kafkalite.something": "1", "message.timestamp.type": "LogAppendTime"},
                                   log_append_time=True, cleanup_policy="compact")}
    [p] = topics.plan_topics({"t": 4}, src, {}, rf=2)
    assert p.configs == {"cleanup.policy": "compact", "min.insync.replicas": "2",
                         "message.timestamp.type": "LogAppendTime"}
    assert not p.deletable and p.log_append_time and len(p.notes) == 3
    assert p.create_configs()["message.timestamp.type"] == "CreateTime"
    assert p.create_configs()["message.timestamp.after.max.ms"] == topics.LONG_MAX


def test_progress_is_a_bar_on_a_terminal_and_lines_otherwise() -> None:
    now = [100.0]
    out = io.StringIO()
    bar = progress.ProgressBar(1000, out=out, tty=True, clock=lambda: now[0])
    bar.update(0, 0, force=True)
    now[0] += 10
    bar.update(500, 400, force=True)
    text = out.getvalue().rsplit("\r", 1)[1]
    assert text == "[###############...............]  50%  400 records  40 records/s  ETA 0:00:10\x1b[K"
    plain = io.StringIO()
    bar2 = progress.ProgressBar(1000, out=plain, tty=False)
    bar2.update(1000, 900, force=True)
    bar2.finish()
    assert plain.getvalue().count("\n") == 1 and "100% of 1,000 offsets" in plain.getvalue()


def test_the_inline_record_decoder_agrees_with_storages_reader() -> None:
    """Sizes around every varint width (1, 2, 3 bytes), nulls, headers with null values, negative timestamp
    deltas, compressed batches: the copy's decoder gives what kafkalite_storage.batch gives."""
    import random

    from kafkalite_storage.batch import batch_records

    rng = random.Random(7)
    sizes = [0, 1, 63, 64, 127, 128, 8191, 8192, 20000]
    for compression in (0, 1, 3, 4):
        recs = []
        for i in range(30):
            k = None if i % 7 == 0 else rng.randbytes(rng.choice(sizes))
            v = None if i % 11 == 0 else rng.randbytes(rng.choice(sizes))
            hs = [(f"h{j}" * rng.choice([1, 40]), None if j % 2 else rng.randbytes(rng.choice(sizes[:6])))
                  for j in range(rng.choice([0, 1, 3, 70]) if i % 5 == 0 else rng.choice([0, 1, 2]))]
            recs.append(Rec(v, k, 1_700_000_000_000 + rng.randint(-5000, 100_000), hs))
        batch = encode_batch(recs, base_offset=1000, compression=compression)
        got, nxt = decode_partition(batch, [], 0, "t-0")
        want = list(batch_records(batch))
        assert nxt == 1030
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == \
            [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in want]
