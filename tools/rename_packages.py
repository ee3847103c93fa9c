#!/usr/bin/env python3
"""Rewrites every reference to the top-level modules ``wire`` and ``storage`` to their installed names,
``kafkalite_wire`` and ``kafkalite_storage``. Idempotent: a second run changes nothing.

Why: an installed kafkalite must not claim generic top-level names in site-packages (``storage`` is a PyPI
package of its own; ``wire`` is generic). The repository keeps its ``wire/`` and ``storage/`` folders; the
import names differ from the folder names: setup.py installs ``wire/`` as ``kafkalite_wire`` and ``storage/``
as ``kafkalite_storage``, and in the source tree the symlinks ``kafkalite_wire -> wire`` and
``kafkalite_storage -> storage`` give the same names to an editable install, so the code, the tests and the
wheel import one name each and no file is ever loaded under two module names.

    python tools/rename_packages.py            # rewrite the tracked files in place, list what changed
    python tools/rename_packages.py --check    # exit 1 (and list the files) if anything is left to rewrite

What is rewritten (tracked text files; this script and its test are left alone):
- Python import statements: ``from wire... import``, ``import storage.x [as y]`` (a bare ``import storage.x``
  also renames that file's ``storage.x.attr`` uses, since the bound name changes);
- dotted module paths anywhere in strings, comments and prose whose module exists in the folder
  (``"wire.messages._gen_produce"``, ``python -m wire.codegen``, logger names such as ``"storage.log"``,
  ``f"wire.messages.{name}"``); ``wire.`` followed by something that is not one of its modules is left alone;
- ``from wire import X`` / ``import storage`` written inside strings (``python -c`` snippets) and docs;
- tuples/lists/sets of top-level package names (``("wire", "storage", "kafkalite")``);
- pyproject.toml's import-linter roots and contracts, mypy files/overrides, pytest testpaths, ruff excludes;
  setup.py's ``_INSTALLED_AS`` table; Makefile / .ci / Dockerfile test paths (``wire/tests`` is collected
  through the symlink, ``kafkalite_wire/tests``, so that pytest names the test modules after the import name).
File paths such as ``wire/codegen.py`` stay as they are: the folders keep their names.
"""
from __future__ import annotations

import argparse
import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RENAMES = {"wire": "kafkalite_wire", "storage": "kafkalite_storage"}
SKIP = {"tools/rename_packages.py", "kafkalite/tests/unit/test_rename_packages.py"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".txt", ".sh", ".yml", ".yaml", ".rst"}
TEXT_NAMES = {"Makefile", "Dockerfile", "run"}   # .ci/run

_OLD = "|".join(RENAMES)
# a dotted path starting with an old name; not preceded by a word character, '.', '/' or '-' (so neither
# ``kafkalite_wire.x`` nor ``self.storage.x`` nor ``kafkalite/storage.py`` matches)
_DOTTED = re.compile(rf"(?<![\w./-])({_OLD})((?:\.[A-Za-z_]\w*)+)")
_FROM_IMPORT = re.compile(rf"(?<![\w.])from[ \t]+({_OLD})(?=[ \t]+import\b)")
_IMPORT_IN_TEXT = re.compile(rf"""(^|[;\n]|\bimport[ \t]+\S+,[ \t]*)([ \t]*import[ \t]+)({_OLD})(?=$|[\s.,;"'])""",
                             re.M)
_IMPORT_LINE = re.compile(rf"^([ \t]*import[ \t]+)({_OLD})(\.[\w.]+)?([ \t]+as\b)?", re.M)
_FROM_LINE = re.compile(rf"^([ \t]*from[ \t]+)({_OLD})(?=[\s.])", re.M)
_TEST_PATH = re.compile(rf"(?<![\w/.-])({_OLD})/tests\b")
# a file none of whose text matches this cannot change (every rule above needs one of these shapes): skipped
_MAYBE = re.compile(rf"""(?<![\w./-])({_OLD})(\.[A-Za-z_*]|/tests\b|["'])|\b(import|from)[ \t]+({_OLD})\b""")


def _modules(old: str) -> set[str]:
    """Every importable dotted name under the folder ``old`` (packages and modules), e.g. ``wire.messages``."""
    base = ROOT / old
    names = {old}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and (Path(dirpath, d, "__init__.py")).exists()]
        rel = Path(dirpath).relative_to(ROOT).parts
        names.add(".".join(rel))
        for f in filenames:
            if f.endswith(".py") and f != "__init__.py":
                names.add(".".join((*rel, f[:-3])))
    return names


MODULES = set().union(*(_modules(old) for old in RENAMES))


def _dotted(match: re.Match[str]) -> str:
    """Rename ``old.a.b.c`` when at least ``old.a`` is one of the folder's modules (the rest may be an
    attribute: ``storage.handles.configure``)."""
    old, rest = match.group(1), match.group(2)
    parts = rest.split(".")[1:]
    if f"{old}.{parts[0]}" not in MODULES:
        return match.group(0)
    return RENAMES[old] + rest


def rewrite_text(text: str) -> str:
    """Module references in prose, comments, strings and non-Python files."""
    text = _DOTTED.sub(_dotted, text)
    text = _FROM_IMPORT.sub(lambda m: m.group(0).replace(m.group(1), RENAMES[m.group(1)]), text)
    return _IMPORT_IN_TEXT.sub(lambda m: m.group(1) + m.group(2) + RENAMES[m.group(3)], text)


