"""Differential tests (bounded slice): raw frames from kafkalite's codec to kafkalite and to Apache Kafka 4.4.

For each fast case of ``differential/cases.py``, at the oldest and the newest version both brokers serve, the
decoded responses must be equal after normalising, or every differing line must be one that
``differential/known.py`` explains. A new difference, or a known one that changed shape, fails here. The full
run over every common version writes ``DIFFERENTIAL.md`` (``make differential``).

Needs the Kafka jars (``tools/bootstrap.sh reference``): missing, the tests are skipped loudly, or fail under
``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from differential.cases import CASES
from differential.normalise import IDENTICAL, NORMALISED
from differential.run import Pair
from harness import reference

FAST = [c for c in CASES if c.fast]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    why = reference.missing()
    if why:
        from conftest import missing

        missing(why)
    with Pair(Path(tmp_path_factory.mktemp("differential"))) as p:
        yield p


@pytest.mark.parametrize("case", FAST, ids=[c.name for c in FAST])
def test_same_answer_as_kafka(pair: Pair, case) -> None:
    versions = pair.versions(case, bounded=True)
    assert versions, f"{case.name}: no version of api {case.api_key} that both brokers serve"
    problems = []
    for v in versions:
        o = pair.run(case, v)
        if o.verdict in (IDENTICAL, NORMALISED):
            continue
        if o.unexplained:
            problems.append(f"v{v} {o.verdict}:\n    " + "\n    ".join(o.unexplained))
    assert not problems, f"{case.name}: differences from Kafka {reference.KAFKA_VERSION} that " \
        "differential/known.py does not explain:\n" + "\n".join(problems)


def test_known_differences_name_real_cases() -> None:
    """Every entry of known.py names at least one existing case (a renamed case leaves no stale entry)."""
    import re

    from differential.known import KNOWN

    names = [c.name for c in CASES]
    stale = [pat for pat, _, _ in KNOWN if not any(re.fullmatch(pat, n) for n in names)]
    assert not stale, stale
