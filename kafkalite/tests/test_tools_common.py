"""The tools' shared parsing and output rules (kafkalite.tools.common), and Ctrl-C on a following consumer."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.tools_helpers import cli, need_confluent
from kafkalite.tools.common import (
    ToolError,
    parse_datetime_ms,
    parse_duration_ms,
    split_kv,
    table,
)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tables_align_on_a_terminal_and_are_tab_separated_in_a_pipe() -> None:
    tty, pipe = _Tty(), io.StringIO()
    rows = [["orders", 0, None], ["a-much-longer-name", 12, "x"]]
    table(["TOPIC", "P", "NOTE"], rows, tty)
    table(["TOPIC", "P", "NOTE"], rows, pipe)
    assert tty.getvalue().splitlines() == ["TOPIC               P   NOTE",
                                           "orders              0   -",
                                           "a-much-longer-name  12  x"]
    assert pipe.getvalue().splitlines() == ["TOPIC\tP\tNOTE", "orders\t0\t-", "a-much-longer-name\t12\tx"]


def test_key_value_lists_durations_and_times() -> None:
    assert split_kv(["a=1,b=[x,y]", "c="], "--add-config") == {"a": "1", "b": "x,y", "c": ""}
    with pytest.raises(ToolError) as exc:
        split_kv(["a=1,oops"], "--add-config")
    assert exc.value.code == 2 and "'oops'" in str(exc.value)
    assert parse_duration_ms("PT1H30M") == 5_400_000
    assert parse_duration_ms("P1DT0.5S") == 86_400_500
    assert parse_duration_ms("-PT1M") == -60_000
    for bad in ("P", "1h", "PT"):
        with pytest.raises(ToolError):
            parse_duration_ms(bad)
    assert parse_datetime_ms("1700000000000") == 1_700_000_000_000
    assert parse_datetime_ms("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_datetime_ms("2023-11-14T22:13:20.250+00:00") == 1_700_000_000_250
    with pytest.raises(ToolError):
        parse_datetime_ms("last tuesday")


@pytest.fixture(scope="module")
def bs() -> Iterator[str]:
    with Broker() as b:
        yield b.bootstrap_servers


def test_ctrl_c_ends_a_following_consumer_cleanly(bs: str) -> None:
    need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "follow").code == 0
    assert cli(bs, "produce", "--topic", "follow", stdin=b"one\ntwo\n").code == 0
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "consume", "--bootstrap-server", bs, "--topic",
                             "follow", "--from-beginning"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline(), proc.stdout.readline()] == ["one\n", "two\n"]
        # still following: a record produced now arrives
        assert cli(bs, "produce", "--topic", "follow", stdin=b"three\n").code == 0
        assert proc.stdout.readline() == "three\n"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and out == ""
    assert "Processed a total of 3 messages" in err and "Traceback" not in err
