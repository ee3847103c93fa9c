"""``kafkalite groups`` end to end against an embedded broker: lag per partition exactly as committed by a
real consumer, reset-offsets' Kafka semantics (refused for an active group, clamped, dry run by default),
delete (refused for a group with members)."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent


@pytest.fixture(scope="module")
def bs() -> Iterator[str]:
    with Broker() as b:
        yield b.bootstrap_servers


def _produce(bs: str, topic: str, per_partition: dict[int, int]) -> None:
    ck = need_confluent()
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 1})
    for part, n in per_partition.items():
        for i in range(n):
            p.produce(topic, value=b"v%d" % i, partition=part)
    assert p.flush(30) == 0


def _member(bs: str, group: str, topic: str) -> Any:
    """A subscribed consumer that has joined ``group`` (state Stable) and polls in the test's thread."""
    ck = need_confluent()
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.2)
    assert c.assignment(), "the consumer did not join its group"
    return c


def _committed(bs: str, group: str, topic: str, parts: int) -> list[int]:
    ck = need_confluent()
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        return [tp.offset for tp in c.committed([ck.TopicPartition(topic, p) for p in range(parts)], timeout=30)]
    finally:
        c.close()


def test_describe_shows_exact_lag_and_members(bs: str) -> None:
    ck = need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "gl", "--partitions", "3").code == 0
    _produce(bs, "gl", {0: 10, 1: 7, 2: 0})
    c = _member(bs, "g-lag", "gl")
    c.commit(offsets=[ck.TopicPartition("gl", 0, 4), ck.TopicPartition("gl", 1, 7)], asynchronous=False)
    d = cli(bs, "groups", "--describe", "--group", "g-lag", "--json").json()[0]
    assert d["state"] == "Stable" and len(d["members"]) == 1
    member = d["members"][0]["member_id"]
    assert sorted(map(tuple, d["members"][0]["assignment"])) == [("gl", 0), ("gl", 1), ("gl", 2)]
    assert [(o["partition"], o["current_offset"], o["log_end_offset"], o["lag"], o["member_id"])
            for o in d["offsets"]] == [(0, 4, 10, 6, member), (1, 7, 7, 0, member), (2, None, 0, None, member)]
    rows = cli(bs, "groups", "--describe", "--group", "g-lag").rows()
    assert [r[:6] for r in rows] == [["g-lag", "gl", "0", "4", "10", "6"], ["g-lag", "gl", "1", "7", "7", "0"],
                                     ["g-lag", "gl", "2", "-", "0", "-"]]
    assert cli(bs, "groups", "--describe", "--group", "g-lag", "--members").rows()[0][:2] == ["g-lag", member]
    assert cli(bs, "groups", "--describe", "--group", "g-lag", "--members", "--verbose").rows()[0][4:] == \
        ["3", "gl(0,1,2)"]
    assert cli(bs, "groups", "--describe", "--group", "g-lag", "--state").rows()[0][3:] == ["Stable", "1"]
    assert ["g-lag", "Stable"] in cli(bs, "groups", "--list", "--state").rows()
    # more records: the lag grows by exactly that many
    _produce(bs, "gl", {0: 5})
    d = cli(bs, "groups", "--describe", "--group", "g-lag", "--json").json()[0]
    assert d["offsets"][0]["lag"] == 11
    # an active group can be neither reset nor deleted, and nothing changes
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-lag", "--all-topics", "--to-earliest", "--execute")
    assert r.code == 1 and ("Assignments can only be reset if the group 'g-lag' is inactive, but the current "
                            "state is Stable.") in r.err
    r = cli(bs, "groups", "--delete", "--group", "g-lag")
    assert r.code == 1 and "NON_EMPTY_GROUP" in r.err
    assert _committed(bs, "g-lag", "gl", 2) == [4, 7]
    c.close()
    d = cli(bs, "groups", "--describe", "--group", "g-lag", "--json").json()[0]
    assert d["state"] == "Empty" and d["members"] == []
    assert [(o["partition"], o["lag"]) for o in d["offsets"]] == [(0, 11), (1, 0)]


