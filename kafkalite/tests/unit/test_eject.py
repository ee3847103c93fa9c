"""``kafkalite eject`` without a Kafka: the metadata records byte for byte as Kafka 4.4 writes them, the snapshot
file's layout, what is read from a data directory, what is written, and what is refused.

The expected record bytes are values Apache Kafka 4.4.0 wrote into a snapshot of its own
(``__cluster_metadata-0/...checkpoint``) for the fields given here; the compat test
(compat-tests/test_eject.py) starts Kafka 4.4 on an ejected directory.
"""
from __future__ import annotations

import base64
import json
import os
import stat
import struct
import uuid
from pathlib import Path

import pytest

from kafkalite.authz.acl import AclBinding, Op, PatternType, Permission, ResourceType
from kafkalite.cli import main
from kafkalite.coordinator.classic.records import build_batch
from kafkalite.coordinator.txn.records import TxnLogValue, encode_txn_key, encode_txn_value
from kafkalite.eject import records, snapshot
from kafkalite.eject.records import Endpoint
from kafkalite_storage.batch import batch_records, iter_batches, validate_batch
from kafkalite_storage.checkpoints import read_partition_metadata, read_properties, uuid_to_base64
from kafkalite_storage.manager import LogManager
from kafkalite_storage.testing import Rec, encode_batch

TOPIC_ID = uuid.UUID("39072e18-b3f5-4891-8634-1059cd30a152")
DIR_ID = uuid.UUID("27349380-9767-2ea3-e40f-0df3c2a81534")


# -- records: Kafka's bytes ---------------------------------------------------------------------------------------
def test_records_are_byte_for_byte_what_kafka_writes() -> None:
    h = bytes.fromhex
    assert records.feature_level("metadata.version", 33) == h("010c00116d657461646174612e76657273696f6e002100")
    assert records.topic("plain", TOPIC_ID) == h("01020006706c61696e39072e18b3f5489186341059cd30a15200")
    assert records.partition(TOPIC_ID, 0, replicas=[1], isr=[1], leader=1, leader_epoch=2, partition_epoch=2,
                             directories=[DIR_ID]) == h(
        "0103020000000039072e18b3f5489186341059cd30a152020000000102000000010101000000010000000200000002022734938097"
        "672ea3e40f0df3c2a8153400")
    assert records.config(records.CONFIG_TOPIC, "compacted", "cleanup.policy", "compact") == h(
        "010400020a636f6d7061637465640f636c65616e75702e706f6c69637908636f6d7061637400")
    assert records.config(records.CONFIG_BROKER, "", "log.cleaner.threads", "2") == h(
        "0104000401146c6f672e636c65616e65722e74687265616473023200")
    assert records.client_quota([("user", "alice")], "consumer_byte_rate", 2048.0) == h(
        "010e0002057573657206616c6963650013636f6e73756d65725f627974655f7261746540a00000000000000000")
    assert records.client_quota([("client-id", None)], "request_percentage", 50.0) == h(
        "010e00020a636c69656e742d6964000013726571756573745f70657263656e7461676540490000000000000000")
    assert records.client_quota([("client-id", "c1"), ("user", "alice")], "producer_byte_rate", 4096.0) == h(
        "010e00030a636c69656e742d696403633100057573657206616c696365001370726f64756365725f627974655f7261746540b0000"
        "0000000000000")
    assert records.producer_ids(1000) == h("010f00ffffffffffffffffffffffff00000000000003e800")
    assert records.access_control_entry(uuid.UUID("bb8155e4-8b29-4934-9641-c595e9a83620"), 2, "plain", 3,
                                        "User:bob", "*", 3, 2) == h(
        "011200bb8155e48b2949349641c595e9a836200206706c61696e0309557365723a626f62022a030200")
    stored = h("48fe19f6c1bfb31a49740da761c5cc289ef34ac51860ce48c8f7bc4664703e2f")
    server = h("3f4b138c2efc493c2e66b5e5e541fd2d32cd0b19117a3ae2c51525f4efc5aa8b")
    assert records.user_scram_credential("alice", 1, b"saltsaltsalt", stored, server, 4096) == h(
        "010b0006616c696365010d73616c7473616c7473616c7421" + stored.hex() + "21" + server.hex() + "0000100000")
    # serialized by Kafka 4.4's DelegationTokenRecord (kafka-metadata-4.4.0.jar) with the frame 01 0a 00
    assert records.delegation_token("AbCdEfGhIjKlMnOpQrStUv", "User:alice", "User:bob", ["User:carol", "User:dave"],
                                    1700000000000, 1700604800000, 1700086400000) == h(
        "010a000b557365723a616c69636509557365723a626f62030b557365723a6361726f6c0a557365723a646176650000018bcfe56800"
        "0000018bf3f1ec000000018bd50bc400174162436445664768496a4b6c4d6e4f7051725374557600")


