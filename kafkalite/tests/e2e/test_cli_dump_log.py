"""``kafkalite dump-log`` as a user runs it: a file that is not there, a directory, a truncated or garbage segment
each end with one line of our own on stderr (``kafkalite dump-log: error: FILE: ...``), never a Java exception
line or a Python traceback; a good segment's output stays kafka-dump-log's (storage/tests/test_dumplog*.py hold
that output against Kafka's format and the JVM)."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite_storage.dumplog import dump_files
from kafkalite_storage.testing import Rec, encode_batch

SEG = "00000000000000000000"


def _dump_log(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalite", "dump-log", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def _one_line_of_ours(proc: subprocess.CompletedProcess[str]) -> str:
    """The run failed with exactly one stderr line of our own; returns what it says after the prefix."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("kafkalite dump-log: error: "), lines
    for java_like in ("Exception", "java.", "org.apache", "FileRecords(", "Traceback"):
        assert java_like not in lines[0], lines[0]
    return lines[0].removeprefix("kafkalite dump-log: error: ")


def test_missing_file(tmp_path: Path) -> None:
    gone = tmp_path / f"{SEG}.log"
    assert _one_line_of_ours(_dump_log("--files", str(gone), cwd=tmp_path)) == f"{gone}: no such file"


def test_directory(tmp_path: Path) -> None:
    (tmp_path / "topic-0").mkdir()
    said = _one_line_of_ours(_dump_log("--files", "topic-0", cwd=tmp_path))
    assert said == "topic-0 is a directory: name the files in it to dump (e.g. topic-0/00000000000000000000.log)"
    (tmp_path / f"{SEG}.log").mkdir()
    assert _one_line_of_ours(_dump_log("--files", f"{SEG}.log", cwd=tmp_path)) == \
        f"{SEG}.log is a directory, not a file"


def test_not_a_segment_name(tmp_path: Path) -> None:
    (tmp_path / "events.log").write_bytes(encode_batch([Rec(b"v")]))
    said = _one_line_of_ours(_dump_log("--files", "events.log", cwd=tmp_path))
    assert said.startswith("events.log: not a segment file name: Kafka names a segment's files by its base offset")


def test_truncated_segment_is_kafkas_report(tmp_path: Path) -> None:
    """A segment cut inside its last batch is not an error for Kafka's tool: the whole batches, then "Found N
    invalid bytes at the end" (stdout), exit 0."""
    good = encode_batch([Rec(b"a", key=b"k")])
    cut = encode_batch([Rec(b"b" * 50)], base_offset=1)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(good + cut[:-20])
    proc = _dump_log("--files", str(log), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Dumping {log}" and lines[-1] == f"Found {len(cut) - 20} invalid bytes at the end of {SEG}.log"
    assert sum(line.startswith("baseOffset: 0 ") for line in lines) == 1


@pytest.mark.parametrize("garbage", [
    pytest.param(b"\0" * 8 + b"\0\0\0\x05" + b"\xff" * 30, id="batch-size-below-minimum"),
    pytest.param(lambda good: good[:61] + b"\x9c" * (len(good) - 61), id="damaged-records"),
])
def test_garbage_segment(tmp_path: Path, garbage: object) -> None:
    good = encode_batch([Rec(b"value", key=b"key")] * 3)
    data = garbage(good) if callable(garbage) else garbage
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(data)
    proc = _dump_log("--files", str(log), "--deep-iteration", cwd=tmp_path)
    said = _one_line_of_ours(proc)
    assert said.startswith(f"{log}: corrupt or truncated data"), said
    # what came before the error is Kafka's output, as the library prints it
    out = io.StringIO()
    assert dump_files([str(log)], deep_iteration=True, out=out, err=io.StringIO()) == 1
    assert proc.stdout == out.getvalue()


def test_good_segment_output_is_unchanged(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(encode_batch([Rec(b"v1", key=b"k1"), Rec(b"v2")]))
    proc = _dump_log("--files", str(log), "--print-data-log", cwd=tmp_path)
    out = io.StringIO()
    dump_files([str(log)], print_data_log=True, out=out, err=io.StringIO())
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, out.getvalue(), "")
    assert "payload: v1" in proc.stdout


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    proc = _dump_log("--files", f"{SEG}.log", "--colour", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("kafkalite dump-log: error: unrecognized option --colour "
                           "(kafkalite dump-log --help lists the options)\n")
