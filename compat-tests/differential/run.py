"""Run the differential cases against kafkalite and Apache Kafka 4.4 and write compat-tests/DIFFERENTIAL.md.

    python compat-tests/differential/run.py              # every version both brokers serve (make differential)
    python compat-tests/differential/run.py --bounded    # the oldest and newest common version of each case
    python compat-tests/differential/run.py --out X.md --case fetch_from_0

Both brokers are started fresh (kafkalite: ``python -m kafkalite serve``, default profile; Kafka: the harness's
one-node KRaft broker, ``harness/reference.py``) and stopped at the end. Each case is sent at each chosen
version on a fresh connection to each broker; the decoded responses are compared raw, then after normalising
(``normalise.py``). Differences that are understood are listed with their reason in ``known.py``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COMPAT = HERE.parent
REPO = COMPAT.parent
if str(COMPAT) not in sys.path:
    sys.path.insert(0, str(COMPAT))

from harness import reference  # noqa: E402
from harness.broker import BrokerProcess  # noqa: E402

from differential import known  # noqa: E402
from differential.cases import CASES, Case  # noqa: E402
from differential.normalise import DIFFERS, classify  # noqa: E402
from differential.wireconn import WireConn, name_of  # noqa: E402
from kafkalite_wire import messages as m  # noqa: E402
from kafkalite_wire.messages import REGISTRY  # noqa: E402

SIDES = ("kafkalite", "kafka")
MAX_LINES = 150   # differing lines shown per case and verdict


@dataclass
class Outcome:
    case: str
    api_key: int
    version: int
    verdict: str
    lines: list[str] = field(default_factory=list)
    reason: str = ""         # from known.py when the difference is understood
    unexplained: list[str] = field(default_factory=list)   # differing lines known.py does not cover


class Pair:
    """kafkalite and Kafka side by side, each with the API ranges it advertises."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.brokers: dict[str, BrokerProcess] = {}
        self.ranges: dict[str, dict[int, tuple[int, int]]] = {}
        self.ctx: dict[tuple[str, str], dict[str, Any]] = {}
        self.profiles: dict[str, BrokerProcess] = {}   # kafkalite under another --emulate-kafka, started on demand

    def kafkalite_for(self, profile: str | None) -> BrokerProcess:
        """The kafkalite broker of a profile (the default one, or one started for ``profile``)."""
        if profile is None:
            return self.brokers["kafkalite"]
        b = self.profiles.get(profile)
        if b is None:
            d = self.base / f"kafkalite-{profile}"
            b = self.profiles[profile] = BrokerProcess(d / "data", d / "broker.log", kind="kafkalite", emulate=profile)
            b.start()
            with WireConn(b.bootstrap) as conn:
                r = conn.request(m.ApiVersionsRequest(client_software_name="kafkalite-differential",
                                                      client_software_version="1.0"), 3)
            self.ranges[f"kafkalite-{profile}"] = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
        return b

    def _side_ranges(self, side: str, case: Case) -> dict[int, tuple[int, int]]:
        if side == "kafkalite" and case.profile is not None:
            self.kafkalite_for(case.profile)
            return self.ranges[f"kafkalite-{case.profile}"]
        return self.ranges[side]

    def start(self) -> None:
        for side in SIDES:
            b = BrokerProcess(self.base / side / "data", self.base / side / "broker.log", kind=side)
            self.brokers[side] = b
            b.start()
            with WireConn(b.bootstrap) as conn:
                r = conn.request(m.ApiVersionsRequest(client_software_name="kafkalite-differential",
                                                      client_software_version="1.0"), 3)
            self.ranges[side] = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
            warm_up(b.bootstrap)

    def stop(self) -> None:
        for b in [*self.brokers.values(), *self.profiles.values()]:
            try:
                b.stop()
            finally:
                b.kill()

    def __enter__(self) -> Pair:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def versions(self, case: Case, bounded: bool) -> list[int]:
        """Versions of the case's API that the codec and both brokers serve (oldest and newest if bounded)."""
        info = REGISTRY[case.api_key]
        lo, hi = max(info.min_version, case.min_version), info.max_version
        for side in SIDES:
            r = self._side_ranges(side, case).get(case.api_key)
            if r is None:
                return []
            lo, hi = max(lo, r[0]), min(hi, r[1])
        vs = list(range(lo, hi + 1))
        return sorted({vs[0], vs[-1]}) if bounded and vs else vs

    def not_common(self, case: Case) -> list[str]:
        """Lines naming versions one broker serves and the other does not (for the report)."""
        r = {s: self._side_ranges(s, case).get(case.api_key) for s in SIDES}
        if r["kafkalite"] == r["kafka"]:
            return []
        def fmt(x: tuple[int, int] | None) -> str:
            return "not served" if x is None else f"v{x[0]}-v{x[1]}"
        return [f"kafkalite {fmt(r['kafkalite'])}, Kafka {fmt(r['kafka'])}"]

    def run(self, case: Case, version: int) -> Outcome:
        trees = {}
        for side in SIDES:
            ctx = self.ctx.setdefault((case.name, side), {})
            ctx["version"] = version
            broker = self.kafkalite_for(case.profile) if side == "kafkalite" else self.brokers[side]
            with WireConn(broker.bootstrap) as conn:
                if case.setup is not None:
                    case.setup(conn, ctx)
                trees[side] = conn.tree(case.build(version, ctx), version)
        verdict, lines = classify(trees["kafkalite"], trees["kafka"])
        out = Outcome(case.name, case.api_key, version, verdict, lines)
        if verdict not in ("identical", "identical after normalising"):
            out.reason, out.unexplained = known.explain(case.name, version, lines)
        return out