def test_register_broker_record_has_kafkas_layout() -> None:
    """Kafka's own record, but for the two fields eject sets otherwise: Fenced (true: as a controlled shutdown leaves
    the node) and no CordonedLogDirs tag (null, the default, instead of an empty array)."""
    kafka = bytes.fromhex(
        "0100040000000100b187028cf0ba419ca8bab76c0cc5e1000000000000000047020a504c41494e544558540a3132372e302e302e31"
        "9b25000000080e67726f75702e76657273696f6e00000001000e6b726166742e76657273696f6e00000001000e73686172652e7665"
        "7273696f6e0000000200116d657461646174612e76657273696f6e00070021001073747265616d732e76657273696f6e00000001"
        "00147472616e73616374696f6e2e76657273696f6e000000020021656c696769626c652e6c65616465722e7265706c696361732e"
        "76657273696f6e0000000100000000020011022734938097672ea3e40f0df3c2a81534010101")
    features = [("group.version", 0, 1), ("kraft.version", 0, 1), ("share.version", 0, 2), ("metadata.version", 7, 33),
                ("streams.version", 0, 1), ("transaction.version", 0, 2), ("eligible.leader.replicas.version", 0, 1)]
    ours = records.register_broker(1, uuid.UUID("b187028c-f0ba-419c-a8ba-b76c0cc5e100"), 71,
                                   [Endpoint("PLAINTEXT", "127.0.0.1", 39717, "PLAINTEXT")], features, [DIR_ID])
    # Kafka's tail: Rack null, Fenced false, InControlledShutdown false, 2 tags (LogDirs [dir], CordonedLogDirs [])
    kafka_tail = bytes.fromhex("000000" "02" "0011" "02") + DIR_ID.bytes + bytes.fromhex("010101")
    assert kafka.endswith(kafka_tail)
    assert ours == kafka[:-len(kafka_tail)] + bytes.fromhex("000100" "01" "0011" "02") + DIR_ID.bytes


def test_partition_record_with_eligible_leader_replicas() -> None:
    rec = records.partition(TOPIC_ID, 7, replicas=[3], isr=[], leader=-1, leader_epoch=4, partition_epoch=4,
                            directories=[DIR_ID], elr=[3], last_known_elr=[3])
    assert rec.endswith(DIR_ID.bytes + bytes.fromhex("02" "0105" "0200000003" "0205" "0200000003"))
    with pytest.raises(ValueError):
        records.partition(TOPIC_ID, 0, replicas=[1, 2], isr=[1], leader=1, leader_epoch=0, partition_epoch=0,
                          directories=[DIR_ID])


# -- the snapshot file -------------------------------------------------------------------------------------------
def test_snapshot_is_header_batches_footer_with_consecutive_offsets(tmp_path: Path) -> None:
    values = [records.feature_level("metadata.version", 33)] + [records.topic(f"t{i:05d}", uuid.uuid4())
                                                                 for i in range(30_000)]
    path = snapshot.write(str(tmp_path), values, end_offset=len(values) + 1, epoch=5, now_ms=1234)
    assert os.path.basename(path) == f"{len(values) + 1:020d}-0000000005.checkpoint"
    assert not stat.S_IMODE(os.stat(path).st_mode) & 0o222           # read-only, as Kafka freezes one
    data = Path(path).read_bytes()
    batches = [(pos, hdr) for pos, hdr in iter_batches(data)]
    assert len(batches) > 3                                           # the data is split into several batches
    expected = 0
    got: list[bytes] = []
    for pos, hdr in batches:
        validate_batch(memoryview(data)[pos:pos + hdr.size])          # CRC and counts
        assert hdr.base_offset == expected and hdr.partition_leader_epoch == 5
        recs = list(batch_records(data[pos:pos + hdr.size]))
        expected += len(recs)
        if hdr.is_control:
            assert len(recs) == 1 and recs[0].key is not None
            got.append(recs[0].key)
        else:
            assert all(r.key is None for r in recs)
            got.extend(r.value for r in recs if r.value is not None)
    assert got[0] == struct.pack(">hh", 0, 3) and got[-1] == struct.pack(">hh", 0, 4)    # header ... footer
    assert got[1:-1] == values
    header = next(iter(batch_records(data[batches[0][0]:batches[0][0] + batches[0][1].size])))
    assert header.value == struct.pack(">hq", 0, 1234) + b"\x00"


