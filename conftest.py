"""Session-wide test setup: import the project's modules once, in the main thread, before any test runs.

Installing kafkalite registers a pytest plugin (``pytest11`` entry point), and pytest then marks every package of
the distribution (kafkalite, wire, storage) for assertion rewriting, so each of their modules is parsed with
``ast`` when first imported. Many tests run a broker in a background thread, and the broker imports codec
modules lazily (``kafkalite_wire.messages`` loads a ``_gen_*`` module on first use): two threads parsing at once trips a
CPython 3.11 bug in the ``ast`` module's shared recursion counter ("SystemError: AST constructor recursion depth
mismatch"), which failed unrelated tests now and then. With every module imported up front, no thread parses
anything while tests run.
"""
from __future__ import annotations

import importlib
import pkgutil

_PACKAGES = ("kafkalite_wire", "kafkalite_storage", "kafkalite")
# heavy optional parts, and test packages (collected by pytest itself); ``__main__`` modules are never imported
_SKIP = ("kafkalite.spark", "kafkalite.tests", "kafkalite_storage.tests", "kafkalite_wire.tests")


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


def _same_file_twice() -> list[str]:
    """Modules loaded from one source file under two names (``wire.x`` and ``kafkalite_wire.x``: a folder and
    its installed name), each as ``name and name -> file``. Two copies of one module mean two sets of classes,
    registries and module state: an ``isinstance`` that fails across them, a registry filled twice."""
    import os
    import sys

    root = os.path.dirname(os.path.realpath(__file__)) + os.sep
    seen: dict[str, tuple[str, object]] = {}
    dups = []
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if not file or name == "__main__":
            continue
        real = os.path.realpath(file)
        if not real.startswith(root) or os.sep + ".venv" + os.sep in real:
            continue   # the project's own files only
        first = seen.setdefault(real, (name, mod))
        if first[1] is not mod:   # two module objects (an alias in sys.modules is one object: not a copy)
            dups.append(f"{first[0]} and {name} -> {os.path.relpath(real, root)}")
    return dups


def pytest_sessionfinish(session, exitstatus) -> None:
    """Fail the run when a file was imported under two module names: pytest collecting ``wire/tests`` under
    the folder's name while the code imports the installed name (collect ``kafkalite_wire/tests``), or an
    import of a folder's name left behind (run ``python tools/rename_packages.py``)."""
    dups = _same_file_twice()
    if dups:
        import sys

        print("\nERROR: modules imported under two names:\n  " + "\n  ".join(sorted(dups)[:20]), file=sys.stderr)
        session.exitstatus = 1