def warm_up(bootstrap: str, timeout_s: float = 90.0) -> None:
    """Bring both coordinators and the producer-id source up before anything is compared: Kafka creates
    ``__consumer_offsets`` and ``__transaction_state`` on the first FindCoordinator and loads their partitions
    in the background, answering COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR
    meanwhile. Those start-up answers are legitimate and timing-dependent, so they are not compared."""
    deadline = time.monotonic() + timeout_s
    reqs = [(m.FindCoordinatorRequest(key="diff-warm", key_type=0), 3),
            (m.FindCoordinatorRequest(key="diff-warm", key_type=1), 3),
            (m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 1)]
    reqs += [(m.InitProducerIdRequest(transactional_id=f"diff-warm-{i}", transaction_timeout_ms=60_000), 1)
             for i in range(8)]
    with WireConn(bootstrap) as conn:
        for body, v in reqs:
            while (code := conn.request(body, v).error_code) != 0:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"warm-up: {type(body).__name__} still fails with {code}")
                time.sleep(0.2)


def run_all(pair: Pair, cases: list[Case], bounded: bool) -> list[Outcome]:
    out = []
    for case in cases:
        for v in pair.versions(case, bounded):
            out.append(pair.run(case, v))
    return out


# -- the report ------------------------------------------------------------------------------------------
def _ranges(vs: list[int]) -> str:
    parts, start = [], None
    for i, v in enumerate(vs):
        if start is None:
            start = v
        if i + 1 == len(vs) or vs[i + 1] != v + 1:
            parts.append(f"v{start}" if start == v else f"v{start}-v{v}")
            start = None
    return ", ".join(parts)


