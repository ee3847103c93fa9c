"""The manual's links and paths point at things that exist.

- every relative Markdown link in README.md, docs/**/*.md and bench/README.md names an existing file, and its
  ``#anchor`` (if any) a heading of that file (GitHub's heading ids);
- every repository path the docs name in backticks (``kafkalite/handlers/_index.py``, ``storage/fs.py``,
  ``kafkalite/tests/test_share_*.py``) exists. A test file may have moved to a tier subfolder of its test
  directory: it counts as existing if a file of that name is anywhere below the test directory;
- the README stays a front door (at most ~150 lines) and keeps the test command CI runs (``make test``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = sorted([ROOT / "README.md", ROOT / "bench" / "README.md", *(ROOT / "docs").rglob("*.md")])
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_INLINE = re.compile(r"``.+?``|`[^`\n]+`")
_ROOTS = ("kafkalite/", "kafkalite_wire/", "kafkalite_storage/", "wire/", "storage/", "compat-tests/", "bench/",
          "tools/", "docs/")
_PATH = re.compile(r"^[A-Za-z0-9_.\-/*]+$")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose(text: str) -> str:
    """The page without code blocks and inline code (links there are examples, not links)."""
    return _INLINE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's id for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    return _LINK.findall(_prose(path.read_text(encoding="utf-8")))


def test_the_pages_are_found() -> None:
    names = {_rel(p) for p in PAGES}
    assert {"README.md", "docs/index.md", "docs/internals/architecture.md", "docs/reference/apis.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page: Path) -> None:
    bad = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {_rel(dest)}")
    assert not bad, f"{_rel(page)}:\n" + "\n".join(bad)


def _exists(path: str) -> bool:
    path = path.split("::", 1)[0].rstrip(".,;:")
    path = re.sub(r":\d+$", "", path)
    if any(ch in path for ch in "*?["):
        return any(ROOT.glob(path))
    if (ROOT / path).exists() or path.startswith("bench/results/"):   # results/: written by a run, not committed
        return True
    for tests_dir in ("kafkalite/tests/", "compat-tests/", "wire/tests/", "storage/tests/", "bench/tests/"):
        if path.startswith(tests_dir):   # moved into a tier subfolder of its test directory
            return any((ROOT / tests_dir).rglob(Path(path).name))
    return False


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_named_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    bad = []
    for code in re.findall(r"``(.+?)``|`([^`\n]+)`", text):
        for token in (code[0] or code[1]).split():
            if token.startswith(_ROOTS) and _PATH.match(token) and not _exists(token):
                bad.append(token)
    assert not bad, f"{_rel(page)} names paths that do not exist: {sorted(set(bad))}"


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 160
    assert "make test" in text   # .ci/run runs the README's test command
    assert "docs/internals/architecture.md" in text and "docs/index.md" in text


def test_slugs_follow_github() -> None:
    assert slug("Group configs") == "group-configs"
    assert slug("wire (sans-I/O codec)") == "wire-sans-io-codec"
    assert slug("KIP-848 consumer groups (`group.protocol=consumer`)") == "kip-848-consumer-groups-groupprotocolconsumer"
    assert slug("Users: pointing Kafka clients at kafkalite") == "users-pointing-kafka-clients-at-kafkalite"
