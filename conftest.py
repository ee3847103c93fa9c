"""Session-wide test setup: import the project's modules once, in the main thread, before any test runs.

Installing kafkalite registers a pytest plugin (``pytest11`` entry point), and pytest then marks every package of
the distribution (kafkalite, wire, storage) for assertion rewriting, so each of their modules is parsed with
``ast`` when first imported. Many tests run a broker in a background thread, and the broker imports codec
modules lazily (``wire.messages`` loads a ``_gen_*`` module on first use): two threads parsing at once trips a
CPython 3.11 bug in the ``ast`` module's shared recursion counter ("SystemError: AST constructor recursion depth
mismatch"), which failed unrelated tests now and then. With every module imported up front, no thread parses
anything while tests run.
"""
from __future__ import annotations

import importlib
import pkgutil

_PACKAGES = ("wire", "storage", "kafkalite")
# heavy optional parts, and test packages (collected by pytest itself); ``__main__`` modules are never imported
_SKIP = ("kafkalite.spark", "kafkalite.tests", "storage.tests", "wire.tests")


def _import_tree(name: str) -> None:
    try:
        mod = importlib.import_module(name)
    except ImportError:   # an optional dependency (a codec package) is not installed: not our concern here
        return
    for info in pkgutil.iter_modules(getattr(mod, "__path__", [])):
        sub = f"{name}.{info.name}"
        if info.name != "__main__" and not sub.startswith(_SKIP):
            _import_tree(sub)


def _import_all() -> None:
    for name in _PACKAGES:
        _import_tree(name)


_import_all()
