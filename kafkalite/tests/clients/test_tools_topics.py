"""``kafkalite topics``, ``produce`` and ``consume`` end to end against an embedded broker (one per module),
checked against what the broker holds, through confluent-kafka's own APIs."""
from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def bs(broker: Broker) -> str:
    return broker.bootstrap_servers


def _producer_ids(broker: Broker, topic: str, partition: int) -> set[int]:
    """ProducerId of every stored batch of the partition (record batch v2 header, bytes 43-50)."""
    data = (broker.data_dir / f"{topic}-{partition}" / ("0" * 20 + ".log")).read_bytes()
    pids, pos = set(), 0
    while pos + 61 <= len(data):
        pids.add(int.from_bytes(data[pos + 43:pos + 51], "big", signed=True))
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    return pids


def _read_all(bs: str, topic: str, n: int) -> list[object]:
    ck = need_confluent()
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "verify", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in parts])
        got: list[object] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m)
        return got
    finally:
        c.close()


def test_topics_create_list_describe_alter_delete(bs: str) -> None:
    need_confluent()
    r = cli(bs, "topics", "--create", "--topic", "tt-a", "--partitions", "3", "--config",
            "retention.ms=123456,cleanup.policy=delete")
    assert (r.code, r.out) == (0, "Created topic tt-a.\n"), r.err
    r = cli(bs, "topics", "--create", "--topic", "tt-a")
    assert r.code == 1 and "TOPIC_ALREADY_EXISTS" in r.err
    assert cli(bs, "topics", "--create", "--topic", "tt-a", "--if-not-exists").code == 0
    r = cli(bs, "topics", "--create", "--topic", "tt-bad", "--config", "retention.ms=abc")
    assert r.code == 1 and "INVALID_CONFIG" in r.err
    assert "tt-a" in cli(bs, "topics", "--list").out.split()
    assert cli(bs, "topics", "--list", "--topic", "tt-.*", "--json").json() == ["tt-a"]
    d = cli(bs, "topics", "--describe", "--topic", "tt-a", "--json").json()
    assert [p["partition"] for p in d[0]["partitions"]] == [0, 1, 2]
    assert d[0]["configs"] == {"retention.ms": "123456", "cleanup.policy": "delete"}
    assert all(p["leader"] == 1 and p["earliest"] == 0 and p["latest"] == 0 for p in d[0]["partitions"])
    rows = cli(bs, "topics", "--describe", "--topic", "tt-a").rows()
    assert rows[0] == ["tt-a", "0", "1", "1", "1", "0", "0"]
    # partitions only grow (Kafka's INVALID_PARTITIONS), and grow for real
    r = cli(bs, "topics", "--alter", "--topic", "tt-a", "--partitions", "2")
    assert r.code == 1 and "INVALID_PARTITIONS" in r.err
    assert cli(bs, "topics", "--alter", "--topic", "tt-a", "--partitions", "5").code == 0
    assert len(cli(bs, "topics", "--describe", "--topic", "tt-a", "--json").json()[0]["partitions"]) == 5
    r = cli(bs, "topics", "--delete", "--topic", "tt-a")
    assert (r.code, r.out) == (0, "Deleted topic tt-a.\n")
    assert "tt-a" not in cli(bs, "topics", "--list").out.split()


def test_topics_bad_input(bs: str) -> None:
    need_confluent()
    for argv, code, text in [
        (("topics",), 2, "one of the arguments"),
        (("topics", "--list", "--describe"), 2, "not allowed with"),
        (("topics", "--create"), 2, "--create needs --topic"),
        (("topics", "--create", "--topic", "x", "--partitions", "0"), 2, "must be at least 1"),
        (("topics", "--alter", "--topic", "x"), 2, "--alter needs --partitions"),
        (("topics", "--create", "--topic", "x", "--config", "novalue"), 2, "expected KEY=VALUE"),
        (("topics", "--describe", "--topic", "does-not-exist"), 1, "does not exist as expected"),
        (("topics", "--delete", "--topic", "does-not-exist"), 1, "does not exist as expected"),
        (("topics", "--describe", "--topic", "(unclosed"), 2, "not a regular expression"),
    ]:
        r = cli(bs, *argv)
        assert r.code == code and text in r.err, (argv, r)
    assert cli(bs, "topics", "--delete", "--topic", "does-not-exist", "--if-exists").code == 0
    # nothing listening: exit 1 with one line, within the timeout
    r = cli("127.0.0.1:1", "topics", "--list", "--timeout-ms", "1500")
    assert r.code == 1 and "cannot reach a broker at 127.0.0.1:1" in r.err and len(r.err.splitlines()) == 1


