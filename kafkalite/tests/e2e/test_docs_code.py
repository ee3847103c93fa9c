"""Every code block of README.md and docs/ runs, so the docs stay true.

A block runs unless the line right before its opening fence marks it::

    <!-- docs-test: skip: why it does not run (and where what it shows is tested) -->

Other markers (one per line, right before the fence; several may stack):

- ``<!-- docs-test: pytest -->``: the block is a test module: it runs under pytest (with kafkalite's plugin).
- ``<!-- docs-test: requires: pyspark -->``: what it needs (kafkalite/tests/support/requires.py: skipped loudly
  without it, a failure under CI=true).
- ``<!-- docs-test: setup: SHELL COMMAND -->``: run first (e.g. the records a snippet reads).

How a block runs, as a reader who follows the page would run it: the blocks of one page in order, against one
broker started for that page (``python -m kafkalite serve``), ``127.0.0.1:9092`` / ``localhost:9092`` in the
text replaced by its address and ``$KAFKALITE_BOOTSTRAP_SERVER`` set to it (the tools' default), in a scratch
directory where ``.venv`` is this interpreter's venv and its ``bin`` is first on ``PATH``. ``python`` blocks run
as a script, ``sh``/``bash`` blocks (and blocks without a language) with ``bash -euo pipefail``; a block in any
other language must be marked. Each block has to exit 0 within its time limit.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafkalite.tests.support.requires import require

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TIMEOUT = 300      # a hang fails; Spark's first start on a loaded machine takes a while
SHELL = {"", "sh", "bash", "shell"}
PYTHON = {"python", "py"}
_MARKER = re.compile(r"^<!-- docs-test: (skip|pytest|requires|setup)(?::\s*(.*?))?\s*-->$")
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")

#: the blocks that run (unmarked); a new block either runs or says why it does not, and this number moves
RUN = 11


@dataclass
class Block:
    page: Path
    line: int          # of the opening fence, 1-based
    lang: str
    code: str
    skip: str | None = None
    pytest: bool = False
    requires: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's code blocks with their markers; a malformed marker or one not followed by a fence is an error."""
    lines = page.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    pending: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("<!-- docs-test"):   # indented with its block inside a list item
            m = _MARKER.match(line.strip())
            assert m, f"{page.relative_to(ROOT)}:{i + 1}: malformed docs-test marker {line!r}"
            pending.append((i + 1, m.group(1), m.group(2) or ""))
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            indent, lang = fence.group(1), fence.group(2)
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            assert end < len(lines), f"{page.relative_to(ROOT)}:{i + 1}: unclosed code block"
            code = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:end]) + "\n"
            block = Block(page, i + 1, lang, code)
            for at, kind, value in pending:
                if kind == "skip":
                    assert value, f"{page.relative_to(ROOT)}:{at}: a skip marker says why"
                    block.skip = value
                elif kind == "pytest":
                    block.pytest = True
                elif kind == "requires":
                    block.requires += value.split()
                else:
                    block.setup.append(value)
            out.append(block)
            pending = []
            i = end + 1
            continue
        assert not pending, f"{page.relative_to(ROOT)}:{pending[0][0]}: a docs-test marker not right before a code block"
        i += 1
    assert not pending, f"{page.relative_to(ROOT)}:{pending[0][0]}: a docs-test marker not right before a code block"
    return out


ALL = [b for page in PAGES for b in blocks(page)]
RUNNABLE = [b for b in ALL if b.skip is None]


def test_every_block_runs_or_says_why_not() -> None:
    assert len(ALL) > 70   # the parser found the docs' blocks (README.md and docs/ hold about 80)
    odd = [f"{b.where} ({b.lang})" for b in RUNNABLE if b.lang not in SHELL | PYTHON]
    assert odd == [], f"blocks that neither run nor say why (mark them <!-- docs-test: skip: why -->): {odd}"
    pytest_blocks = [b.where for b in RUNNABLE if b.pytest and b.lang not in PYTHON]
    assert pytest_blocks == []
    assert len(RUNNABLE) == RUN, [b.where for b in RUNNABLE]


def _start_broker(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                             str(tmp / "broker-data"), "--log-level", "WARNING"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("kafkalite ready on "):
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the broker did not start: {line!r}\n{err[-2000:]}")
    return proc, line.split()[-1]


def _environment(address: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "KAFKALITE_BOOTSTRAP_SERVER": address, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def _run(block: Block, address: str, cwd: Path) -> None:
    code = block.code.replace("127.0.0.1:9092", address).replace("localhost:9092", address)
    env = _environment(address)
    for command in block.setup:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert proc.returncode == 0, f"{block.where}: setup {command!r} failed:\n{proc.stderr[-3000:]}"
    if block.pytest:
        script = cwd / f"test_docs_{block.line}.py"
        script.write_text(code, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)]
    elif block.lang in PYTHON:
        script = cwd / f"docs_block_{block.line}.py"
        script.write_text(code, encoding="utf-8")
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", code]
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: still running after {TIMEOUT} s:\n{code}")
    assert proc.returncode == 0, (f"{block.where} exited {proc.returncode}:\n{code}\n--- stdout:\n"
                                  f"{proc.stdout[-3000:]}\n--- stderr:\n{proc.stderr[-3000:]}")


def _pages() -> list[object]:
    """One test per page with blocks to run; a page whose blocks start Spark is one of the heavy ecosystem
    scenarios (``make ecosystem``; a minute or two here), the others run in ``make test``."""
    out: list[object] = []
    for page in sorted({b.page for b in RUNNABLE}):
        heavy = any("pyspark" in b.requires for b in RUNNABLE if b.page == page)
        out.append(pytest.param(page, id=str(page.relative_to(ROOT)), marks=[pytest.mark.ecosystem] if heavy else []))
    return out


@pytest.mark.parametrize("page", _pages())
def test_page_blocks_run(page: Path, tmp_path: Path) -> None:
    """The page's runnable blocks, in order, against one broker, as a reader follows the page."""
    mine = [b for b in RUNNABLE if b.page == page]
    for block in mine:
        if block.requires:
            require(*block.requires)
    require("confluent_kafka")   # the tools and the snippets are Kafka clients
    work = tmp_path / "work"
    work.mkdir()
    if sys.prefix != sys.base_prefix:   # `.venv/bin/kafkalite` as the README types it
        (work / ".venv").symlink_to(sys.prefix)
    proc, address = _start_broker(tmp_path)
    try:
        for block in mine:
            _run(block, address, work)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