def test_reset_offsets_scenarios(bs: str, tmp_path: Path) -> None:
    ck = need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "gr", "--partitions", "2").code == 0
    _produce(bs, "gr", {0: 10})
    time.sleep(0.01)
    mark = int(time.time() * 1000)
    time.sleep(0.01)
    _produce(bs, "gr", {0: 5, 1: 3})
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "g-reset"})
    c.commit(offsets=[ck.TopicPartition("gr", 0, 12), ck.TopicPartition("gr", 1, 1)], asynchronous=False)
    c.close()

    def plan(*argv: str) -> list[tuple[int, int]]:
        r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", *argv, "--json")
        assert r.code == 0, r.err
        return [(o["partition"], o["new_offset"]) for o in r.json()["offsets"]]

    # dry runs (the default) change nothing
    assert plan("--topic", "gr", "--to-earliest") == [(0, 0), (1, 0)]
    assert plan("--topic", "gr", "--to-latest", "--dry-run") == [(0, 15), (1, 3)]
    assert plan("--topic", "gr:1", "--to-offset", "2") == [(1, 2)]
    assert plan("--all-topics", "--shift-by", "-2") == [(0, 10), (1, 0)]       # 1 - 2 clamped to 0
    assert plan("--all-topics", "--shift-by", "100") == [(0, 15), (1, 3)]      # clamped to the end
    assert plan("--topic", "gr", "--to-datetime", str(mark)) == [(0, 10), (1, 0)]
    assert plan("--topic", "gr", "--by-duration", "P1D") == [(0, 0), (1, 0)]
    assert plan("--topic", "gr", "--to-current") == [(0, 12), (1, 1)]
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", "--topic", "gr", "--to-offset", "99")
    assert "New offset (99) is higher than latest offset for topic partition gr-0. Value will be set to 15" in r.err
    assert "No action will be performed as the --execute option is missing" in r.err
    assert _committed(bs, "g-reset", "gr", 2) == [12, 1]
    # --execute commits them
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", "--topic", "gr:0", "--to-offset", "3",
            "--execute")
    assert r.code == 0 and r.rows() == [["g-reset", "gr", "0", "3"]]
    assert _committed(bs, "g-reset", "gr", 2) == [3, 1]
    # a group that does not exist yet can be given offsets (Kafka allows it: state Dead)
    assert cli(bs, "groups", "--reset-offsets", "--group", "g-new", "--topic", "gr", "--to-latest",
               "--execute").code == 0
    assert _committed(bs, "g-new", "gr", 2) == [15, 3]
    # --export writes the plan as CSV, --from-file reads it back (clamped like --to-offset)
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", "--topic", "gr", "--to-earliest", "--export")
    assert r.out == "gr,0,0\ngr,1,0\n"
    plan_file = tmp_path / "plan.csv"
    plan_file.write_text("gr,0,7\n\ng-reset,gr,1,99\nother-group,gr,1,1\n")
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", "--from-file", str(plan_file), "--execute")
    assert r.code == 0 and r.rows() == [["g-reset", "gr", "0", "7"], ["g-reset", "gr", "1", "3"]]
    assert _committed(bs, "g-reset", "gr", 2) == [7, 3]
    plan_file.write_text("gr,0\n")
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", "--from-file", str(plan_file))
    assert r.code == 2 and "line 1: expected topic,partition,offset" in r.err
    plan_file.write_text("gr,5,1\n")
    r = cli(bs, "groups", "--reset-offsets", "--group", "g-reset", "--from-file", str(plan_file))
    assert r.code == 1 and "gr-5 does not exist" in r.err
    # delete an inactive group: its offsets are gone
    r = cli(bs, "groups", "--delete", "--group", "g-new")
    assert (r.code, r.out) == (0, "Deletion of requested consumer groups ('g-new') was successful.\n")
    assert "g-new" not in cli(bs, "groups", "--list").out.split()


def test_groups_bad_input(bs: str) -> None:
    need_confluent()
    for argv, code, text in [
        (("groups",), 2, "one of the arguments"),
        (("groups", "--describe"), 2, "needs --group or --all-groups"),
        (("groups", "--reset-offsets", "--group", "g", "--to-earliest"), 2, "--topic or --all-topics"),
        (("groups", "--reset-offsets", "--group", "g", "--all-topics"), 2, "needs one of --to-earliest"),
        (("groups", "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-latest"), 2,
         "not allowed with"),
        (("groups", "--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "1h"), 2,
         "expected an ISO-8601 duration"),
        (("groups", "--reset-offsets", "--group", "g", "--topic", "nosuch", "--to-earliest"), 1,
         "Topic 'nosuch' does not exist"),
        (("groups", "--list", "--execute"), 2, "options of --reset-offsets"),
        (("groups", "--describe", "--group", "never-seen"), 1, "Consumer group 'never-seen' does not exist."),
    ]:
        r = cli(bs, *argv)
        assert r.code == code and text in r.err, (argv, r)
