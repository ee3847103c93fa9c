"""The built wheel installs into a fresh venv and runs: ``kafkalite serve`` from that venv takes a record from a
real client and gives it back, and site-packages holds only kafkalite's own top-level names.

The wheel is built once per session (``pip wheel --no-build-isolation``: the dev extra carries setuptools, so
the build needs no download); the fresh venv is made without pip and filled by the dev venv's pip
(``pip --python``), which fetches kafkalite's dependencies (trio, crc32c and the codecs cramjam, lz4, zstandard)
from the package index or pip's cache. ``make install-test`` runs only this file.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import uuid
import venv
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafkalite.tests.support.tools_helpers import need_confluent

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 240   # generous: a hang, not a slow machine, should fail these


def _renames() -> dict[str, str]:
    """The folder -> installed name table of tools/rename_packages.py (``wire`` -> ``kafkalite_wire``, ...)."""
    spec = importlib.util.spec_from_file_location("_rename_packages", ROOT / "tools" / "rename_packages.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return dict(mod.RENAMES)


def _source_copy(dest: Path) -> Path:
    """The files git would commit (tracked, and untracked but not ignored), symlinks kept as symlinks: the
    build then sees neither a stale ``build/`` directory nor caches, and writes nothing into the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True, timeout=TIMEOUT).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src, dst = ROOT / rel, dest / rel
        if not src.exists() and not src.is_symlink():   # deleted in the work tree, not yet in the index
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    return dest


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = _source_copy(tmp_path_factory.mktemp("src"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("kafkalite-*.whl")
    return whl


@pytest.fixture(scope="session")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return env_dir


def _site_packages(env_dir: Path) -> Path:
    (sp,) = env_dir.glob("lib/python3*/site-packages")
    return sp


def test_wheel_top_level_names(wheel: Path) -> None:
    """The wheel's top-level packages are kafkalite's own: the folders wire/ and storage/ are shipped under
    their installed names, never as generic top-level packages."""
    renames = _renames()
    with zipfile.ZipFile(wheel) as zf:
        tops = {n.split("/", 1)[0] for n in zf.namelist() if not n.split("/", 1)[0].endswith((".dist-info", ".data"))}
        names = zf.namelist()
    assert tops == {"kafkalite", *renames.values()}
    assert not any(set(n.split("/")) & set(renames) for n in names), "a folder name leaked into the wheel"
    assert "kafkalite/console/static/index.html" in names   # package data comes along
    assert not any("/tests/" in n for n in names)          # the test packages stay in the repository


def test_fresh_venv_serves_a_record(fresh_venv: Path, tmp_path: Path) -> None:
    ck = need_confluent()
    renames = _renames()
    sp = _site_packages(fresh_venv)
    present = {p.name for p in sp.iterdir()}
    assert not present & set(renames), f"generic top-level names in site-packages: {present & set(renames)}"
    assert set(renames.values()) <= present and "kafkalite" in present
    # the fresh interpreter imports kafkalite from site-packages, not from this checkout (run outside it)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("KAFKALITE_")}
    where = subprocess.run([str(fresh_venv / "bin" / "python"), "-c",
                            "import kafkalite, sys; print(kafkalite.__file__); "
                            f"print(any(m in sys.modules for m in {sorted(renames)!r}))"],
                           capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path, env=env, check=True)
    file, leaked = where.stdout.split()
    assert Path(file).is_relative_to(sp) and leaked == "False"

    data = tmp_path / "data"
    proc = subprocess.Popen([str(fresh_venv / "bin" / "kafkalite"), "serve", "--listen", "127.0.0.1:0",
                             "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kafkalite ready on "), (line, proc.stderr.read() if proc.poll() is not None else "")
        bootstrap = line.split()[-1]
        topic = f"installed-{uuid.uuid4().hex[:8]}"
        producer = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        producer.produce(topic, key=b"k", value=b"from a fresh venv")
        assert producer.flush(60) == 0
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                                "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([topic])
            msg = None
            for _ in range(60):
                msg = consumer.poll(1.0)
                if msg is not None and not msg.error():
                    break
            assert msg is not None and not msg.error(), msg and msg.error()
            assert (msg.key(), msg.value(), msg.offset()) == (b"k", b"from a fresh venv", 0)
        finally:
            consumer.close()
        assert any(p.name.startswith(topic) for p in data.iterdir())   # the log lives in the given data dir
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


@contextmanager
def _installed_broker(env_dir: Path, cwd: Path, data: Path) -> Iterator[str]:
    """``kafkalite serve`` from the fresh venv (run outside the checkout); yields its bootstrap address."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen([str(env_dir / "bin" / "kafkalite"), "serve", "--listen", "127.0.0.1:0",
                             "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kafkalite ready on "), (line, proc.stderr.read() if proc.poll() is not None else "")
        yield line.split()[-1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


def _codecs_on_disk(partition_dir: Path) -> set[int]:
    """The codec ids (attributes & 7) of the batches in a partition's segments, read from the file bytes."""
    found: set[int] = set()
    for seg in partition_dir.glob("*.log"):
        raw = seg.read_bytes()
        pos = 0
        while pos + 23 <= len(raw):
            (length,) = struct.unpack_from(">i", raw, pos + 8)
            found.add(raw[pos + 22] & 0x07)
            pos += 12 + length
    return found


def _note_failure(failures: list[object], err: object, _msg: object) -> None:
    if err is not None:
        failures.append(err)


CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def test_fresh_venv_takes_every_codec(fresh_venv: Path, tmp_path: Path) -> None:
    """A plain install of the wheel (no extras) accepts a producer's batches in every codec Kafka defines: the
    broker validates each record, so it must decompress each of them (no 'No module named snappy')."""
    ck = need_confluent()
    data = tmp_path / "data"
    with _installed_broker(fresh_venv, tmp_path, data) as bootstrap:
        for name in CODECS:
            topic = f"codec-{name}"
            producer = ck.Producer({"bootstrap.servers": bootstrap, "compression.type": name, "linger.ms": 50})
            failures: list[object] = []
            for i in range(20):
                producer.produce(topic, key=b"%d" % i, value=(b"%s record %d " % (name.encode(), i)) * 20,
                                 on_delivery=functools.partial(_note_failure, failures))
            assert producer.flush(60) == 0 and failures == [], (name, failures)
            consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                                    "auto.offset.reset": "earliest", "enable.auto.commit": False})
            got: list[bytes] = []
            try:
                consumer.subscribe([topic])
                for _ in range(60):
                    msg = consumer.poll(1.0)
                    if msg is not None and not msg.error():
                        got.append(msg.key())
                    if len(got) == 20:
                        break
            finally:
                consumer.close()
            assert got == [b"%d" % i for i in range(20)], name
    for name, codec in CODECS.items():   # the producer really compressed: the stored batches carry the codec
        assert _codecs_on_disk(data / f"codec-{name}-0") == {codec}, name
