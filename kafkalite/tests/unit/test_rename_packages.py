"""tools/rename_packages.py: what it rewrites, what it leaves alone, idempotence, and that the tree is renamed.

This file is skipped by the script itself (it spells the old names on purpose).
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tools" / "rename_packages.py"


def _script():
    spec = importlib.util.spec_from_file_location("_rename_packages_t", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rp = _script()

SOURCE = '''"""Uses wire.messages and storage.log; not wire.nothing_here; see wire/codegen.py."""
import os
import wire.messages as M
import storage.segment
from wire.errors import ErrorCode
from storage import fs
from wire.messages import (
    ProduceRequest,
)
if True:
    from storage.batch import crc32c  # from storage.batch import x

log = logging.getLogger("storage.log")
NAME = "wire.messages._gen_produce"
PKGS = ("kafkalite", "storage", "wire")
KEY = {"storage": 1, "wire": 2}
mod = f"wire.messages.{name}"
cmd = [sys.executable, "-m", "wire.codegen"]
code = "import sys; from wire import api; import storage"
real = storage.segment.iter_file_batches
self.storage.segment = 1
kafkalite_wire.messages
'''

EXPECTED = '''"""Uses kafkalite_wire.messages and kafkalite_storage.log; not wire.nothing_here; see wire/codegen.py."""
import os
import kafkalite_wire.messages as M
import kafkalite_storage.segment
from kafkalite_wire.errors import ErrorCode
from kafkalite_storage import fs
from kafkalite_wire.messages import (
    ProduceRequest,
)
if True:
    from kafkalite_storage.batch import crc32c  # from kafkalite_storage.batch import x

log = logging.getLogger("kafkalite_storage.log")
NAME = "kafkalite_wire.messages._gen_produce"
PKGS = ("kafkalite", "kafkalite_storage", "kafkalite_wire")
KEY = {"storage": 1, "wire": 2}
mod = f"kafkalite_wire.messages.{name}"
cmd = [sys.executable, "-m", "kafkalite_wire.codegen"]
code = "import sys; from kafkalite_wire import api; import kafkalite_storage"
real = kafkalite_storage.segment.iter_file_batches
self.storage.segment = 1
kafkalite_wire.messages
'''


def test_python_rewrite() -> None:
    assert rp.rewrite_python(SOURCE) == EXPECTED


def test_rewrite_is_idempotent() -> None:
    assert rp.rewrite_python(EXPECTED) == EXPECTED
    once = rp.rewrite_file("pyproject.toml", (ROOT / "pyproject.toml").read_text())
    assert rp.rewrite_file("pyproject.toml", once) == once


def test_pyproject_and_makefile() -> None:
    toml = '''root_packages = ["wire", "storage", "kafkalite"]
module = ["wire.*", "storage.*"]
testpaths = ["wire/tests", "kafkalite/tests"]
extend-exclude = ["wire/messages/_gen_*.py"]
'''
    assert rp.rewrite_pyproject(toml) == '''root_packages = ["kafkalite_wire", "kafkalite_storage", "kafkalite"]
module = ["kafkalite_wire.*", "kafkalite_storage.*"]
testpaths = ["kafkalite_wire/tests", "kafkalite/tests"]
extend-exclude = ["wire/messages/_gen_*.py", "kafkalite_wire/messages/_gen_*.py"]
'''
    make = "\t$(PY) -m pytest wire/tests storage/tests kafkalite/tests\n\t$(PY) -m wire.codegen\n"
    assert rp.rewrite_file("Makefile", make) == (
        "\t$(PY) -m pytest kafkalite_wire/tests kafkalite_storage/tests kafkalite/tests\n"
        "\t$(PY) -m kafkalite_wire.codegen\n")
    md = "from wire.framing import FrameBuffer  # on the wire. storage.fs.<op>; kafkalite/storage.py\n"
    assert rp.rewrite_text(md) == (
        "from kafkalite_wire.framing import FrameBuffer  # on the wire. kafkalite_storage.fs.<op>; kafkalite/storage.py\n")


@pytest.mark.e2e
def test_tree_is_renamed() -> None:
    """Nothing in the tracked files still refers to the folders' names as modules (a helper's new
    ``import wire...`` fails here: run ``python tools/rename_packages.py``)."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_symlinks_give_the_installed_names() -> None:
    for old, new in rp.RENAMES.items():
        link = ROOT / new
        assert link.is_symlink() and link.resolve() == (ROOT / old).resolve()
