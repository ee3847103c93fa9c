"""docs/reference/ is generated from the code's own tables (tools/gen_reference.py); these tests fail when a page
is stale, as ``kafkalite_wire.codegen --check`` does for the generated codec. Regenerate with
``.venv/bin/python tools/gen_reference.py``."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_gen_reference", ROOT / "tools" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _tool()


@pytest.mark.parametrize("page", sorted(gen.PAGES))
def test_reference_page_is_fresh(page: str) -> None:
    text = gen.PAGES[page]()
    path = ROOT / "docs" / "reference" / page
    assert path.exists(), f"{path} missing: run .venv/bin/python tools/gen_reference.py"
    assert path.read_text(encoding="utf-8") == text, \
        f"docs/reference/{page} is stale: run .venv/bin/python tools/gen_reference.py"


def test_generation_is_deterministic_and_ignores_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    first = gen.cli()
    monkeypatch.setenv("COLUMNS", "37")
    assert gen.cli() == first
    assert os.environ["COLUMNS"] == "37"   # restored after each --help
    assert gen.apis() == gen.apis()


def test_reference_pages_name_what_the_code_serves() -> None:
    """The generated pages are built from the live tables (not a copy): spot-check against them."""
    from kafkalite.cli import COMMANDS
    from kafkalite.config.defs import broker_defs, topic_defs
    from kafkalite.handlers._index import INDEX
    from kafkalite.metadata.group_configs import DEFS

    apis = (ROOT / "docs/reference/apis.md").read_text()
    for key, (module, _lo, _hi) in INDEX.items():
        assert f"| {key} | [" in apis and f"(../../kafkalite/handlers/{module}.py)" in apis
    configs = (ROOT / "docs/reference/configs.md").read_text()
    for name in [*broker_defs("4.4"), *topic_defs("4.4"), *DEFS]:   # the default profile's tables
        assert f"| `{name}` |" in configs, name
    cli = (ROOT / "docs/reference/cli.md").read_text()
    for name in COMMANDS:
        assert (f"\n## kafkalite {name}\n" in cli and f"usage: kafkalite {name}" in cli) or name == "dump-log"
    metrics = (ROOT / "docs/reference/metrics.md").read_text()
    assert "| `kafka_server_brokertopicmetrics_messagesin_total` | counter |" in metrics


def test_check_mode_reports_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    for page in gen.PAGES:
        (tmp_path / page).write_text((ROOT / "docs" / "reference" / page).read_text())
    monkeypatch.setattr(gen, "OUT", tmp_path)
    assert gen.main(["--check", "apis.md"]) == 0
    (tmp_path / "apis.md").write_text("old\n")
    assert gen.main(["--check", "apis.md"]) == 1
    assert "docs/reference/apis.md is stale" in capsys.readouterr().err
    assert gen.main(["apis.md"]) == 0 and gen.main(["--check", "apis.md"]) == 0