def render(pair: Pair, outcomes: list[Outcome], bounded: bool, took_s: float) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    total: dict[str, int] = defaultdict(int)
    for o in outcomes:
        total[o.verdict] += 1
    lines = [
        "# Differential report: kafkalite against Apache Kafka " + reference.KAFKA_VERSION,
        "",
        "Generated by `make differential` (`python compat-tests/differential/run.py"
        + (" --bounded" if bounded else "") + "`): the same request frames, built with kafkalite's codec, "
        "sent to a fresh `python -m kafkalite serve` (default profile) and to a fresh one-node KRaft Apache Kafka "
        f"{reference.KAFKA_VERSION} (`compat-tests/harness/reference.py`), the decoded responses compared field "
        "by field.",
        f"Run: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} at commit `{head}`"
        + (" (with uncommitted changes)" if dirty else "") + f", {took_s:.0f} s. "
        + "Totals: " + ", ".join(f"{v} {k}" for k, v in sorted(total.items())) + ".",
        "",
        "Verdicts: **identical** (the decoded responses are equal); **identical after normalising** (equal once "
        "cluster id, host/port, topic ids, producer ids, append times and throttle times are replaced and "
        "lists whose order the protocol leaves free are sorted: `differential/normalise.py`); **differs: error "
        "message text only**; **differs** (the lines name the fields, kafkalite's value first). Every "
        "difference carries its reason from `differential/known.py`, or is marked UNEXPLAINED.",
        "",
        "## Summary per API",
        "",
        "| API | versions compared | identical | after normalising | message text only | differs |",
        "|---|---|---|---|---|---|",
    ]
    by_api: dict[int, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_api[o.api_key].append(o)
    for key in sorted(by_api):
        os_ = by_api[key]
        cnt = defaultdict(int)
        for o in os_:
            cnt[o.verdict] += 1
        vs = sorted({o.version for o in os_})
        lines.append(f"| {name_of(key)} ({key}) | {_ranges(vs)} | {cnt['identical']} | "
                     f"{cnt['identical after normalising']} | {cnt['differs: error message text only']} | "
                     f"{cnt['differs']} |")
    fixes: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        for r in o.reason.split(" | ") if o.reason else []:
            if r.startswith("FIX:") and o.case not in fixes[r]:
                fixes[r].append(o.case)
    lines += ["", "## kafkalite differences to fix (from `differential/known.py`)", ""]
    lines += [f"- {r[4:].strip()} (cases: {', '.join(f'`{c}`' for c in cs)})" for r, cs in fixes.items()] or ["- none"]
    unexplained = sorted({o.case for o in outcomes if o.unexplained})
    lines += ["", "Cases with UNEXPLAINED differences: "
              + (", ".join(f"`{c}`" for c in unexplained) if unexplained else "none") + "."]
    lines += ["", "## Advertised version ranges that differ", ""]
    seen = set()
    for case in CASES:
        if case.api_key in seen or case.api_key not in by_api:
            continue
        seen.add(case.api_key)
        for ln in pair.not_common(case):
            lines.append(f"- {name_of(case.api_key)}: {ln} (only the common versions are compared)")
    lines += ["", "## Cases", ""]
    case_doc = {c.name: c.doc for c in CASES}
    by_case: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_case[o.case].append(o)
    for name, os_ in by_case.items():
        lines.append(f"### {name_of(os_[0].api_key)}: `{name}`")
        lines.append("")
        if case_doc.get(name):
            lines.append(case_doc[name])
            lines.append("")
        if name in known.CASE_NOTES:
            lines += [f"> {known.CASE_NOTES[name]}", ""]
        groups: dict[tuple[str, tuple[str, ...], str, tuple[str, ...]], list[int]] = defaultdict(list)
        for o in os_:
            groups[(o.verdict, tuple(o.lines), o.reason, tuple(o.unexplained))].append(o.version)
        for (verdict, dl, reason, unexplained), vs in groups.items():
            lines.append(f"- {_ranges(sorted(vs))}: **{verdict}**")
            if verdict != "identical" and verdict != "identical after normalising":
                for r in reason.split(" | ") if reason else []:
                    lines.append(f"  - reason: {r}")
                for d in dl[:MAX_LINES]:
                    lines.append(f"  - `{d}`" + (" **UNEXPLAINED**" if d in unexplained else ""))
                if len(dl) > MAX_LINES:
                    lines.append(f"  - ... {len(dl) - MAX_LINES} more")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bounded", action="store_true", help="oldest and newest common version only")
    ap.add_argument("--case", action="append", help="only these cases (repeatable)")
    ap.add_argument("--out", type=Path, default=COMPAT / "DIFFERENTIAL.md")
    a = ap.parse_args()
    why = reference.missing()
    if why:
        print(why, file=sys.stderr)
        return 2
    cases = [c for c in CASES if not a.case or c.name in a.case]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kafkalite-differential-") as tmp, Pair(Path(tmp)) as pair:
        outcomes = run_all(pair, cases, a.bounded)
    text = render(pair, outcomes, a.bounded, time.monotonic() - t0)
    a.out.write_text(text)
    bad = [o for o in outcomes if o.verdict == DIFFERS and o.unexplained]
    print(f"wrote {a.out}; {len(outcomes)} comparisons, {len(bad)} with unexplained differences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
