"""Startup failures of ``kafkalite serve`` and ``kafkalite.Broker``: one line that names the key, file or
address, exit code 2 for usage/configuration errors and 1 for runtime ones, no traceback; an embedded broker
that cannot start removes the temporary directory it made."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kafkalite.embedded import Broker, BrokerStartError
from kafkalite.errors import ConfigError


def serve(*args: str, timeout: float = 60) -> tuple[int, list[str]]:
    """Run ``kafkalite serve`` expecting it to fail at start: (exit code, stderr lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.run([sys.executable, "-m", "kafkalite", "serve", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert "kafkalite ready" not in proc.stdout
    return proc.returncode, proc.stderr.splitlines()


def one_error(lines: list[str]) -> str:
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    errors = [line for line in lines if line.startswith("kafkalite: error: ")]
    assert len(errors) == 1, "\n".join(lines)
    return errors[0]


@pytest.mark.parametrize(("args", "expected"), [
    (["--listen", "127.0.0.1:99999"], "port 99999 is outside 0-65535"),
    (["--log-level", "LOUD"], "--log-level 'LOUD'"),
    (["--logger", "kafka.request.logger=LOUD"], "--logger 'kafka.request.logger=LOUD': expected NAME=LEVEL"),
    (["--logger", "kafka.request.logger"], "--logger 'kafka.request.logger': expected NAME=LEVEL"),
    (["--override", "log.segment.bytes=10"],
     "Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576"),
    (["--override", "num.partitions=-1"], "num.partitions: Value must be at least 1"),
    (["--override", "message.max.bytes=lots"], "message.max.bytes: Not a number of type INT"),
    (["--override", "auto.create.topics.enable=yes"], "auto.create.topics.enable: Expected value to be either"),
    (["--override", "listeners=SSL://127.0.0.1:0"], "listener SSL uses TLS but has no key store"),
    (["--override", "listeners=EXTERNAL://127.0.0.1:0",
      "--override", "listener.security.protocol.map=EXTERNAL:SASL_PLAINTEXT",
      "--override", "sasl.enabled.mechanisms=GSSAPI"], "GSSAPI not supported"),
    (["--config", "no-such.properties"], "config file no-such.properties: no such file"),
    (["--brokers", "0"], "--brokers 0: expected 1-64"),
    (["--brokers", "-2"], "--brokers -2: expected 1-64"),
    (["--brokers", "65"], "--brokers 65: expected 1-64"),
])
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    code, lines = serve("--data-dir", str(tmp_path / "data"), *args)
    assert code == 2
    assert expected in one_error(lines)
    assert not (tmp_path / "data").exists()     # refused before anything was created


def test_a_config_file_that_does_not_parse(tmp_path: Path) -> None:
    bad = tmp_path / "server.properties"
    bad.write_bytes(b"\x00\xff\xfe garbage")
    code, lines = serve("--data-dir", str(tmp_path / "data"), "--config", str(bad))
    assert code == 2
    assert f"config file {bad}: not a properties file" in one_error(lines)


def test_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "afile"
    path.write_text("x")
    code, lines = serve("--listen", "127.0.0.1:0", "--data-dir", str(path))
    assert code == 2
    assert f"{path} is not a directory" in one_error(lines)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write anywhere")
def test_a_data_dir_without_permission(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o555)
    code, lines = serve("--listen", "127.0.0.1:0", "--data-dir", str(locked / "data"))
    assert code == 2
    assert "permission denied" in one_error(lines)


def test_a_data_dir_held_by_another_broker(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path):
        code, lines = serve("--listen", "127.0.0.1:0", "--data-dir", str(tmp_path))
    assert code == 1
    line = one_error(lines)
    assert str(tmp_path) in line and "another broker" in line


def test_an_address_in_use_is_named(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, lines = serve("--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path))
    assert code == 1
    line = one_error(lines)
    assert f"127.0.0.1:{port}" in line and "Address already in use" in line


def test_unknown_and_unimplemented_keys_are_warned_and_a_fresh_dir_is_not_unclean(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path),
         "--override", "no.such.setting=1", "--override", "zookeeper.connect=localhost:2181",
         "--override", "background.threads=4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("kafkalite ready on ")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "unknown config keys, ignored: no.such.setting" in err
    assert "Kafka settings kafkalite does not implement, ignored: background.threads, zookeeper.connect" in err
    assert "unclean" not in err and "new log dir" in err


def test_logger_option_sets_one_loggers_level(tmp_path: Path) -> None:
    """``--logger kafka.request.logger=DEBUG``: Kafka's request log on from the start, the rest at --log-level."""
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import MetadataRequest

    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path),
         "--log-level", "WARN", "--logger", "kafka.request.logger=debug"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    host, _, port = proc.stdout.readline().strip().rpartition(" ")[2].rpartition(":")
    with RawClient(host, int(port)) as c:
        c.request(MetadataRequest(topics=[]), 12)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "DEBUG kafka.request.logger: Completed request: Metadata v12 correlation id" in err, err
    assert "INFO" not in err   # everything else at WARN


# -- the embedded broker -------------------------------------------------------------------------------

def _kafkalite_temp_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("kafkalite-*")}


def test_embedded_broker_with_a_bad_setting_raises_before_making_a_temp_dir() -> None:
    before = _kafkalite_temp_dirs()
    with pytest.raises(ConfigError, match="num.partitions"):
        Broker(overrides={"num.partitions": "0"})
    assert _kafkalite_temp_dirs() == before


def test_embedded_broker_that_cannot_start_removes_its_temp_dir() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        b = Broker(port=taken.getsockname()[1])
        assert b.data_dir.is_dir()
        with pytest.raises(BrokerStartError, match="Address already in use") as info:
            b.start()
    assert "\n" not in str(info.value)
    assert not b.data_dir.exists()
    b.stop()    # still idempotent


def test_embedded_broker_on_a_held_data_dir_keeps_the_callers_dir(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path):
        with pytest.raises(BrokerStartError, match="another broker"):
            Broker(data_dir=tmp_path).start()
        assert tmp_path.is_dir()
