"""Shared fixtures: the reference material (Kafka specs, golden bytes) lives outside the repo.

`$KAFKALITE_REFERENCE` (default `<repo>/../shared/reference`). Outside CI a missing reference skips the tests that
need it; with `CI` set they fail instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalite_wire.spec import reference_dir, specs_dir


def require_reference(path: Path) -> Path:
    if not path.exists():
        msg = f"reference material missing: {path} (set KAFKALITE_REFERENCE)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def reference() -> Path:
    return require_reference(reference_dir())


@pytest.fixture(scope="session")
def specs() -> Path:
    return require_reference(specs_dir())
