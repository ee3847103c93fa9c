"""``make run`` and the Docker image say where the console and metrics are; the image's commands are real.

No Docker daemon is needed: the Dockerfile is read as data (its ENTRYPOINT, HEALTHCHECK, ENV, EXPOSE and COPY
lines checked against the project's own entry points, config keys and files), and the container's command is
run as a process with the image's environment (addresses moved to loopback and free ports).
"""
from __future__ import annotations

import json
import os
import queue
import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
import urllib.request
from pathlib import Path

import pytest

from kafkalite.cli import COMMANDS
from kafkalite.config.broker import DEFAULTS, env_overrides
from kafkalite.httpd.server import public_url

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, rest = line.partition(" ")
        if op.upper() == "FROM":
            out = [("FROM", rest)] if " AS " not in rest.upper() else [*out, ("FROM", rest)]
            continue
        out.append((op.upper(), rest.strip()))
    return out


def _all_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    return [(ln.split(" ", 1)[0].upper(), ln.split(" ", 1)[1].strip()) for ln in text.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def _image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for op, rest in _dockerfile():
        if op == "ENV":
            for item in shlex.split(rest):
                k, _, v = item.partition("=")
                env[k] = v
    return env


def _exec_form(rest: str) -> list[str]:
    value = json.loads(rest)
    assert isinstance(value, list) and all(isinstance(x, str) for x in value), rest
    return value


def test_dockerfile_commands_are_real_entry_points() -> None:
    steps = _dockerfile()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    entry = _exec_form(next(r for op, r in steps if op == "ENTRYPOINT"))
    assert entry[0] in scripts and entry[1] == "serve" and "serve" in COMMANDS
    health = next(r for op, r in steps if op == "HEALTHCHECK")
    cmd = _exec_form(health.split(" CMD ", 1)[1])
    assert cmd[0] in scripts and cmd[1] in COMMANDS
    # the health command's options parse with its own parser
    from kafkalite.cli import _build_parser

    _build_parser(cmd[1]).parse_args(cmd[1:])
    # every KAFKALITE_* variable names a broker setting serve knows
    env = _image_env()
    keys = env_overrides({k: v for k, v in env.items() if k.startswith("KAFKALITE_")})
    assert keys and all(k in DEFAULTS for k in keys), sorted(set(keys) - set(DEFAULTS))
    # the exposed ports are the ones the broker, console, metrics and schema registry listen on
    exposed = {int(p) for op, r in steps if op == "EXPOSE" for p in r.split()}
    ports = {int(env["KAFKALITE_LISTENERS"].rsplit(":", 1)[1]),
             int(env["KAFKALITE_CONSOLE_LISTEN"].rsplit(":", 1)[1]),
             int(env["KAFKALITE_METRICS_LISTEN"].rsplit(":", 1)[1]),
             int(env["KAFKALITE_SCHEMA_REGISTRY_LISTEN"].rsplit(":", 1)[1])}
    assert exposed == ports
    # the wheel is installed with extras that exist
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for _op, r in steps:
        for extra in re.findall(r"\.whl\)?\[(\w+)\]", r):
            assert extra in extras
    # COPY sources of the build stage exist and .dockerignore keeps what the wheel build needs
    for op, r in _all_instructions():
        if op == "COPY" and not r.startswith("--from"):
            for src in r.split()[:-1]:
                assert (ROOT / src).exists(), src
    ignored = {ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip()}
    for needed in ("kafkalite", "kafkalite_wire", "kafkalite_storage", "pyproject.toml", "setup.py", "README.md"):
        assert needed not in ignored


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lines(stream, q: queue.Queue[str]) -> None:
    for line in stream:
        q.put(line)
    q.put("")


def _wait_for(q: queue.Queue[str], *needles: str) -> dict[str, str]:
    """The first stderr line holding each needle (fails on EOF or after TIMEOUT seconds)."""
    found: dict[str, str] = {}
    seen = []
    while len(found) < len(needles):
        try:
            line = q.get(timeout=TIMEOUT)
        except queue.Empty:
            pytest.fail(f"no {needles} within {TIMEOUT}s; stderr so far:\n{''.join(seen)}")
        if not line:
            pytest.fail(f"the broker exited; stderr:\n{''.join(seen)}")
        seen.append(line)
        for n in needles:
            if n in line and n not in found:
                found[n] = line
    return found


def _health(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalite", "health", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)


def _serve(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    q: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stderr, q), daemon=True).start()
    return proc, q


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=TIMEOUT)


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.read()


