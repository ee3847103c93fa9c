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

from kafkalite.cli import _build_parser
from kafkalite.embedded import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent
from kafkalite.tools.common import (
    ToolError,
    client_config,
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


@pytest.mark.e2e
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


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port that refuses connections (bound, never listening) for the test's duration."""
    import socket  # lazy: this fixture alone binds a port

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


TOOLS_AGAINST_NOTHING = [
    ("topics", "--list"),
    ("groups", "--list"),
    ("groups", "--describe", "--group", "g"),
    ("configs", "--describe", "--entity-type", "topics", "--entity-name", "t"),
    ("acls", "--list"),
    ("scram", "--describe"),
    ("produce", "--topic", "t"),
    ("consume", "--topic", "t"),
]


@pytest.mark.parametrize("argv", TOOLS_AGAINST_NOTHING, ids=" ".join)
def test_tools_against_no_broker_end_with_one_line(argv: tuple[str, ...], dead_port: int) -> None:
    """No broker at the address: exit 1 with one line of our own, none of librdkafka's connection log (it
    printed ~580 lines over 30 s before). --bootstrap-timeout bounds the wait (1 s here)."""
    need_confluent()
    p = subprocess.run([sys.executable, "-m", "kafkalite", *argv, "--bootstrap-server", f"127.0.0.1:{dead_port}",
                        "--bootstrap-timeout", "1000"], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and p.stdout == "", p
    assert p.stderr.splitlines() == [f"kafkalite {argv[0]}: error: cannot reach a broker at 127.0.0.1:{dead_port} "
                                     f"within 1 s (--bootstrap-timeout): Failed to get metadata: Local: Broker "
                                     f"transport failure"], p.stderr


def test_default_bootstrap_wait_and_the_client_log_on_request(dead_port: int) -> None:
    """By default a tool waits 5 s for a first answer (the line says so); --verbose shows librdkafka's own log
    and --debug its debug contexts, each on top of the tool's line."""
    need_confluent()
    base = [sys.executable, "-m", "kafkalite", "topics", "--list", "--bootstrap-server", f"127.0.0.1:{dead_port}"]
    p = subprocess.run(base, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1 and "within 5 s" in p.stderr, p
    for flag in (["--verbose"], ["--debug", "broker"]):
        p = subprocess.run([*base, "--bootstrap-timeout", "1000", *flag], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        lines = p.stderr.splitlines()   # librdkafka may still log while the client shuts down
        ours = [ln for ln in lines if ln.startswith("kafkalite topics: error: cannot reach")]
        assert p.returncode == 1 and len(ours) == 1, p
        assert any("rdkafka" in ln for ln in lines if ln not in ours), (flag, p.stderr)


def test_an_unknown_option_gets_the_commands_own_usage() -> None:
    p = subprocess.run([sys.executable, "-m", "kafkalite", "topics", "--list", "--bogus"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("usage: kafkalite topics ") and p.stderr.splitlines()[-1] == (
        "kafkalite topics: error: unrecognized arguments: --bogus")


def test_kafkas_console_tool_option_names_reach_the_client() -> None:
    """--producer.config / --consumer.config are --command-config; --producer-property / --consumer-property
    K=V are applied last; --request-required-acks is --acks."""
    args = _build_parser("produce").parse_args(["produce", "--topic", "t", "--producer.config", "/dev/null",
                                                "--producer-property", "linger.ms=7", "--request-required-acks",
                                                "1"])
    assert (args.command_config, args.acks) == ("/dev/null", "1")
    assert client_config(args, **{"linger.ms": 5})["linger.ms"] == "7"
    args = _build_parser("consume").parse_args(["consume", "--topic", "t", "--consumer.config", "/dev/null",
                                                "--consumer-property", "fetch.wait.max.ms=10"])
    assert args.command_config == "/dev/null" and client_config(args)["fetch.wait.max.ms"] == "10"
    with pytest.raises(ToolError):
        client_config(_build_parser("consume").parse_args(["consume", "--topic", "t", "--consumer-property", "x"]))
