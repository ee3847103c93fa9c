"""Markdown rendering for benchmark results: the broker comparison table and a generic fallback.

A benchmark module's ``main()`` returns a dict. ``bench.run_all`` renders it as follows:

- if it has a ``"markdown"`` string, that is used as is;
- else if it has a ``"rows"`` list of flat dicts, they become a table (columns = union of keys, in order);
- else if every top-level value is a flat dict, each key becomes a row (a "name" column plus the union of
  the inner keys);
- else the dict is flattened into ``key.path | value`` rows.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    if value is None:
        return "–"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) if not isinstance(c, str) else c for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _flat(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in d.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out += _flat(value, path + ".")
        else:
            out.append((path, value))
    return out


def _is_flat(d: Any) -> bool:
    return isinstance(d, dict) and all(not isinstance(v, dict | list) for v in d.values())


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for row in rows:
        cols += [k for k in row if k not in cols]
    return cols


def generic(result: Any) -> str:
    """Render any ``main()`` result as markdown, following the conventions in the module docstring."""
    if not isinstance(result, dict):
        return f"`{_fmt(result)}`"
    if isinstance(result.get("markdown"), str):
        return str(result["markdown"])
    rows = result.get("rows")
    if isinstance(rows, list) and rows and all(_is_flat(r) for r in rows):
        cols = _columns(rows)
        return table(cols, [[_fmt(r.get(c)) for c in cols] for r in rows])
    if result and all(_is_flat(v) for v in result.values()):
        inner = _columns(list(result.values()))
        return table(["name", *inner], [[_fmt(k), *[_fmt(v.get(c)) for c in inner]] for k, v in result.items()])
    return table(["key", "value"], [[_fmt(k), _fmt(v)] for k, v in _flat(result)])


# --- the broker comparison -------------------------------------------------------------------------

Getter = Callable[[dict[str, Any]], Any]


def _get(*path: str) -> Getter:
    def get(entry: dict[str, Any]) -> Any:
        node: Any = entry
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    return get


def _throughput(kind: str, key: str) -> Getter:
    def get(entry: dict[str, Any]) -> Any:
        run = _get(kind, key)(entry)
        return run["records_per_s"] if run else None

    return get


def _tp_cell(kind: str, key: str) -> Callable[[dict[str, Any]], str]:
    def cell(entry: dict[str, Any]) -> str:
        run = _get(kind, key)(entry)
        if not run:
            return "failed" if entry.get("errors") else "–"
        mark = "" if run["complete"] else " (incomplete)"
        return f"{run['records_per_s']:,.0f} rec/s, {run['mb_per_s']:.1f} MB/s{mark}"

    return cell


def _mean_field(section: str, keys: list[str], field: str = "broker_cpu_us_per_record") -> Getter:
    """Mean over the runs ``keys`` of ``section`` of one numeric field (CPU per record, first record...)."""

    def get(entry: dict[str, Any]) -> Any:
        values = [run.get(field) for k in keys if (run := _get(section, k)(entry))]
        values = [v for v in values if isinstance(v, int | float) and v > 0]
        return round(sum(values) / len(values), 2) if values else None

    return get


def broker_table(brokers: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    """The kafkalite-vs-peers table: one row per metric, one column per broker, plus a ratio column."""
    n = f"{args.records // 1000}k" if args.records < 1_000_000 else f"{args.records / 1e6:g}M"
    runs = getattr(args, "repeats", 1)
    n_runs = f", median of {runs}" if runs > 1 else ""
    metrics: list[tuple[str, Getter, Callable[[dict[str, Any]], str] | None, bool]] = []
    for parts in (1, 6):
        for acks in ("1", "all"):
            key = f"p{parts}_acks{acks}"
            metrics.append((f"produce {n}×100 B, {parts} part., acks={acks}{n_runs}", _throughput("produce", key),
                            _tp_cell("produce", key), True))
    for parts in (1, 6):
        metrics.append((f"consume {n}×100 B, {parts} part.{n_runs}", _throughput("consume", f"p{parts}"),
                        _tp_cell("consume", f"p{parts}"), True))
    clients = getattr(args, "clients", 1)
    if clients > 1:
        for kind in ("produce", "consume"):
            key = f"{kind}_p6_x{clients}"
            acks = ", acks=1" if kind == "produce" else ""
            metrics.append((f"{kind} {n}×100 B, 6 part.{acks}, {clients} client processes at once{n_runs}",
                            _throughput("parallel", key), _tp_cell("parallel", key), True))
    for section, keys, what in (("produce", [f"p{p}_acks{a}" for p in (1, 6) for a in ("1", "all")], "produce"),
                                ("consume", ["p1", "p6"], "consume")):
        metrics.append((f"broker CPU per record, {what} (µs, mean of the {what} runs above)",
                        _mean_field(section, keys), None, False))
        metrics.append((f"client CPU per record, {what} (µs; context, no ratio)",
                        _mean_field(section, keys, "client_cpu_us_per_record"), None, False))
    metrics.append(("consume: assign() to first record (ms, mean of the consume runs)",
                    _mean_field("consume", ["p1", "p6"], "first_record_ms"), None, False))
    rate = args.rate
    lrep = getattr(args, "latency_repeats", 1)
    reps = f", median of {lrep}" if lrep > 1 else ""
    metrics += [
        (f"e2e latency p50 @ {rate} msg/s (ms{reps})", _get("latency", "p50_ms"), None, False),
        (f"e2e latency p99 @ {rate} msg/s (ms{reps})", _get("latency", "p99_ms"), None, False),
        (f"broker CPU during the {rate} msg/s runs (% of one core)", _get("latency", "broker_cpu_pct_of_core"),
         None, False),
        ("idle RSS (MB)", _get("idle_rss_mb"), None, False),
        ("peak RSS (MB)", _get("peak_rss_mb"), None, False),
        (f"start-to-ready (s, median of {args.start_repeats})", _get("start", "median_s"), None, False),
    ]
    names = list(brokers)
    peers = [b for b in names if b != "kafkalite"]
    header = ["metric", *names]
    with_ratio = "kafkalite" in names and bool(peers)
    if with_ratio:
        header.append("kafkalite ÷ best peer")
    rows: list[list[Any]] = []
    for label, get, cell, higher in metrics:
        row: list[Any] = [label]
        for b in names:
            entry = brokers[b]
            if "skipped" in entry:
                row.append("skipped")
            elif cell is not None:
                row.append(cell(entry))
            else:
                value = get(entry)
                row.append(_fmt(value) if value is not None else ("failed" if entry.get("errors") else "–"))
        if with_ratio and "no ratio" in label:
            row.append("–")
        elif with_ratio:
            row.append(_ratio(get(brokers["kafkalite"]), {p: get(brokers[p]) for p in peers}, higher))
        rows.append(row)
    storage = ", ".join(f"{b}: {brokers[b].get('storage', '?')}" for b in names)
    note = ("\n\nThe ratio column is kafkalite's figure divided by the best peer's on that row: on throughput "
            "rows above 1 means kafkalite is faster; on latency, RSS and start-time rows below 1 means kafkalite "
            "is better. Broker CPU per record is the user+system time of the broker's process tree over "
            "those runs: the figure least disturbed by other load on a shared machine. One client process "
            "drives each run, so where its CPU per record is several times the broker's, the throughput rows "
            "measure the client and the broker CPU rows are the comparison that counts; the rows with "
            "several client processes at once saturate the machine's cores, so there the broker's CPU per "
            "record shows up as throughput. "
            f"Storage: {storage}. Everything on 127.0.0.1 in one run, one broker loaded at a time, "
            "confluent-kafka (librdkafka) as the client, which shares the machine's cores with the broker.")
    errors = [f"- {b}: {_one_line(e)}" for b in names for e in brokers[b].get("errors", [])]
    skipped = [f"- {b}: skipped ({brokers[b]['skipped']})" for b in names if "skipped" in brokers[b]]
    extra = "\n\n" + "\n".join(errors + skipped) if errors or skipped else ""
    return table(header, rows) + note + extra


def _one_line(error: str) -> str:
    """First line of an error, plus its last line when it carried a log tail (the actual exception)."""
    lines = [ln.strip(" |") for ln in str(error).splitlines() if ln.strip(" |+-")]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0]} … {lines[-1]}"


def _ratio(mine: Any, peers: dict[str, Any], higher: bool) -> str:
    values = {p: v for p, v in peers.items() if isinstance(v, int | float) and v > 0}
    if not isinstance(mine, int | float) or not values:
        return "–"
    best = (max if higher else min)(values, key=lambda p: values[p])
    return f"{mine / values[best]:.2f}× ({best})"