def test_run_prints_where_console_and_metrics_are(tmp_path: Path) -> None:
    """What ``make run ARGS="--console --metrics"`` runs (the Makefile's recipe, read below) prints the two
    addresses, and each answers there."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "-m kafkalite serve $(ARGS)" in recipe
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc, q = _serve(env, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                     "--console", "127.0.0.1:0", "--metrics", "127.0.0.1:0")
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("kafkalite ready on 127.0.0.1:")
        found = _wait_for(q, "console at ", "metrics at ")
        console = found["console at "].split("console at ", 1)[1].split()[0]
        metrics = found["metrics at "].split("metrics at ", 1)[1].split()[0]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", console), console
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/metrics", metrics), metrics
        status, page = _get(console)
        assert status == 200 and b"<html" in page.lower()
        status, body = _get(metrics)
        assert status == 200 and b"kafka_server_" in body
        port = metrics.rsplit(":", 1)[1].split("/")[0]
        ok = _health(env, "--url", f"http://127.0.0.1:{port}/health")
        assert ok.returncode == 0 and ok.stdout.startswith("ok"), ok
    finally:
        _stop(proc)
    gone = _health(env, "--url", f"http://127.0.0.1:{port}/health", "--timeout", "2")
    assert gone.returncode == 1 and "kafkalite health:" in gone.stderr


def test_container_command_with_the_image_environment(tmp_path: Path) -> None:
    """The image's ENTRYPOINT and HEALTHCHECK, run as processes with its ENV (0.0.0.0 -> 127.0.0.1, the ports
    -> free ones, /data -> a temporary directory): the log names the console, metrics and schema registry (which
    answers), the health check
    passes while the broker runs and fails once it is gone."""
    steps = _dockerfile()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    ports = {}
    for k, v in _image_env().items():
        if k.startswith("KAFKALITE_"):
            for port in re.findall(r":(\d+)$", v):
                ports.setdefault(port, str(_free_port()))
                v = v[: -len(port)] + ports[port]
            env[k] = v.replace("0.0.0.0", "127.0.0.1").replace("/data", str(tmp_path / "data"))
    entry = _exec_form(next(r for op, r in steps if op == "ENTRYPOINT"))
    health = _exec_form(next(r for op, r in steps if op == "HEALTHCHECK").split(" CMD ", 1)[1])
    proc, q = _serve(env, *entry[2:])
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("kafkalite ready on 127.0.0.1:")
        found = _wait_for(q, "console at ", "metrics at ", "schema registry at ")
        assert f":{ports['8080']}/" in found["console at "] and f":{ports['9404']}/metrics" in found["metrics at "]
        assert f":{ports['8081']}/" in found["schema registry at "]
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['8081']}/schemas/types", timeout=TIMEOUT) as resp:
            assert json.loads(resp.read()) == ["JSON", "PROTOBUF", "AVRO"]
        ok = _health(env, *health[2:])
        assert ok.returncode == 0 and f":{ports['9404']}/health" in ok.stdout, ok
        # with metrics off, the check falls back to the broker's listener
        no_metrics = {**env, "KAFKALITE_METRICS_LISTEN": ""}
        tcp = _health(no_metrics, *health[2:])
        assert tcp.returncode == 0 and f":{ports['9092']}" in tcp.stdout, tcp
    finally:
        _stop(proc)
    assert proc.returncode == 0
    assert _health(env, *health[2:]).returncode == 1


def test_wildcard_addresses_are_shown_as_localhost() -> None:
    assert public_url(("0.0.0.0", 8080), "/") == "http://localhost:8080/"
    assert public_url(("::", 9404), "/metrics") == "http://localhost:9404/metrics"
    assert public_url(("127.0.0.1", 1), "/") == "http://127.0.0.1:1/"
    assert public_url(("::1", 2), "/x") == "http://[::1]:2/x"
