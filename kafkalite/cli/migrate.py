"""``kafkalite migrate --to BOOTSTRAP``: move a running kafkalite's topics, records, committed offsets, ACLs, SCRAM
users and client quotas into an Apache Kafka cluster, online, resumably (:mod:`kafkalite.migration`).

    kafkalite migrate --to kafka1:9092,kafka2:9092 [--from localhost:9092] [--topics REGEX] [--groups REGEX]
        [--command-config target.properties] [--replication-factor N] [--dry-run] [--verify]
        [--open-transactions wait|abort] [--from-data-dir DIR --scram-passwords FILE]

Exit status: 0 everything chosen was carried (what cannot be carried by its nature is listed, e.g. share-group
state), 1 something failed or ``--verify`` found a difference (each is listed), 2 a usage error.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kafkalite.tools.common import DEFAULT_BOOTSTRAP, ToolError, confluent, run_tool, usage


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", required=True, metavar="BOOTSTRAP", help="the target Kafka cluster (host:port[,...])")
    p.add_argument("--from", dest="source", metavar="BOOTSTRAP",
                   default=os.environ.get("KAFKALITE_BOOTSTRAP_SERVER", DEFAULT_BOOTSTRAP),
                   help="the running kafkalite to read (default $KAFKALITE_BOOTSTRAP_SERVER or localhost:9092)")
    p.add_argument("--command-config", metavar="FILE",
                   help="the target's client properties (security.protocol, sasl.*, ssl.*; Java's or "
                        "librdkafka's names)")
    p.add_argument("--from-command-config", metavar="FILE", help="the source's client properties, likewise")
    p.add_argument("--topics", default=".*", metavar="REGEX",
                   help="topics to migrate: a regular expression matching the whole name (default all but the "
                        "internal ones)")
    p.add_argument("--groups", default=".*", metavar="REGEX",
                   help="groups whose committed offsets to carry (default all)")
    p.add_argument("--replication-factor", type=int, metavar="N",
                   help="replication factor of the topics created on the target (default min(3, brokers))")
    p.add_argument("--dry-run", action="store_true", help="print what would be done; write nothing")
    p.add_argument("--verify", action="store_true",
                   help="after migrating, read both sides and compare every record and committed offset")
    p.add_argument("--verify-only", action="store_true",
                   help="compare what earlier runs migrated, without copying anything")
    p.add_argument("--open-transactions", choices=("wait", "abort"), default="wait",
                   help="transactions still open on the source: wait for them to end (default) or abort them")
    p.add_argument("--transaction-wait", type=float, default=300.0, metavar="SECONDS",
                   help="how long --open-transactions wait waits (default 300)")
    p.add_argument("--from-data-dir", metavar="DIR",
                   help="the source's data directory, for what only it holds: the SCRAM salts and keys")
    p.add_argument("--scram-passwords", metavar="FILE",
                   help="user=password lines: SCRAM users to carry with the source's salt and iterations")
    p.add_argument("--state-dir", metavar="DIR",
                   help="where progress and the offset map are kept (default "
                        "./kafkalite-migrate/<source id>-to-<target id>)")
    p.add_argument("--compression", default="lz4", choices=("none", "gzip", "snappy", "lz4", "zstd"),
                   help="compression of the batches written to the target (default lz4)")
    p.add_argument("--max-padding", type=int, default=10_000_000, metavar="N",
                   help="keep offsets of a partition whose log starts at N or less by writing (and deleting) "
                        "N filler records on the empty target partition (default 10000000; 0: never)")
    p.add_argument("--timeout-ms", type=int, default=30_000, metavar="MS", dest="timeout_ms",
                   help="how long to wait for each answer (default 30000)")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", default=None,
                     help="show progress even when stderr is not a terminal")
    bar.add_argument("--no-progress", action="store_false", dest="progress", help="no progress output")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _run(args: argparse.Namespace) -> int:
    confluent()   # one line naming the missing extra, not a traceback
    from kafkalite.migration.props import PropsError, Side  # the command's own room (after the check above)
    from kafkalite.migration.run import MigrateError, Migration, Options  # as above
    from kafkalite.migration.state import StateError  # as above

    if args.verify and args.verify_only:
        usage("--verify and --verify-only exclude each other")
    if args.dry_run and (args.verify or args.verify_only):
        usage("--dry-run writes nothing and so has nothing to verify")
    if args.scram_passwords and not args.from_data_dir:
        usage("--scram-passwords needs --from-data-dir (the source's salts and keys are read from there)")
    if args.replication_factor is not None and args.replication_factor < 1:
        usage("--replication-factor must be at least 1")
    try:
        opts = Options(
            source=Side.from_args(args.source, args.from_command_config),
            target=Side.from_args(args.to, args.command_config),
            topics=args.topics, groups=args.groups, replication_factor=args.replication_factor,
            dry_run=args.dry_run, verify=args.verify, verify_only=args.verify_only,
            open_transactions=args.open_transactions, transaction_wait=args.transaction_wait,
            state_dir=Path(args.state_dir) if args.state_dir else None,
            from_data_dir=Path(args.from_data_dir) if args.from_data_dir else None,
            scram_passwords=Path(args.scram_passwords) if args.scram_passwords else None,
            compression=args.compression, timeout=max(args.timeout_ms, 1) / 1000, progress=args.progress,
            max_padding=max(args.max_padding, 0), json=args.json)
        opts.source.security()
        opts.target.security()
    except PropsError as exc:
        usage(str(exc))
    try:
        return Migration(opts, sys.stdout, sys.stderr).run()
    except (MigrateError, StateError) as exc:
        raise ToolError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    return run_tool("migrate", _run, args)