# -- a data directory -----------------------------------------------------------------------------------------
def _data_dir(base: Path, *, clean: bool = True, open_txn: bool = False) -> Path:
    """A kafkalite data directory as a stopped broker leaves it: two topics with records, the internal
    ``__transaction_state`` (one completed transaction, optionally one still ongoing), and kafkalite's files."""
    d = base / "data"
    lm = LogManager.open(str(d), node_id=3, cluster_id="AbCdEfGhIjKlMnOpQrStUv")
    ids = {"orders": uuid.uuid4(), "compacted": uuid.uuid4(), "__transaction_state": uuid.uuid4()}
    for p in range(2):
        log = lm.create_log("orders", p, ids["orders"])
        log.append(encode_batch([Rec(value=b"o%d" % i, key=b"k") for i in range(5)]), leader_epoch=2)
    lm.create_log("compacted", 0, ids["compacted"]).append(encode_batch([Rec(value=b"c", key=b"k")]))
    txn = lm.create_log("__transaction_state", 0, ids["__transaction_state"])
    states = [("done", TxnLogValue(4001, 0, 60000, 4))] + ([("busy", TxnLogValue(4002, 1, 60000, 1))] if open_txn else [])
    for tid, v in states:
        txn.append(build_batch([(encode_txn_key(tid), encode_txn_value(v))]), validate_producer=False)
    lm.close(clean=clean)
    (d / "kafkalite-topic-configs.json").write_text(json.dumps({
        "compacted": {"cleanup.policy": "compact", "segment.bytes": "1000", "message.format.version": "3.0"},
        "orders": {"retention.ms": "86400000"}}))
    (d / "kafkalite-broker-configs.json").write_text(json.dumps({
        "": {"log.flush.interval.messages": "1000", "kafkalite.something": "x"}, "3": {"log.cleaner.min.cleanable.ratio": "0.3"}}))
    (d / "kafkalite-acls.json").write_text(json.dumps({"version": 1, "acls": [
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*", Op.READ,
                   Permission.DENY).to_json()]}))
    (d / "kafkalite-scram-credentials.json").write_text(json.dumps({"version": 1, "users": {"alice": {
        "SCRAM-SHA-512": {"salt": base64.b64encode(b"salt").decode(), "stored_key": base64.b64encode(b"s" * 64).decode(),
                          "server_key": base64.b64encode(b"v" * 64).decode(), "iterations": 8192}}}}))
    (d / "kafkalite-client-quotas.json").write_text(json.dumps({"version": 1, "entries": [
        {"entity": [["user", "alice"]], "values": {"producer_byte_rate": 1024.0}}]}))
    (d / "kafkalite-producer-ids").write_text("3000\n")
    (d / "kafkalite-delegation-tokens.json").write_text(json.dumps({"version": 1, "tokens": [
        {"id": "tok1", "owner": {"type": "User", "name": "alice"}, "requester": {"type": "User", "name": "alice"},
         "renewers": [{"type": "User", "name": "bob"}], "issue_ms": 1, "max_ms": 3, "expiry_ms": 2}]}))
    return d


