"""The tests' own layout: every test file of kafkalite/tests sits in a tier directory, each tier is marked by its
directory (the root conftest.py), a test may claim a heavier tier but never a lighter one, and ``requires(...)``
skips loudly or, under CI=true, fails."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkalite.tests.support import requires

ROOT = Path(__file__).resolve().parents[3]
TESTS = ROOT / "kafkalite" / "tests"
TIER_DIRS = {"unit", "broker", "clients", "e2e"}
#: directories of kafkalite/tests that hold no collected tests
OTHER_DIRS = {"support", "fuzz", "__pycache__"}


def test_every_test_file_sits_in_a_tier_directory() -> None:
    loose = sorted(p.name for p in TESTS.glob("*.py") if p.name not in ("__init__.py", "conftest.py"))
    assert loose == [], f"move these into kafkalite/tests/{{{','.join(sorted(TIER_DIRS))}}}/ or support/: {loose}"
    dirs = {p.name for p in TESTS.iterdir() if p.is_dir()}
    assert dirs - TIER_DIRS - OTHER_DIRS == set()
    for d in TIER_DIRS | {"support"}:
        assert (TESTS / d / "__init__.py").is_file(), d
    for d in ("support", "fuzz"):
        assert not list((TESTS / d).glob("test_*.py")), f"kafkalite/tests/{d} holds tests: move them to a tier"


def test_the_root_conftest_marks_by_directory(pytestconfig: pytest.Config) -> None:
    # the module pytest loaded (loading the file again would be one file under two names: the session fails)
    conftest = next(p for p in pytestconfig.pluginmanager.get_plugins()
                    if Path(getattr(p, "__file__", None) or "/").resolve() == ROOT / "conftest.py")
    assert conftest._directory_mark("kafkalite/tests/unit/test_x.py") == "unit"
    assert conftest._directory_mark("kafkalite/tests/broker/test_x.py") == "broker"
    assert conftest._directory_mark("kafkalite/tests/e2e/spark_eos_crash.py") == "e2e"
    assert conftest._directory_mark("wire/tests/test_golden.py") == "unit"
    assert conftest._directory_mark("compat-tests/test_acls.py") == "compat"
    assert conftest._directory_mark("kafkalite/tests/test_loose.py") is None
    assert set(conftest.TIERS) == TIER_DIRS


def test_ci_is_a_true_value_of_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("true", True), ("TRUE", True), ("1", True), ("yes", True), ("", False),
                            ("false", False), ("0", False)):
        monkeypatch.setenv("CI", value)
        assert requires.ci() is expected, value
    monkeypatch.delenv("CI")
    assert requires.ci() is False


def test_a_missing_requirement_skips_loudly_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(requires.CHECKS, "absent-thing", lambda: "absent-thing is not installed")
    monkeypatch.delitem(requires._cache, "absent-thing", raising=False)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="!!! NOT TESTED - absent-thing is not installed"):
        requires.require("absent-thing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and a required piece is missing: absent-thing"):
        requires.require("absent-thing")
    with pytest.raises(ValueError, match="unknown requirement"):
        requires.require("no-such-requirement")


def test_a_present_requirement_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(requires.CHECKS, "present-thing", lambda: None)
    monkeypatch.setenv("CI", "true")
    requires.require("present-thing")


@pytest.mark.e2e
def test_marker_tiers_and_unknown_requirements_in_a_pytest_run(tmp_path: Path) -> None:
    """A real pytest run (the root conftest.py and pyproject.toml copied beside a scratch tier directory): the
    directory's mark selects, a heavier own mark wins, a lighter one and an unknown requirement stop the run, a
    test file outside the tiers stops it, and a missing requirement skips loudly, or fails under CI=true."""
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    unit = tmp_path / "kafkalite" / "tests" / "unit"
    unit.mkdir(parents=True)
    (unit / "test_scratch.py").write_text(textwrap.dedent("""
        import pytest

        def test_plain():
            pass

        @pytest.mark.e2e
        def test_heavier():
            pass

        @pytest.mark.requires("chromium")
        def test_needs():
            pass
    """))

    def run(*args: str, ci: str = "false") -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CI": ci, "KAFKALITE_CHROMIUM": "", "PATH": "/nonexistent"}
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "kafkalite/tests",
                               *args], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)

    out = run("-m", "unit", "--co")
    assert "test_plain" in out.stdout and "test_needs" in out.stdout and "test_heavier" not in out.stdout, out
    out = run("-m", "e2e", "--co")
    assert "test_heavier" in out.stdout and "test_plain" not in out.stdout, out
    out = run("-rs")
    assert out.returncode == 0 and "!!! NOT TESTED - chromium is not installed" in out.stdout, out
    out = run(ci="true")
    assert out.returncode == 1 and "CI=true and a required piece is missing: chromium" in out.stdout, out

    (unit / "test_scratch.py").write_text("import pytest\n\n@pytest.mark.requires('chromiun')\ndef test_x():\n"
                                          "    pass\n")
    out = run()
    assert out.returncode != 0 and "unknown ['chromiun']" in out.stderr, out
    (unit / "test_scratch.py").write_text("import pytest\n\n@pytest.mark.unit\ndef test_x():\n    pass\n")
    (unit.parent / "broker").mkdir()
    (unit / "test_scratch.py").rename(unit.parent / "broker" / "test_scratch.py")
    out = run()
    assert out.returncode != 0 and "marked unit, lighter than its directory's tier broker" in out.stderr, out
    (unit.parent / "broker" / "test_scratch.py").rename(unit.parent / "test_loose.py")
    out = run()
    assert out.returncode != 0 and "kafkalite/tests/test_loose.py: a test file of kafkalite/tests outside a tier" \
        in out.stderr, out
