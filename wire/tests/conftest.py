"""Shared fixtures: the reference material (Kafka specs, golden bytes) lives outside the repo.

`$KAFKALITE_REFERENCE` (default `<repo>/../shared/reference`). Outside CI a missing reference skips the tests that
need it loudly; with `CI=true` they fail instead (the root conftest's ``requirement`` fixture: one rule for all).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafkalite_wire.spec import reference_dir, specs_dir


def require_reference(requirement: Any, path: Path) -> Path:
    requirement.require("reference")
    if not path.exists():
        requirement.missing(f"reference material missing: {path} (set KAFKALITE_REFERENCE)")
    return path


@pytest.fixture(scope="session")
def reference(requirement: Any) -> Path:
    return require_reference(requirement, reference_dir())


@pytest.fixture(scope="session")
def specs(requirement: Any) -> Path:
    return require_reference(requirement, specs_dir())