def _eject(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["eject", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _snapshot_records(new: Path) -> list[tuple[int, bytes]]:
    [path] = (new / "__cluster_metadata-0").glob("*.checkpoint")
    data = path.read_bytes()
    out = []
    for pos, hdr in iter_batches(data):
        if not hdr.is_control:
            out += [(r.value[1], r.value) for r in batch_records(data[pos:pos + hdr.size]) if r.value]
    return out


def test_eject_writes_a_kafka_data_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path)
    new = tmp_path / "kafka"
    props = tmp_path / "kafkalite.properties"
    props.write_text("listeners=SASL_PLAINTEXT://127.0.0.1:29092\nsasl.enabled.mechanisms=SCRAM-SHA-512\n"
                     "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\nsuper.users=User:admin\n"
                     "node.id=3\n")
    rc, out, err = _eject(capsys, str(d), "--to", str(new), "--config", str(props))
    assert rc == 0, err
    assert "topics 3 (4 partitions)" in out and "ACLs 1" in out and "SCRAM credentials 1" in out, out
    assert "delegation tokens 1" in out, out
    assert "next producer id 4002" in out, out       # above kafkalite's transactional producer id 4001
    assert "compacted: config segment.bytes=1000" in out and "message.format.version=3.0" in out, out
    assert "kafkalite.something" in out, out
    assert f"bin/kafka-server-start.sh {new / 'server.properties'}" in out
    # Kafka's files, copied byte for byte
    for name in ("orders-0", "orders-1", "compacted-0", "__transaction_state-0"):
        for f in (d / name).iterdir():
            assert (new / name / f.name).read_bytes() == f.read_bytes(), f
    for f in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint"):
        assert (new / f).read_bytes() == (d / f).read_bytes()
    assert not list(new.glob("kafkalite-*")) and not (tmp_path / "kafka.part").exists()
    meta, old = read_properties(str(new / "meta.properties")), read_properties(str(d / "meta.properties"))
    assert meta == {k: old[k] for k in ("node.id", "directory.id", "version", "cluster.id")}
    assert meta["version"] == "1" and meta["node.id"] == "3"
    assert read_partition_metadata(str(new / "__cluster_metadata-0" / "partition.metadata")) == uuid.UUID(int=1)
    quorum = json.loads((new / "__cluster_metadata-0" / "quorum-state").read_text())
    assert quorum["leaderEpoch"] == 1 and quorum["leaderId"] == -1 and quorum["data_version"] == 0
    # the image
    recs = _snapshot_records(new)
    keys = [k for k, _v in recs]
    assert keys[0] == records.FEATURE_LEVEL and keys.count(records.FEATURE_LEVEL) == 6
    assert keys.count(records.TOPIC) == 3 and keys.count(records.PARTITION) == 4
    assert keys.count(records.ACCESS_CONTROL_ENTRY) == 1 and keys.count(records.USER_SCRAM_CREDENTIAL) == 1
    assert keys.count(records.CLIENT_QUOTA) == 1 and keys.count(records.PRODUCER_IDS) == 1
    assert [v for _k, v in recs][-1] == records.delegation_token("tok1", "User:alice", "User:alice", ["User:bob"],
                                                                 1, 3, 2)   # last, after the SCRAM credentials
    [broker] = [v for k, v in recs if k == records.REGISTER_BROKER]
    epoch = struct.unpack(">q", broker[24:32])[0]       # frame 3, BrokerId 4, IsMigratingZkBroker 1, IncarnationId 16
    assert json.loads((new / ".kafka_cleanshutdown").read_text()) == {"version": 0, "brokerEpoch": epoch}
    topic_ids = {v[4:3 + v[3]].decode(): uuid.UUID(bytes=v[3 + v[3]:19 + v[3]])
                 for k, v in recs if k == records.TOPIC}
    assert topic_ids["orders"] == read_partition_metadata(str(d / "orders-0" / "partition.metadata"))
    orders = [v for k, v in recs if k == records.PARTITION and uuid.UUID(bytes=v[7:23]) == topic_ids["orders"]]
    # frame 3, PartitionId 4, TopicId 16, Replicas [3] 5, Isr [] 1, Removing 1, Adding 1 -> Leader, LeaderEpoch
    assert len(orders) == 2 and all(struct.unpack(">ii", v[31:39]) == (-1, 2) for v in orders)
    configs = b"".join(v for k, v in recs if k == records.CONFIG)
    assert b"min.insync.replicas" in configs and b"log.cleaner.min.cleanable.ratio" in configs
    assert b"segment.bytes" in configs          # __transaction_state's, as Kafka creates it
    assert b"message.format.version" not in configs and b"kafkalite.something" not in configs
    # server.properties
    path = new / "server.properties"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    p = read_properties(str(path))
    assert p["process.roles"] == "broker,controller" and p["node.id"] == "3"
    assert p["controller.quorum.voters"].startswith("3@127.0.0.1:")
    assert p["log.dirs"] == str(new.resolve())
    assert p["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert p["super.users"] == "User:admin;User:kafkalite-eject-internal"
    assert p["listener.security.protocol.map"].endswith("INTERNAL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT")
    assert p["inter.broker.listener.name"] == "INTERNAL" and p["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert "ScramLoginModule" in p["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert p["transaction.state.log.num.partitions"] == "1" and p["offsets.topic.replication.factor"] == "1"
    assert "kafkalite" not in "".join(k for k in p if k.startswith("kafkalite."))


def test_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path)
    rc, out, _err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"), "--dry-run")
    assert rc == 0 and out.startswith("would eject") and "bytes of partition data" not in out
    assert not (tmp_path / "kafka").exists() and not (tmp_path / "kafka.part").exists()


def test_refuses_a_running_brokers_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path)
    lm = LogManager.open(str(d), node_id=3)       # holds .lock, as a running broker does
    try:
        rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"))
    finally:
        lm.close()
    assert rc == 1 and "in use" in err and "holds its .lock" in err, err
    assert not (tmp_path / "kafka").exists()


def test_refuses_an_unclean_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path, clean=False)
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"))
    assert rc == 1 and "not shut down cleanly" in err, err