def test_produce_keys_headers_partition_then_consume_formats(broker: Broker, bs: str) -> None:
    need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "tp", "--partitions", "2").code == 0
    lines = b"h1:x,h2:y\tk1:v1\r\n\tk2:v2\nh1:z\tnullkey:\xff\xfe\n"
    r = cli(bs, "produce", "--topic", "tp", "--partition", "1", "--property", "parse.key=true",
            "key.separator=:", "parse.headers=true", "null.marker=nullkey", "--header", "src=cli",
            "--compression-codec", "gzip", "--json", stdin=lines)
    assert r.code == 0, r.err
    assert r.json() == {"topic": "tp", "records": 3, "failed": 0,
                        "partitions": {"1": {"records": 3, "first_offset": 0, "last_offset": 2}}}
    got = _read_all(bs, "tp", 3)
    pids = _producer_ids(broker, "tp", 1)
    assert len(pids) == 1 and min(pids) >= 0     # idempotent by default: a producer id on every batch
    assert [(m.partition(), m.key(), m.value()) for m in got] == [  # type: ignore[attr-defined]
        (1, b"k1", b"v1"), (1, b"k2", b"v2"), (1, None, b"\xff\xfe")]
    assert got[0].headers() == [("src", b"cli"), ("h1", b"x"), ("h2", b"y")]  # type: ignore[attr-defined]
    assert got[1].headers() == [("src", b"cli")]  # type: ignore[attr-defined]

    r = cli(bs, "consume", "--topic", "tp", "--from-beginning", "--max-messages", "3", "--property",
            "print.key=true", "print.partition=true", "print.offset=true", "print.headers=true",
            "key.separator=|")
    assert r.code == 0 and r.err.strip() == "Processed a total of 3 messages"
    assert r.out.splitlines() == ["Partition:1|Offset:0|src:cli,h1:x,h2:y|k1|v1",
                                  "Partition:1|Offset:1|src:cli|k2|v2",
                                  "Partition:1|Offset:2|src:cli,h1:z|null|\ufffd\ufffd"]
    r = cli(bs, "consume", "--topic", "tp", "--partition", "1", "--offset", "1", "--format", "json",
            "--max-messages", "2")
    recs = [__import__("json").loads(ln) for ln in r.out.splitlines()]
    assert [(x["offset"], x["key"], x["value"]) for x in recs] == [(1, "k2", "v2"), (2, None, {"base64": "//4="})]
    assert recs[0]["timestamp_type"] == "CreateTime" and recs[0]["headers"] == [["src", "cli"]]
    r = cli(bs, "consume", "--topic", "tp", "--from-beginning", "--format", "kv", "--timeout-ms", "1500")
    assert r.code == 0 and r.out.splitlines() == ["k1\tv1", "k2\tv2", "null\t\ufffd\ufffd"]
    # --timestamp: the first record at or after it; after the last record, nothing
    time.sleep(0.01)   # a later millisecond than the three records above
    assert cli(bs, "produce", "--topic", "tp", "--partition", "1", stdin=b"later\n").code == 0
    ts = _read_all(bs, "tp", 4)[3].timestamp()[1]  # type: ignore[attr-defined]
    assert ts > got[2].timestamp()[1]  # type: ignore[attr-defined]
    r = cli(bs, "consume", "--topic", "tp", "--timestamp", str(ts), "--timeout-ms", "1500")
    assert r.out == "later\n"
    r = cli(bs, "consume", "--topic", "tp", "--timestamp", "2999-01-01T00:00:00Z", "--timeout-ms", "1000")
    assert r.code == 0 and r.out == ""


