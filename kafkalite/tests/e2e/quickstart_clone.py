"""``make quickstart``: the README's quick start from a clean clone, as a newcomer types it.

``git clone`` of this repository's HEAD (committed files only), then in the clone ``make run`` (which makes the
clone's own ``.venv`` with ``tools/bootstrap.sh venv``: minutes, packages from the index or pip's cache),
waiting for its ready line; then every command of the README's CLI block with the clone's
``.venv/bin/kafkalite``, each answering what the README says; ``.venv/bin/kafkalite --version``; Ctrl-C stops
the broker cleanly. The broker listens on a free port (``make run ARGS="--listen ..."``, as the README
documents) and the commands find it through ``$KAFKALITE_BOOTSTRAP_SERVER`` (kafkalite/tests/support/quickstart.py
says why). Not part of ``make test`` (the file name keeps pytest from collecting it there);
kafkalite/tests/e2e/test_quickstart.py is its quick slice, in this checkout's venv.
"""
from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kafkalite.tests.support.quickstart import ROOT, check_answers, readme_quick_start, type_commands

SETUP_TIMEOUT = 1800   # a fresh venv: pip installs the project and its dev tools


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(SETUP_TIMEOUT + 600)
def test_readme_quick_start_from_a_clean_clone(tmp_path: Path) -> None:
    clone = tmp_path / "kafkalite"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=600)
    quick = readme_quick_start(clone / "README.md")
    assert quick.run == "make run"
    # a newcomer's shell: no PYTHONPATH pointing into another checkout, no kafkalite settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_") and k != "PYTHONPATH"}
    port = _free_port()
    started = time.monotonic()
    make = subprocess.Popen(["make", "run", f"ARGS=--listen 127.0.0.1:{port}"], cwd=clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert make.stdout is not None
        for line in make.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        while True:
            line = lines.get(timeout=max(1.0, SETUP_TIMEOUT - (time.monotonic() - started)))
            assert line is not None, "make run ended before the broker was ready:\n" + "".join(seen[-50:])
            seen.append(line)
            if line.startswith("kafkalite ready on "):
                break
        setup_s = time.monotonic() - started
        assert line.strip() == f"kafkalite ready on 127.0.0.1:{port}"
        # make run says where the CLI is
        assert any(".venv/bin/kafkalite" in ln for ln in seen), "".join(seen)
        done = type_commands(quick, clone, f"127.0.0.1:{port}", env)
        check_answers(quick, done)
        version = subprocess.run([str(clone / ".venv/bin/kafkalite"), "--version"], capture_output=True, text=True,
                                 env=env, timeout=60)
        assert version.returncode == 0 and version.stdout.startswith("kafkalite "), version
        os.killpg(make.pid, signal.SIGINT)             # Ctrl-C in make run's terminal
        make.wait(120)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait(30)
    assert (clone / "kafkalite-data" / ".kafka_cleanshutdown").exists(), "".join(seen[-30:])
    print(f"make run in a clean clone: ready after {setup_s:.0f} s (venv set up from scratch)")
