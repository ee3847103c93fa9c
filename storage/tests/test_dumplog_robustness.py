"""Whatever the bytes, ``dump_files`` ends where Kafka's tool does: output plus exit status 0, or status 1 with
the JVM's one-line exception report (``errors="java"``) or one line of our own (the CLI's default) that names
the file and never a Java class — never a Python traceback."""

from __future__ import annotations

import io
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite_storage.dumplog import dump_files
from kafkalite_storage.testing import Rec, encode_batch

SEG = "00000000000000000000"
_SEED_LOG = b"".join(encode_batch([Rec(b"v%d" % i, key=b"k")] * 3, base_offset=3 * i, compression=i % 5)
                     for i in range(5))


def _mutated(data: bytes, edits: list[tuple[int, int]], cut: int) -> bytes:
    b = bytearray(data)
    for pos, val in edits:
        if b:
            b[pos % len(b)] = val
    return bytes(b[: len(b) - cut % (len(b) + 1)])


def _run(files: dict[str, bytes], targets: list[str], **opts: object) -> None:
    with tempfile.TemporaryDirectory() as d:
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        paths = [os.path.join(d, t) for t in targets]
        out, err = io.StringIO(), io.StringIO()
        rc = dump_files(paths, out=out, err=err, errors="java", **opts)  # type: ignore[arg-type]
        assert rc in (0, 1)
        if rc == 1:
            assert err.getvalue().splitlines()[-1].startswith('Exception in thread "main" ')
        out2, err2 = io.StringIO(), io.StringIO()
        rc2 = dump_files(paths, out=out2, err=err2, **opts)  # type: ignore[arg-type]
        assert out2.getvalue() == out.getvalue()    # stdout is Kafka's either way
        ours = [line for line in err2.getvalue().splitlines() if line.startswith("kafkalite dump-log: error: ")]
        assert rc2 == (1 if rc == 1 or ours else 0)
        for line in ours:   # a snapshot error goes on with the next file; anything else ends the run
            assert line.split(": error: ", 1)[1].startswith(tuple(paths)), line
            assert not any(word in line for word in ("Exception", "java.", "FileRecords(", "Traceback")), line
        if rc == 1:
            assert err2.getvalue().splitlines()[-1] == ours[-1]


_edits = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_edits, cut=st.integers(0, 400), extra=st.binary(max_size=40),
       flags=st.sampled_from([{}, {"deep_iteration": True}, {"print_data_log": True},
                              {"print_data_log": True, "skip_record_metadata": True},
                              {"decoder": "offsets"}, {"decoder": "transaction-log"}]))
def test_any_log(edits: list[tuple[int, int]], cut: int, extra: bytes, flags: dict[str, object]) -> None:
    _run({f"{SEG}.log": _mutated(_SEED_LOG, edits, cut) + extra}, [f"{SEG}.log"], **flags)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.binary(max_size=60), tindex=st.binary(max_size=80), edits=_edits, cut=st.integers(0, 300),
       flags=st.sampled_from([{}, {"index_sanity_check": True}, {"verify_index_only": True},
                              {"max_message_size": 70}]))
def test_any_indexes(index: bytes, tindex: bytes, edits: list[tuple[int, int]], cut: int,
                     flags: dict[str, object]) -> None:
    files = {f"{SEG}.log": _mutated(_SEED_LOG, edits, cut), f"{SEG}.index": index, f"{SEG}.timeindex": tindex}
    _run(files, [f"{SEG}.index", f"{SEG}.timeindex"], **flags)


@settings(max_examples=60, deadline=None)
@given(snapshot=st.binary(max_size=120), txn=st.binary(max_size=120), name=st.sampled_from(
    ["bootstrap.checkpoint", "00000000000000000100-0000000003.checkpoint", "x.checkpoint", "noext", "a.deleted"]))
def test_any_other_files(snapshot: bytes, txn: bytes, name: str) -> None:
    files = {f"{SEG}.snapshot": snapshot, f"{SEG}.txnindex": txn, name: snapshot}
    _run(files, [f"{SEG}.snapshot", f"{SEG}.txnindex", name])
