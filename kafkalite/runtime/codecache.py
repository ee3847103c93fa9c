"""Bytecode for source that libraries generate at import time, cached as Python caches a module's bytecode.

attrs writes the ``__init__``, ``__repr__``, ``__eq__``, ... of each class it makes as Python source and passes
it to ``compile()`` when the class is created, in every process: importing trio makes 79 such classes (trio's
own, outcome's, attrs' validators), and parsing and compiling their source was ~15 % of the instructions of a
broker's start (~90 M of ~580 M), more than any module's own code. :func:`cached_compile` is a context manager
that, while it is entered, answers ``compile(source, ...)`` for a ``str`` source from a cache of code objects,
keyed by everything ``compile`` depends on (the source text, file name, mode, the effective flags and
optimization level), and compiles (and remembers) what it has not seen.

The cache follows the rules of Python's own bytecode cache: one file in the ``__pycache__`` directory next to
this module (``sys.pycache_prefix`` if set), tagged with the interpreter (``importlib.util.MAGIC_NUMBER``); it is
written only when something new was compiled, atomically, and never when ``sys.dont_write_bytecode`` is set
(``PYTHONDONTWRITEBYTECODE``); a read-only install, a missing or damaged file just compile as before. It holds
exactly the entries of the last run that wrote it, so an upgraded trio or attrs replaces the old ones. A source
that comes back under a file name it has seen with another source is one that differs from process to process
(attrs salts each class's ``__hash__`` with a per-process hash of its name): such names are noted and compiled
every time, and nothing is rewritten for them.

A code object read back with ``marshal`` is the one ``compile`` returns for the same input (that is what a
``.pyc`` is), so nothing else changes: the caller still gets a fresh code object per call to ``exec`` as it
would have, and attrs still registers its source with ``linecache`` itself.
"""
from __future__ import annotations
import __future__

import builtins
import contextlib
import importlib.util
import marshal
import os
import sys
from collections.abc import Iterator
from types import CodeType
from typing import Any

_HEADER = importlib.util.MAGIC_NUMBER + b"kafkalite-codecache\n"
# the __future__ flags a compile() call inherits from the code that calls it (Python's PyCF_MASK)
_FUTURE_FLAGS = sum(getattr(__future__, feature).compiler_flag for feature in __future__.all_feature_names)
_ONLY_AST = 0x400   # ast.PyCF_ONLY_AST: compile() returns a tree, nothing to cache


def cache_path(name: str) -> str | None:
    """Where the cache called ``name`` lives (None: this interpreter keeps no bytecode cache)."""
    try:
        return importlib.util.cache_from_source(os.path.join(os.path.dirname(__file__), f"{name}.py"))
    except NotImplementedError:   # sys.implementation.cache_tag is None
        return None


def _load(path: str) -> tuple[dict[tuple[Any, ...], CodeType], frozenset[tuple[str, str]]]:
    """(code by key, the (file name, mode) pairs whose source differs from run to run)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(_HEADER):
            return {}, frozenset()
        table, varying = marshal.loads(data[len(_HEADER):])
    except (OSError, ValueError, EOFError, TypeError):   # missing, unreadable or damaged: compile as before
        return {}, frozenset()
    if not isinstance(table, dict) or not isinstance(varying, frozenset):
        return {}, frozenset()
    return table, varying


def _store(path: str, table: dict[tuple[Any, ...], CodeType], varying: frozenset[tuple[str, str]]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(_HEADER + marshal.dumps((table, varying)))
        os.replace(tmp, path)   # atomic: a broker starting alongside reads the old file or this one
    except OSError:   # a read-only install: the next start compiles again, as it always did
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def cached_compile(name: str) -> Iterator[None]:
    """While entered, ``compile()`` of a ``str`` source is answered from the cache file ``name`` (see the module
    doc); the cache is written on exit if something was compiled that it did not hold."""
    path = cache_path(name)
    if path is None:
        yield
        return
    known, varying = _load(path)
    known_names = {key[1:3] for key in known}
    used: dict[tuple[Any, ...], CodeType] = {}
    new_varying: set[tuple[str, str]] = set()
    changed = False
    compile_ = builtins.compile

    def compile(source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                optimize: int = -1, **kwargs: Any) -> Any:
        nonlocal changed
        if not dont_inherit:   # what compile() itself inherits: the future flags of the code calling it
            flags |= sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
        if type(source) is not str or kwargs or flags & _ONLY_AST or type(filename) is not str:
            return compile_(source, filename, mode, flags, True, optimize, **kwargs)
        key = (source, filename, mode, flags, sys.flags.optimize if optimize == -1 else optimize)
        code = used.get(key) or known.get(key)
        if code is None:
            code = compile_(source, filename, mode, flags, True, optimize)
            name = (filename, mode)
            if name in varying or name in new_varying:
                return code   # a source that differs in every process (attrs' __hash__ salts its hash per process)
            if name in known_names:   # the same file name as last time, another source: never cache it
                new_varying.add(name)
                changed = True
                return code
            changed = True
        used[key] = code
        return code

    builtins.compile = compile
    try:
        yield
    finally:
        if builtins.compile is compile:
            builtins.compile = compile_
        if changed and not sys.dont_write_bytecode:
            _store(path, {k: v for k, v in used.items() if k[1:3] not in new_varying},
                   varying | new_varying)