def _name_lists(tree: ast.AST) -> set[tuple[int, int]]:
    """(line, col) of the ``"wire"``/``"storage"`` constants that sit in a tuple/list/set of package names."""
    known = {*RENAMES, *RENAMES.values(), "kafkalite", "trio"}
    found: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Tuple | ast.List | ast.Set) or len(node.elts) < 2:
            continue
        if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            continue
        values = [e.value for e in node.elts]   # type: ignore[attr-defined]
        if not any(v in RENAMES for v in values) or sum(v in known for v in values) < 2:
            continue
        for e in node.elts:
            if e.value in RENAMES:   # type: ignore[attr-defined]
                found.add((e.lineno, e.col_offset))
    return found


def rewrite_python(src: str) -> str:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return rewrite_text(src)
    lines = src.splitlines(keepends=True)
    # byte column (ast) -> character column (tokenize) per line
    name_list_pos = {(ln, len(lines[ln - 1].encode()[:col].decode())) for ln, col in _name_lists(tree)}
    bare = {m.group(2) for m in _IMPORT_LINE.finditer(src) if m.group(3) and not m.group(4)}
    edits: list[tuple[int, int, int, str]] = []   # (line, start col, end col, new text)
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    for i, tok in enumerate(toks):
        (ln, col), (eln, ecol) = tok.start, tok.end
        if tok.type in (tokenize.STRING, tokenize.COMMENT):
            if (ln, col) in name_list_pos:
                quote = tok.string[0]
                new = f"{quote}{RENAMES[tok.string[1:-1]]}{quote}"
            else:
                new = rewrite_text(tok.string)
            if new != tok.string:
                edits.append((ln, col, (eln, ecol), new))   # type: ignore[arg-type]
        elif tok.type == tokenize.NAME and tok.string in bare and i + 1 < len(toks) and toks[i + 1].string == ".":
            prev = toks[i - 1].string if i else ""
            if prev != ".":
                edits.append((ln, col, (eln, ecol), RENAMES[tok.string]))   # type: ignore[arg-type]
    out = _apply(lines, edits)
    out = _IMPORT_LINE.sub(lambda m: m.group(1) + RENAMES[m.group(2)] + (m.group(3) or "") + (m.group(4) or ""),
                           out)
    return _FROM_LINE.sub(lambda m: m.group(1) + RENAMES[m.group(2)], out)


def _apply(lines: list[str], edits: list) -> str:
    """Apply (line, col, (end line, end col), text) edits, last first so earlier positions stay valid."""
    lines = list(lines)
    for ln, col, (eln, ecol), new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        head = lines[ln - 1][:col]
        tail = lines[eln - 1][ecol:]
        lines[ln - 1:eln] = [head + new + tail]
    return "".join(lines)


def rewrite_pyproject(text: str) -> str:
    """Quoted package names and test/source paths in pyproject.toml."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("extend-exclude"):
            # ruff is given both trees (the folders and the symlinks): exclude the generated code in each
            for old, new in RENAMES.items():
                pat = f'"{old}/messages/_gen_*.py"'
                if pat in line and f'"{new}/messages/_gen_*.py"' not in line:
                    line = line.replace(pat, f'{pat}, "{new}/messages/_gen_*.py"')
            out.append(line)
            continue
        for old, new in RENAMES.items():
            line = re.sub(rf'"{old}(?=["./*])', f'"{new}', line)
        out.append(rewrite_text(line))
    return "".join(out)


def rewrite_setup(text: str) -> str:
    """setup.py's folder -> installed-name table."""
    for old, new in RENAMES.items():
        text = re.sub(rf'("{old}":\s*)"{old}"', rf'\1"{new}"', text)
    return rewrite_python(text)


def rewrite_file(rel: str, text: str) -> str:
    name = Path(rel).name
    if name == "pyproject.toml":
        return rewrite_pyproject(text)
    if name == "setup.py":
        return rewrite_setup(text)
    if rel.endswith(".py"):
        return rewrite_python(text)
    if name in ("Makefile", "Dockerfile") or rel.startswith(".ci/"):
        text = _TEST_PATH.sub(lambda m: f"{RENAMES[m.group(1)]}/tests", text)
    return rewrite_text(text)


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for rel in out.decode().split("\0"):
        p = ROOT / rel
        if not rel or rel in SKIP or p.is_symlink() or not p.is_file():
            continue
        if p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES:
            files.append(rel)
    return files


def _sort_imports(files: list[str]) -> None:
    """A longer module name can push an import line past the line length: let ruff re-wrap the import blocks
    it flags (I001) in the files just rewritten, so ``ruff check`` stays clean."""
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff)] if ruff.exists() else [sys.executable, "-m", "ruff"]
    res = subprocess.run([*cmd, "check", "--select", "I001", "--fix", "--force-exclude", "--quiet", *files], cwd=ROOT,
                         capture_output=True, text=True)
    if res.returncode not in (0, 1):
        print(f"warning: ruff could not re-sort the imports ({res.stderr.strip()[:200]}); run "
              "`ruff check --select I001 --fix` on the rewritten files", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = ap.parse_args(argv)
    changed = []
    for rel in tracked_files():
        path = ROOT / rel
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite_file(rel, text) if _MAYBE.search(text) else text
        if new != text:
            changed.append(rel)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    py = [rel for rel in changed if rel.endswith(".py")]
    if py and not args.check:
        _sort_imports(py)
    for rel in changed:
        print(("would rewrite " if args.check else "rewrote ") + rel)
    if not args.check:
        print(f"{len(changed)} files rewritten")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
