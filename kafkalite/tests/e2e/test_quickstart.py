"""The README's quick start, typed as a newcomer types it, in this checkout's venv: the broker started the way
``make run`` starts it (the Makefile's recipe, after ``tools/bootstrap.sh venv``, which made this venv), then
every command of the README's CLI block, each answering what the README says. ``make quickstart`` does the same
from a clean clone with ``make run`` itself (kafkalite/tests/e2e/quickstart_clone.py; it installs a venv, so it
takes minutes)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from kafkalite.tests.support.quickstart import ROOT, check_answers, readme_quick_start, type_commands
from kafkalite.tests.support.requires import require


def _run_recipe() -> list[str]:
    """The Makefile's ``run:`` recipe lines."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    body = re.search(r"^run:.*\n((?:\t.*\n)+)", text, re.M)
    assert body, "no run: target in the Makefile"
    return [ln.strip() for ln in body.group(1).splitlines()]


def test_readme_quick_start_in_this_checkout(tmp_path: Path) -> None:
    require("confluent_kafka")
    quick = readme_quick_start()
    assert quick.run == "make run"
    recipe = _run_recipe()
    assert recipe[0] == "@tools/bootstrap.sh venv" and recipe[-1] == "$(PY) -m kafkalite serve $(ARGS)", recipe
    (tmp_path / ".venv").symlink_to(sys.prefix)      # `.venv/bin/kafkalite`, as the README types it
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")},
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # `make run` with no ARGS but a free port: data in ./kafkalite-data, as the README says
    broker = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0"], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None
        ready = broker.stdout.readline()
        assert ready.startswith("kafkalite ready on 127.0.0.1:"), ready
        done = type_commands(quick, tmp_path, ready.split()[-1], env)
        check_answers(quick, done)
        broker.send_signal(signal.SIGINT)             # Ctrl-C: a clean stop
        assert broker.wait(60) == 0
    finally:
        if broker.poll() is None:
            broker.kill()
        broker.communicate()
    assert (tmp_path / "kafkalite-data" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "kafkalite-data" / "orders-0").is_dir()
