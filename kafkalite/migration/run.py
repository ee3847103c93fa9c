"""One run of ``kafkalite migrate``: plan, copy, carry the rest, report (and verify).

The order, and why:

1. both clusters' metadata; the topics matching ``--topics`` (never the internal ones); the state directory
   (its lock: one run at a time) -- a dry run stops after printing the plan;
2. open transactions on the source resolved (``--open-transactions wait|abort``): each partition is copied up
   to its last stable offset, read after that;
3. target topics created (or prepared) with the copy's timestamp settings; the copy (resuming where a previous
   run stopped); the topics' final timestamp settings;
4. committed offsets of the groups matching ``--groups`` (after the copy: they are translated through the
   offset map), group configs, ACLs, SCRAM credentials, client quotas;
5. the report: what was carried, what was not and why; ``--verify`` compares both sides record by record.

Running it again is safe at any point: a second run copies only what the source gained since (or what a killed
run had not finished), re-commits group offsets (translated again), and re-creates nothing that exists. The
usual cut-over is: run it while the source is live (the bulk), stop the producers and consumers, run it again
(the rest, the final offsets), point the clients at the target.
"""
from __future__ import annotations

import json
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kafkalite.client.wire import WireError
from kafkalite.migration import access, groups, topics, txns
from kafkalite.migration.copier import Copier, CopyError, PartPlan
from kafkalite.migration.progress import ProgressBar
from kafkalite.migration.props import Side
from kafkalite.migration.source import Source, SourceError
from kafkalite.migration.state import State, default_dir
from kafkalite.migration.verify import VerifyResult, verify_partition

TP = tuple[str, int]


class MigrateError(RuntimeError):
    """The migration cannot start or go on (one line for the user)."""


@dataclass
class Options:
    source: Side
    target: Side
    topics: str = ".*"
    groups: str = ".*"
    replication_factor: int | None = None
    dry_run: bool = False
    verify: bool = False
    verify_only: bool = False
    open_transactions: str = "wait"
    transaction_wait: float = 300.0
    state_dir: Path | None = None
    from_data_dir: Path | None = None
    scram_passwords: Path | None = None
    compression: str = "lz4"
    timeout: float = 30.0
    progress: bool | None = None          # None: a bar on a TTY, plain lines otherwise
    max_padding: int = 10_000_000
    json: bool = False


@dataclass
class Report:
    topics: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    acls: int = 0
    scram: list[str] = field(default_factory=list)
    quotas: int = 0
    records: int = 0                 # written by this run
    matched: int = 0                 # found on the target after a killed run's journal, not written again
    seconds: float = 0.0
    not_carried: list[str] = field(default_factory=list)    # by nature or by choice: reported, exit 0
    problems: list[str] = field(default_factory=list)       # should have been carried and was not: exit 1
    verify: dict[str, Any] | None = None
    state_dir: str = ""
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _admin(side: Side, timeout: float) -> Any:
    from confluent_kafka import KafkaException  # confluent-kafka: checked by the CLI
    from confluent_kafka.admin import AdminClient  # as above

    a = AdminClient(side.client_config())
    try:
        a.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise MigrateError(f"cannot reach {side.bootstrap}: {exc.args[0].str() if exc.args else exc}") from None
    return a


def _offsets(admin: Any, tps: list[TP], spec: str, timeout: float, committed: bool = False) -> dict[TP, int]:
    from confluent_kafka import IsolationLevel, KafkaException, TopicPartition  # as above
    from confluent_kafka.admin import OffsetSpec  # as above

    if not tps:
        return {}
    s = OffsetSpec.earliest() if spec == "earliest" else OffsetSpec.latest()
    iso = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    deadline = time.monotonic() + timeout
    while True:   # a topic just created may not be known to every broker yet (retriable errors)
        futs = admin.list_offsets({TopicPartition(t, p): s for t, p in tps}, isolation_level=iso,
                                  request_timeout=timeout)
        try:
            return {(k.topic, k.partition): f.result(timeout=timeout).offset for k, f in futs.items()}
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if err is None or not (err.retriable() or err.code() in (3, 5, 6, 9)) or time.monotonic() > deadline:
                raise MigrateError(f"ListOffsets on {len(tps)} partition(s): {err.str() if err else exc}") from None
            time.sleep(0.2)


