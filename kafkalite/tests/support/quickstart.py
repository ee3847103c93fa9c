"""The README's quick start as a newcomer types it: its blocks, read from README.md, and what each command must
answer. Used by kafkalite/tests/e2e/test_quickstart.py (this checkout's venv, in ``make test``) and
kafkalite/tests/e2e/quickstart_clone.py (a clean clone and ``make run``, in ``make quickstart``).

The README's commands name no address: the tools default to ``localhost:9092``, where ``make run`` listens. A
test cannot count on that port on a shared machine, so the broker listens on a free port (``make run
ARGS="--listen ..."``, as the README documents) and the commands find it through ``$KAFKALITE_BOOTSTRAP_SERVER``,
the tools' documented default; everything else is typed as written.
"""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class QuickStart:
    run: str               # the command that starts the broker (``make run``)
    commands: list[str]    # the CLI lines, one command each, comments kept


def readme_quick_start(readme: Path = ROOT / "README.md") -> QuickStart:
    """The ``## Quick start`` section's first shell block (``make run``) and the block of ``.venv/bin/kafkalite``
    commands that follows it."""
    text = readme.read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in section.split("\n"):
        if _FENCE.match(line) and current is None:
            current = []
        elif line.strip() == "```" and current is not None:
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    run = next(b for b in blocks if b and b[0].startswith("make run"))
    commands = next(b for b in blocks if any(".venv/bin/kafkalite" in ln for ln in b))
    return QuickStart(run=run[0].split("#", 1)[0].strip(), commands=[ln for ln in commands if ln.strip()])


def type_commands(quick: QuickStart, cwd: Path, bootstrap: str, env: Mapping[str, str] | None = None,
                  timeout: float = 120) -> list[subprocess.CompletedProcess[str]]:
    """Each command line in bash, in order, from ``cwd`` (where ``.venv`` is), as typed."""
    environment = {**(env if env is not None else os.environ), "KAFKALITE_BOOTSTRAP_SERVER": bootstrap}
    done = []
    for line in quick.commands:
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=cwd, env=environment, capture_output=True,
                              text=True, timeout=timeout)
        assert proc.returncode == 0, f"`{line}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        done.append(proc)
    return done


def check_answers(quick: QuickStart, done: list[subprocess.CompletedProcess[str]]) -> None:
    """What the README promises each command does: the topic made, the record written and read back by the
    group, the topic described, the group's offsets committed."""
    by_tool: dict[str, subprocess.CompletedProcess[str]] = {}
    for line, proc in zip(quick.commands, done, strict=True):
        words = line.split("#", 1)[0].split()
        tool = words[words.index(next(w for w in words if w.endswith("kafkalite"))) + 1]
        action = next((w for w in words if w in ("--create", "--describe", "--list")), "")
        by_tool[f"{tool} {action}".strip()] = proc
    assert set(by_tool) >= {"topics --create", "produce", "consume", "topics --describe", "groups --describe"}, \
        sorted(by_tool)
    consumed = by_tool["consume"]
    assert consumed.stdout == "hello\n" and "Processed a total of 1 messages" in consumed.stderr
    described = [ln.split("\t") for ln in by_tool["topics --describe"].stdout.splitlines()]
    assert described[0][0] == "TOPIC" and {row[0] for row in described[1:]} == {"orders"}
    assert len(described) - 1 == 3, described        # --partitions 3
    group = [ln.split("\t") for ln in by_tool["groups --describe"].stdout.splitlines()]
    header, rows = group[0], group[1:]
    offsets = [dict(zip(header, row, strict=False)) for row in rows]
    assert [(o["GROUP"], o["TOPIC"], o["CURRENT-OFFSET"], o["LAG"]) for o in offsets if o["CURRENT-OFFSET"] != "-"] \
        == [("billing", "orders", "1", "0")], group
