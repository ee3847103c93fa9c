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


# -- tiers and requirements ---------------------------------------------------------------------------------------
import os  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from kafkalite.tests.support import requires as _requires  # noqa: E402

ROOT = Path(__file__).resolve().parent
#: the speed tiers, lightest first: unit (pure), broker (an embedded broker over real sockets), clients (real client
#: libraries in this process), e2e (subprocesses: the CLI, a wheel, Java, a broker process)
TIERS = ("unit", "broker", "clients", "e2e")
#: directory (relative to the repository) -> the marker every test in it gets; a test may carry a heavier tier of
#: its own (``@pytest.mark.e2e`` on the one test of a unit file that starts a subprocess), never a lighter one
DIRECTORY_MARKS = {
    "kafkalite/tests/unit": "unit",
    "kafkalite/tests/broker": "broker",
    "kafkalite/tests/clients": "clients",
    "kafkalite/tests/e2e": "e2e",
    "wire/tests": "unit",
    "storage/tests": "unit",
    "bench/tests": "e2e",
    "compat-tests": "compat",
}
KAFKALITE_TESTS = ROOT / "kafkalite" / "tests"


def _rel(path: Path) -> str:
    real = Path(os.path.realpath(path))
    try:
        rel = real.relative_to(ROOT)
    except ValueError:
        return ""
    return rel.as_posix()


def _directory_mark(rel: str) -> str | None:
    for d, mark in DIRECTORY_MARKS.items():
        if rel == d or rel.startswith(d + "/"):
            return mark
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test by its directory (``-m unit``, ``-m "unit or broker"``, ``-m compat``); refuse a test file
    of kafkalite/tests outside a tier directory, a test that claims a lighter tier than its directory's or two
    tiers, and a ``requires(...)`` name nobody knows."""
    problems: list[str] = []
    for item in items:
        rel = _rel(item.path)
        mark = _directory_mark(rel)
        if rel.startswith("kafkalite/tests/") and mark is None:
            problems.append(f"{rel}: a test file of kafkalite/tests outside a tier directory "
                            f"({', '.join(d for d in DIRECTORY_MARKS if d.startswith('kafkalite/'))})")
            continue
        own = sorted({m.name for m in item.iter_markers() if m.name in TIERS}, key=TIERS.index)
        if len(own) > 1:
            problems.append(f"{item.nodeid}: marked with two tiers {own}")
        elif own and mark in TIERS and TIERS.index(own[0]) < TIERS.index(mark):
            problems.append(f"{item.nodeid}: marked {own[0]}, lighter than its directory's tier {mark}")
        elif not own and mark is not None:
            item.add_marker(mark)
        for m in item.iter_markers("requires"):
            bad = _requires.unknown(m.args)
            if bad or not m.args:
                problems.append(f"{item.nodeid}: requires{m.args}: unknown {bad} (known: {sorted(_requires.CHECKS)})")
    if problems:
        raise pytest.UsageError("test layout:\n  " + "\n  ".join(problems[:30]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.requires(...)``: checked before any fixture runs; skip loudly, or fail under CI=true."""
    names = [n for m in item.iter_markers("requires") for n in m.args]
    if names:
        _requires.require(*names)


class Requirement:
    """What the ``requirement`` fixture gives a fixture or test of wire/ or storage/ (which never import kafkalite):
    ``requirement.require("java")``, ``requirement.missing("no jar at ...")``, ``requirement.ci()``."""

    require = staticmethod(_requires.require)
    missing = staticmethod(_requires.missing)
    ci = staticmethod(_requires.ci)


@pytest.fixture(scope="session")
def requirement() -> Requirement:
    return Requirement()