class Migration:
    def __init__(self, opts: Options, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.o = opts
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.report = Report(dry_run=opts.dry_run)
        self.source = Source(opts.source.bootstrap, security=opts.source.security(), timeout=opts.timeout)

    def say(self, text: str) -> None:
        if not self.o.json:
            self.err.write(f"migrate: {text}\n")
            self.err.flush()

    # -- 1. plan ---------------------------------------------------------------------------------------------
    def run(self) -> int:
        from confluent_kafka import KafkaException  # confluent-kafka: checked by the CLI

        try:
            return self._run()
        except (SourceError, CopyError, txns.TxnError, WireError) as exc:
            raise MigrateError(str(exc)) from None
        except KafkaException as exc:   # an admin request the target or the source refused
            err: Any = exc.args[0] if exc.args else None
            raise MigrateError(f"{err.name()}: {err.str()}" if hasattr(err, "str") else str(exc)) from None
        except (OSError, ValueError) as exc:   # the state directory, a passwords or credentials file
            raise MigrateError(str(exc)) from None
        finally:
            self.source.close()

    def _run(self) -> int:
        o = self.o
        meta = self.source.metadata()
        src_admin = _admin(o.source, o.timeout)
        tgt_admin = _admin(o.target, o.timeout)
        tmeta = tgt_admin.list_topics(timeout=o.timeout)
        target_cluster = tmeta.cluster_id or ""
        if target_cluster and target_cluster == meta.cluster_id:
            raise MigrateError("the source and the target are the same cluster")
        try:
            pattern = re.compile(o.topics)
            re.compile(o.groups)
        except re.error as exc:
            raise MigrateError(f"bad regular expression: {exc}") from None
        names = sorted(n for n, t in meta.topics.items() if not t.internal and not n.startswith("__")
                       and pattern.fullmatch(n))
        src_parts = {n: len(meta.topics[n].leaders) for n in names}
        target_topics = {n: len(t.partitions) for n, t in tmeta.topics.items()}
        rf = o.replication_factor or min(3, max(len(tmeta.brokers), 1))
        sconf = topics.source_configs(src_admin, names, o.timeout)
        plans = topics.plan_topics(src_parts, sconf, target_topics, rf)
        state_dir = o.state_dir or default_dir(meta.cluster_id, target_cluster)
        self.report.state_dir = str(state_dir)
        if o.dry_run:
            return self._dry_run(plans, src_admin, state_dir, meta.cluster_id, target_cluster)
        state = State(state_dir, meta.cluster_id, target_cluster)
        state.lock()
        try:
            return self._migrate(state, plans, src_admin, tgt_admin)
        finally:
            state.unlock()

    def _dry_run(self, plans: list[topics.TopicPlan], src_admin: Any, state_dir: Path, src_id: str,
                 tgt_id: str) -> int:
        o = self.o
        tps = [(p.name, i) for p in plans for i in range(p.partitions)]
        start = _offsets(src_admin, tps, "earliest", o.timeout)
        end = _offsets(src_admin, tps, "latest", o.timeout)
        stable = _offsets(src_admin, tps, "latest", o.timeout, committed=True)
        maps = {}
        if (state_dir / "migration.json").exists():
            maps = State(state_dir, src_id, tgt_id, create=False).journal.maps
        for p in plans:
            parts = [(p.name, i) for i in range(p.partitions)]
            offsets = sum(end[tp] - start[tp] for tp in parts)
            copied = sum(max(min(maps[tp].src_next, end[tp]) - start[tp], 0) for tp in parts if tp in maps)
            kept = "kept unless the source has gaps" if all(start[tp] == 0 or p.deletable for tp in parts) \
                else "mapped (log start above 0 on a compacted topic)"
            open_tx = [f"{tp[0]}-{tp[1]}" for tp in parts if stable[tp] < end[tp]]
            self.report.topics.append({
                "topic": p.name, "partitions": p.partitions, "replication_factor": p.replication_factor,
                "action": "exists on the target" if p.exists else "create", "configs": p.configs,
                "offsets": offsets, "already_copied": copied, "offsets_kept": kept,
                "open_transactions_in": open_tx, "notes": p.notes})
        grp = {g: k for g, k in groups.list_groups(src_admin, o.timeout).items() if groups.matches(o.groups, g)}
        self.report.groups = [{"group": g, "type": k} for g, k in sorted(grp.items())]
        self.report.acls = len(access.source_acls(src_admin, o.timeout))
        users = access.scram_users(src_admin, o.timeout)
        self.report.scram = [f"{u}/{m}" for u, ms in sorted(users.items()) for m in ms]
        try:
            self.report.quotas = len(access.source_quotas(self.source))
        except Exception as exc:
            self.report.problems.append(f"client quotas cannot be read: {exc}")
        for g in groups.share_groups(self.source):
            self.report.not_carried.append(f"share group {g}: its state cannot be written to a Kafka cluster")
        return self._print()

    # -- 2..4 ------------------------------------------------------------------------------------------------
    def _migrate(self, state: State, plans: list[topics.TopicPlan], src_admin: Any, tgt_admin: Any) -> int:
        o = self.o
        by_name = {p.name: p for p in plans}
        tps = [(p.name, i) for p in plans for i in range(p.partitions)]
        if not o.verify_only:
            ends = self._stable_ends(src_admin, tps)
            start = _offsets(src_admin, tps, "earliest", o.timeout)
            for p in plans:
                topics.ensure(tgt_admin, p, state, o.timeout)
            try:
                topics.wait_ready(tgt_admin, plans, o.timeout)
            except RuntimeError as exc:
                raise MigrateError(str(exc)) from None
            tstart = _offsets(tgt_admin, tps, "earliest", o.timeout)
            tend = _offsets(tgt_admin, tps, "latest", o.timeout)
            self._copy(state, plans, tps, start, ends, tstart, tend)
            for p in plans:
                topics.finalize(tgt_admin, p, state, o.timeout)
            self._groups(state, src_admin, tgt_admin, {p.name for p in plans})
            self._access(src_admin, tgt_admin)
        for p in plans:
            m = {i: state.journal.maps.get((p.name, i)) for i in range(p.partitions)}
            kept = all(x is not None and x.identity for x in m.values())
            self.report.topics.append({"topic": p.name, "partitions": p.partitions,
                                       "records": sum(x.records for x in m.values() if x is not None),
                                       "offsets": "kept" if kept else "mapped", "notes": p.notes})
        if o.verify or o.verify_only:
            self._verify(state, by_name, src_admin, tgt_admin)
        return self._print()

    def _stable_ends(self, src_admin: Any, tps: list[TP]) -> dict[TP, int]:
        """Each partition's end to copy to: its last stable offset once open transactions are resolved."""
        o = self.o
        hwm = _offsets(src_admin, tps, "latest", o.timeout)
        lso = _offsets(src_admin, tps, "latest", o.timeout, committed=True)
        unstable = {tp for tp in tps if lso[tp] < hwm[tp]}
        if unstable:
            open_txns = txns.open_transactions(self.source, unstable)
            for t in open_txns:
                what = f"open transaction of {t.transactional_id} (producer id {t.producer_id})"
                if o.open_transactions == "abort":
                    self.say(f"aborting the {what}")
                    txns.abort(self.source, t, o.timeout)
                    self.report.not_carried.append(f"{what}: aborted on the source (--open-transactions abort); "
                                                   "its records are copied as aborted")
            if o.open_transactions == "wait":
                self.say(f"waiting up to {o.transaction_wait:g} s for open transactions in "
                         f"{len(unstable)} partition(s) to end")

            def stable(parts: list[TP]) -> dict[TP, tuple[int, int]]:
                lso_now = _offsets(src_admin, parts, "latest", o.timeout, committed=True)
                return {tp: (lso_now[tp], 0) for tp in parts}

            wait = o.transaction_wait if o.open_transactions == "wait" else max(o.timeout, 30.0)
            short = txns.wait_stable(stable, {tp: hwm[tp] for tp in unstable}, wait)
            for tp in short:
                self.report.problems.append(
                    f"{tp[0]}-{tp[1]}: a transaction is still open; copied up to its last stable offset only "
                    "(run again when it has ended, or with --open-transactions abort)")
        return _offsets(src_admin, tps, "latest", o.timeout, committed=True)

    def _copy(self, state: State, plans: list[topics.TopicPlan], tps: list[TP], start: dict[TP, int],
              ends: dict[TP, int], tstart: dict[TP, int], tend: dict[TP, int]) -> None:
        o = self.o
        by_name = {p.name: p for p in plans}
        if "txn_id" not in state.doc:
            state.doc["txn_id"] = f"kafkalite-migrate-{uuid.uuid4().hex[:12]}"
            state.save()

        def txn_used() -> None:
            if not state.doc.get("txn_producer_used"):
                state.doc["txn_producer_used"] = True
                state.save()

        part_plans = [PartPlan(tp, start[tp], ends[tp], tend[tp], tstart[tp], by_name[tp[0]].deletable)
                      for tp in tps]
        total = sum(max(p.end - p.start, 0) for p in part_plans)
        bar = ProgressBar(total, out=self.err, enabled=not o.json if o.progress is None else o.progress)
        copier = Copier(self.source, o.target, state.journal, txn_id=state.doc["txn_id"], on_txn_use=txn_used,
                        compression=o.compression, timeout=o.timeout, max_padding=o.max_padding,
                        max_message_bytes=max((p.max_message_bytes for p in plans), default=1 << 20),
                        progress=bar.update)
        try:
            if state.doc.get("txn_producer_used"):
                copier.txn_producer()   # aborts a transaction a killed run left open on the target
            copier.prepare(part_plans)
            stats = copier.run()
        except KeyboardInterrupt:
            copier.checkpoint()
            raise
        finally:
            bar.finish()
            copier.close()
        self.report.records = stats.records
        self.report.matched = stats.matched
        self.report.seconds = round(bar.elapsed, 3)
        self.report.problems += stats.lost
        if stats.matched:
            self.say(f"resumed: {stats.matched} records were already on the target")

    def _groups(self, state: State, src_admin: Any, tgt_admin: Any, migrated: set[str]) -> None:
        o = self.o
        kinds = groups.list_groups(src_admin, o.timeout)
        chosen = sorted(g for g in kinds if groups.matches(o.groups, g))
        for g in chosen:
            gp = groups.plan_group(g, kinds[g], groups.committed(src_admin, g, o.timeout), state.journal.maps,
                                   migrated)
            problem = groups.write(tgt_admin, gp, o.timeout)
            self.report.groups.append({"group": g, "type": gp.kind, "offsets": len(gp.translated),
                                       "skipped": gp.skipped})
            if problem:
                self.report.problems.append(f"group {g}: committed offsets not written: {problem}")
            for s in gp.skipped:
                self.report.not_carried.append(f"group {g}: {s}")
        self.report.problems += groups.copy_configs(src_admin, tgt_admin, chosen, o.timeout)
        for g in groups.share_groups(self.source):
            self.report.not_carried.append(f"share group {g}: its state (acquired/acknowledged records) cannot be "
                                           "written to a Kafka cluster; its consumers start from the share "
                                           "group's auto.offset.reset on the target")

    def _access(self, src_admin: Any, tgt_admin: Any) -> None:
        o = self.o
        acls = access.source_acls(src_admin, o.timeout)
        problems = access.create_acls(tgt_admin, acls, o.timeout)
        self.report.acls = len(acls) - len(problems)
        self.report.problems += problems
        users = access.scram_users(src_admin, o.timeout)
        if users:
            if o.from_data_dir is None:
                self.report.not_carried += [
                    f"SCRAM user {u} ({', '.join(ms)}) not carried: give --from-data-dir (the source's salts and "
                    "keys) and --scram-passwords (kafkalite keeps no passwords, Kafka takes only salted ones)"
                    for u, ms in sorted(users.items())]
            else:
                creds = access.read_credentials(o.from_data_dir)
                passwords = access.read_passwords(o.scram_passwords) if o.scram_passwords else {}
                carried, not_carried, problems = access.copy_scram(tgt_admin, creds, passwords, o.timeout)
                self.report.scram = carried
                self.report.not_carried += not_carried
                self.report.problems += problems
        try:
            quotas = access.source_quotas(self.source)
            problems = access.write_quotas(o.target.bootstrap, o.target.security(), quotas, o.timeout)
            self.report.quotas = len(quotas) - len(problems)
            self.report.problems += problems
        except Exception as exc:
            self.report.problems.append(f"client quotas not carried: {exc}")
        self.report.not_carried.append("producer state (idempotent sequence numbers, producer ids, transactional "
                                       "ids): producers start new sessions on the target")

    def _verify(self, state: State, plans: dict[str, topics.TopicPlan], src_admin: Any, tgt_admin: Any) -> None:
        o = self.o
        res = VerifyResult()
        self.say("verifying: reading both sides")
        for (t, p), m in sorted(state.journal.maps.items()):
            if t in plans:
                verify_partition(self.source, o.target, (t, p), m, plans[t].log_append_time, o.timeout, res)
        kinds = groups.list_groups(src_admin, o.timeout)
        for g in sorted(x for x in kinds if groups.matches(o.groups, x)):
            gp = groups.plan_group(g, kinds[g], groups.committed(src_admin, g, o.timeout), state.journal.maps,
                                   set(plans))
            have = groups.target_committed(tgt_admin, g, o.timeout)
            for tp, want in gp.translated.items():
                if have.get(tp) != want:
                    res.problems.append(f"group {g} {tp[0]}-{tp[1]}: committed offset on the target is "
                                        f"{have.get(tp)}, the translated source offset is {want}")
        self.report.verify = {"partitions": res.partitions, "records": res.records, "differences": res.problems,
                              "skipped_offsets": res.skipped_offsets, "target_trimmed": res.target_trimmed}
        self.report.not_carried += res.target_trimmed
        self.report.problems += [f"verify: {p}" for p in res.problems]

    # -- 5. the report ---------------------------------------------------------------------------------------
    def _print(self) -> int:
        r = self.report
        if self.o.json:
            json.dump(r.to_json(), self.out, indent=1, default=str)
            self.out.write("\n")
            return 1 if r.problems else 0
        w = self.out.write
        if r.dry_run:
            w("Dry run: nothing was written.\n")
        for t in r.topics:
            if r.dry_run:
                w(f"topic {t['topic']}: {t['action']}, {t['partitions']} partition(s), replication factor "
                  f"{t['replication_factor']}, {t['offsets']:,} offsets ({t['already_copied']:,} copied before), "
                  f"offsets {t['offsets_kept']}\n")
                if t["configs"]:
                    w(f"  configs: {', '.join(f'{k}={v}' for k, v in sorted(t['configs'].items()))}\n")
                if t["open_transactions_in"]:
                    w(f"  open transactions in: {', '.join(t['open_transactions_in'])}\n")
            else:
                w(f"topic {t['topic']}: {t['partitions']} partition(s), {t['records']:,} records on the target, "
                  f"offsets {t['offsets']}\n")
            for n in t.get("notes", []):
                w(f"  note: {n}\n")
        for g in r.groups:
            w(f"group {g['group']} ({g['type']})" + (f": {g['offsets']} committed offset(s) translated"
                                                    if "offsets" in g else "") + "\n")
        w(f"ACLs: {r.acls}; SCRAM credentials: {len(r.scram)}"
          + (f" ({', '.join(r.scram)})" if r.scram else "") + f"; client quota entities: {r.quotas}\n")
        if not r.dry_run and r.seconds:
            rate = r.records / r.seconds if r.seconds else 0
            w(f"copied {r.records:,} records in {r.seconds:.1f} s ({rate:,.0f} records/s); "
              f"state in {r.state_dir}\n")
        if r.verify is not None:
            w(f"verify: {r.verify['records']:,} records in {r.verify['partitions']} partition(s) compared, "
              f"{len(r.verify['differences'])} difference(s)\n")
        for n in r.not_carried:
            w(f"not carried: {n}\n")
        for p in r.problems:
            w(f"PROBLEM: {p}\n")
        return 1 if r.problems else 0