def test_open_transactions_are_refused_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path, open_txn=True)
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"))
    assert rc == 1 and "1 transaction(s) are open: busy (Ongoing)" in err and "--allow-open-transactions" in err
    rc, out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"), "--allow-open-transactions")
    assert rc == 0, err
    assert "open transactions (1)" in out and "busy (Ongoing)" in out
    assert "next producer id 4003" in out          # above the transactions' producer ids (4002), not the block


def test_refuses_a_non_empty_target_and_one_inside_the_source(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "full"))
    assert rc == 1 and "not an empty directory" in err
    rc, _out, err = _eject(capsys, str(d), "--to", str(d / "inside"))
    assert rc == 1 and "outside" in err
    rc, _out, err = _eject(capsys, str(tmp_path / "full"), "--to", str(tmp_path / "k"))
    assert rc == 1 and "not a kafkalite data directory" in err
    (tmp_path / "empty").mkdir()
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "empty"))     # an empty directory is fine
    assert rc == 0, err


def test_a_listener_on_port_0_needs_a_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path)
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"), "--listen", "127.0.0.1:0")
    assert rc == 1 and "--listen" in err
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"), "--listen", "127.0.0.1:19092",
                           "--controller-listener", "127.0.0.1:19999")
    assert rc == 0, err
    p = read_properties(str(tmp_path / "kafka" / "server.properties"))
    assert p["controller.quorum.voters"] == "3@127.0.0.1:19999"
    assert p["listeners"].startswith("PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:19093,")
    assert "authorizer.class.name" not in p and p["listener.security.protocol.map"].endswith(
        "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT")


def test_a_cluster_data_dir_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data_dir(tmp_path)
    (d / "broker-1").mkdir()
    (d / "broker-1" / "meta.properties").write_text("node.id=1\n")
    rc, _out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"))
    assert rc == 1 and "kafkalite cluster" in err


def test_uuid_helpers_agree_with_kafka() -> None:
    assert uuid_to_base64(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"     # Kafka's METADATA_TOPIC_ID


def test_link_shares_closed_segments_and_copies_the_active_one(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalite_storage.config import LogConfig

    d = _data_dir(tmp_path)
    lm = LogManager.open(str(d), node_id=3)
    log = lm.create_log("rolled", 0, uuid.uuid4(), LogConfig(segment_bytes=200))
    for i in range(6):
        log.append(encode_batch([Rec(value=b"x" * 100, key=b"%d" % i)]))
    lm.close()
    segments = sorted(f.name for f in (d / "rolled-0").glob("*.log"))
    assert len(segments) > 2
    rc, out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"), "--link")
    assert rc == 0, err
    assert "hard-linked" in out and "read-only" in out
    new = tmp_path / "kafka" / "rolled-0"
    for name in segments:
        base = name[:-4]
        for ext in (".log", ".index", ".timeindex"):
            same = (new / (base + ext)).stat().st_ino == (d / "rolled-0" / (base + ext)).stat().st_ino
            assert same == (name != segments[-1]), (name, ext)      # linked unless active
            assert (new / (base + ext)).read_bytes() == (d / "rolled-0" / (base + ext)).read_bytes()
    assert (new / "leader-epoch-checkpoint").stat().st_ino != (d / "rolled-0" / "leader-epoch-checkpoint").stat().st_ino


def test_kafkas_own_listeners_are_named_apart_and_the_wildcard_is_not_advertised(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    d = _data_dir(tmp_path)
    props = tmp_path / "kafkalite.properties"
    props.write_text("listeners=INTERNAL://0.0.0.0:29092,CONTROLLER://127.0.0.1:29093\n"
                     "listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT\n")
    rc, out, err = _eject(capsys, str(d), "--to", str(tmp_path / "kafka"), "--config", str(props))
    assert rc == 0, err
    p = read_properties(str(tmp_path / "kafka" / "server.properties"))
    assert p["controller.listener.names"] == "KRAFT_CONTROLLER" and p["inter.broker.listener.name"] == "BROKER_INTERNAL"
    assert p["listeners"].startswith("INTERNAL://0.0.0.0:29092,CONTROLLER://127.0.0.1:29093,BROKER_INTERNAL://")
    assert p["advertised.listeners"].startswith(f"INTERNAL://{socket.getfqdn()}:29092,CONTROLLER://127.0.0.1:29093,")
    assert "KRAFT_CONTROLLER" not in p["advertised.listeners"]
    assert "the wildcard address is advertised as" in out
