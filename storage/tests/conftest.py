from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

_DEFAULT = Path(__file__).resolve().parents[2].parent / "shared" / "reference"


def reference_dir() -> Path:
    return Path(os.environ.get("KAFKALITE_REFERENCE", str(_DEFAULT)))


@pytest.fixture
def reference(requirement: Any) -> Path:
    """The shared reference tree; a loud skip outside CI when missing, a failure under CI=true."""
    ref = reference_dir()
    if not ref.is_dir():
        requirement.missing(f"reference material not found at {ref} (set KAFKALITE_REFERENCE)")
    return ref


@pytest.fixture
def copy_fixture(reference: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Copy fixtures/segments/<name> into tmp (writable) and return the copy's path."""

    def _copy(name: str) -> Path:
        src = reference / "fixtures" / "segments" / name
        dst = tmp_path / name
        shutil.copytree(src, dst)
        for root, dirs, files in os.walk(dst):
            for n in dirs + files:
                os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
        os.chmod(dst, 0o755)
        return dst

    return _copy
