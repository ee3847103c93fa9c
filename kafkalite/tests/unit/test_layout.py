"""The three import packages exist and respect their seams."""
from __future__ import annotations

import importlib


def test_packages_import() -> None:
    for name in ("kafkalite_wire", "kafkalite_storage", "kafkalite"):
        assert importlib.import_module(name).__name__ == name
