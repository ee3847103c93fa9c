"""kafkalite.runtime.codecache: compile() of generated sources answered from a bytecode cache, exactly as compiled."""
from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.runtime import codecache

# a source with an annotation naming nothing: with this module's `from __future__ import annotations` (which a
# compile() called from here inherits) the annotation stays a string; without it, defining f raises NameError
SOURCE = "def f(x: no_such_name) -> int:\n    return x + 1\n"


@pytest.fixture
def cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "__pycache__" / "test.cpython-tag.pyc"
    monkeypatch.setattr(codecache, "cache_path", lambda name: str(path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path


@pytest.fixture
def real_compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The file names that reach the real compile() (under the cache's wrapper)."""
    seen: list[str] = []
    real = builtins.compile

    def counting(source: Any, filename: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    yield seen


def _run(code: Any) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(code, ns)
    return ns


def test_a_cached_compile_is_the_compile_it_replaces(cache_file: Path, real_compiles: list[str]) -> None:
    plain = compile(SOURCE, "<gen f>", "exec")
    with codecache.cached_compile("test"):
        first = compile(SOURCE, "<gen f>", "exec")
    assert real_compiles == ["<gen f>", "<gen f>"] and cache_file.exists()
    with codecache.cached_compile("test"):
        again = compile(SOURCE, "<gen f>", "exec")
    assert real_compiles == ["<gen f>", "<gen f>"]   # answered from the file
    assert builtins.compile.__name__ == "counting"   # compile() is itself again outside the block
    for code in (first, again):
        assert code == plain and code.co_flags == plain.co_flags
        f = _run(code)["f"]
        assert f(1) == 2 and f.__annotations__ == {"x": "no_such_name", "return": "int"}   # the future flag


def test_the_future_flags_are_the_callers_as_compile_inherits_them(cache_file: Path) -> None:
    caller_without_future = compile("code = compile(SOURCE, '<gen f>', 'exec')", "<caller>", "exec",
                                    dont_inherit=True)
    with codecache.cached_compile("test"):
        ns = {"SOURCE": SOURCE}
        exec(caller_without_future, ns)
        with pytest.raises(NameError):   # annotations evaluated: no future flag inherited from codecache's frame
            _run(ns["code"])
        no_inherit = compile(SOURCE, "<gen f>", "exec", dont_inherit=True)
        with pytest.raises(NameError):
            _run(no_inherit)
        assert _run(compile(SOURCE, "<gen f>", "exec"))["f"].__annotations__["x"] == "no_such_name"
    with codecache.cached_compile("test"):   # each from the cache, under its own flags
        exec(caller_without_future, ns)
        with pytest.raises(NameError):
            _run(ns["code"])
        assert _run(compile(SOURCE, "<gen f>", "exec"))["f"].__annotations__["x"] == "no_such_name"


def test_a_source_that_changes_every_run_is_compiled_every_run_and_not_rewritten(
        cache_file: Path, real_compiles: list[str]) -> None:
    for salt in range(4):   # attrs' __hash__: the same file name, another constant in every process
        with codecache.cached_compile("test"):
            assert _run(compile(f"h = {salt}\n", "<gen hash>", "exec"))["h"] == salt
            compile(SOURCE, "<gen f>", "exec")
        if salt == 1:
            written = cache_file.stat().st_mtime_ns, cache_file.read_bytes()
    assert real_compiles.count("<gen hash>") == 4 and real_compiles.count("<gen f>") == 1
    assert (cache_file.stat().st_mtime_ns, cache_file.read_bytes()) == written   # noted once, then left alone


def test_no_file_without_bytecode_writing_and_a_damaged_one_is_ignored(
        cache_file: Path, real_compiles: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with codecache.cached_compile("test"):
        compile(SOURCE, "<gen f>", "exec")
    assert not cache_file.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cache_file.parent.mkdir()
    for damaged in (b"", b"garbage", codecache._HEADER + b"\xff\x00", codecache._HEADER + b"N"):
        cache_file.write_bytes(damaged)
        with codecache.cached_compile("test"):
            assert _run(compile(SOURCE, "<gen f>", "exec"))["f"](2) == 3
    assert real_compiles == ["<gen f>"] * 5


def test_a_cache_that_cannot_be_written_compiles_as_before(cache_file: Path, real_compiles: list[str]) -> None:
    cache_file.parent.parent.mkdir(exist_ok=True)
    cache_file.parent.write_bytes(b"")   # __pycache__ is a file: no directory, no cache (as a read-only install)
    for _ in range(2):
        with codecache.cached_compile("test"):
            assert _run(compile(SOURCE, "<gen f>", "exec"))["f"](2) == 3
    assert real_compiles == ["<gen f>"] * 2 and cache_file.parent.read_bytes() == b""
    assert os.listdir(cache_file.parent.parent) == ["__pycache__"]   # no temporary file left behind


def test_other_compiles_pass_through(cache_file: Path) -> None:
    import ast

    with codecache.cached_compile("test"):
        tree = compile(SOURCE, "<gen f>", "exec", ast.PyCF_ONLY_AST)
        assert isinstance(tree, ast.Module)
        assert _run(compile(tree, "<gen f>", "exec"))["f"](1) == 2
        assert eval(compile(b"1 + 1", "<bytes>", "eval")) == 2
    assert not cache_file.exists()   # nothing cacheable was compiled