def test_produce_consume_group_and_big_file(broker: Broker, bs: str, tmp_path: Path) -> None:
    need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "tbig", "--partitions", "3").code == 0
    path = tmp_path / "in.txt"
    n = 20_000
    path.write_bytes(b"".join(b"line-%d\n" % i for i in range(n)))
    r = cli(bs, "produce", "--topic", "tbig", "--file", str(path), "--progress", "--acks", "1",
            "--compression-codec", "lz4", "--json")
    assert r.code == 0, r.err
    assert r.json()["records"] == n and "100% of" in r.err
    # --acks 1: not idempotent (the sticky partitioner may leave a partition empty: look at all three)
    assert set().union(*(_producer_ids(broker, "tbig", p) for p in range(3))) == {-1}
    # a group member reads everything once and commits: a second run of the same group gets nothing
    r = cli(bs, "consume", "--topic", "tbig", "--group", "g-big", "--from-beginning", "--max-messages", str(n),
            "--progress")
    assert r.code == 0 and sorted(r.out.splitlines()) == sorted(f"line-{i}" for i in range(n))
    assert f"{n:,} records of {n:,}" in r.err
    r = cli(bs, "consume", "--topic", "tbig", "--group", "g-big", "--from-beginning", "--timeout-ms", "3000")
    assert r.code == 0 and r.out == ""


def test_produce_consume_bad_input(bs: str) -> None:
    need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "tbad").code == 0
    r = cli(bs, "produce", "--topic", "tbad", "--property", "parse.key=true", stdin=b"a\t1\nnosep\n")
    assert r.code == 2 and "no key separator found on line number 2" in r.err
    parts = cli(bs, "topics", "--describe", "--topic", "tbad", "--json").json()[0]["partitions"]
    assert parts[0]["latest"] == 1   # the line before it was sent
    for argv, code, text in [
        (("produce", "--topic", "tbad", "--property", "parse.kee=true"), 2, "unknown (known:"),
        (("produce", "--topic", "tbad", "--partition", "7"), 1, "has no partition 7"),
        (("produce", "--topic", "tbad", "--file", "/nonexistent/x"), 2, "--file /nonexistent/x"),
        (("produce", "--topic", "tbad", "--acks", "2"), 2, "invalid choice"),
        (("consume", "--topic", "tbad", "--group", "g", "--offset", "3"), 2, "cannot be used with --group"),
        (("consume", "--topic", "tbad", "--offset", "abc"), 2, "expected a number"),
        (("consume", "--topic", "tbad", "--timestamp", "yesterday"), 2, "expected milliseconds"),
        (("consume", "--topic", "tbad", "--partition", "9", "--from-beginning"), 1, "has no partition 9"),
    ]:
        r = cli(bs, *argv)
        assert r.code == code and text in r.err, (argv, r)


@pytest.mark.e2e
def test_tools_without_confluent_kafka_say_how_to_install_it() -> None:
    """Without the client library a tool exits 1 with one line naming this interpreter and the command that
    installs the library into it (not a bare `pip install 'kafkalite[tools]'`, which would fetch whatever a
    registry holds under that name)."""
    code = ("import sys; sys.modules['confluent_kafka'] = None\n"
            "from kafkalite.cli import main\n"
            "sys.exit(main(['topics', '--list']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.strip() == (f"kafkalite topics: error: the tools need confluent-kafka, which {sys.executable} "
                                f"does not have: in a kafkalite checkout run `make run` or `tools/bootstrap.sh "
                                f"venv`, or install it into this Python: {sys.executable} -m pip install "
                                f"'confluent-kafka>=2.4'")
    assert "kafkalite[" not in p.stderr
