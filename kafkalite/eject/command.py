"""``kafkalite eject DATA_DIR --to NEW_DIR``: a copy of a stopped kafkalite data directory that Apache Kafka 4.4
starts on, as a one-node KRaft broker and controller, with the same topics (and topic ids), offsets, data,
timestamps, committed group offsets, configs, ACLs, SCRAM users, quotas and producer-id range.

    kafkalite eject DATA_DIR --to NEW_DIR [--config FILE] [--override K=V ...] [--listen HOST:PORT]
                    [--controller-listener HOST:PORT] [--internal-listener HOST:PORT]
                    [--allow-open-transactions] [--link] [--dry-run]

``--config`` / ``--override`` / ``--listen`` are the settings the kafkalite broker ran with (as ``kafkalite serve``
takes them): the ``server.properties`` written into NEW_DIR mirrors them. DATA_DIR is only read, under its own
``.lock`` (a running broker's directory is refused). NEW_DIR is built as ``NEW_DIR.part`` and renamed when
complete, so an interrupted eject leaves no directory Kafka could start on half-written (a rerun replaces it).

Exit codes: 0 ejected; 1 refused or failed (one ``kafkalite eject: error: ...`` paragraph on stderr); 2 usage.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.config.broker import BrokerConfig, parse_overrides
from kafkalite.eject import image, properties, snapshot, source
from kafkalite.eject.source import SHARE_STATE_TOPIC, EjectError, Source
from kafkalite.errors import ConfigError
from kafkalite_storage import fs
from kafkalite_storage.checkpoints import (
    fsync_dir,
    uuid_to_base64,
    write_partition_metadata,
    write_properties,
)
from kafkalite_storage.manager import CLEAN_SHUTDOWN, CLEANER, LOG_START, META, RECOVERY_POINT, REPLICATION

#: the KRaft metadata topic's fixed id (Kafka's Uuid.METADATA_TOPIC_ID)
METADATA_TOPIC_ID = uuid.UUID(int=1)
METADATA_DIR = "__cluster_metadata-0"
#: the snapshot's leader epoch (any epoch above 0 works: the quorum's first election moves past it)
SNAPSHOT_EPOCH = 1
LOG_DIR_FILES = (RECOVERY_POINT, LOG_START, REPLICATION, CLEANER)
PROPERTIES_FILE = "server.properties"


@dataclass(slots=True)
class Result:
    new_dir: Path
    properties: Path
    snapshot: str
    counts: dict[str, int]
    next_producer_id: int
    bytes_copied: int
    bytes_linked: int = 0
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("data_dir", metavar="DATA_DIR", help="the stopped kafkalite broker's data directory (log.dirs)")
    p.add_argument("--to", dest="new_dir", metavar="NEW_DIR", required=True,
                   help="the directory to write (must not exist, or be empty)")
    p.add_argument("--config", metavar="FILE", help="the server.properties kafkalite ran with")
    p.add_argument("--override", metavar="K=V", action="append", default=[],
                   help="a setting kafkalite ran with (repeatable), as for kafkalite serve")
    p.add_argument("--listen", metavar="HOST:PORT", help="the listen address kafkalite ran with (PLAINTEXT)")
    p.add_argument("--controller-listener", metavar="HOST:PORT",
                   help="Kafka's KRaft controller listener (default: loopback, the first free port above the "
                        "client listener's)")
    p.add_argument("--internal-listener", metavar="HOST:PORT",
                   help="Kafka's inter-broker listener (default: loopback, the next free port)")
    p.add_argument("--allow-open-transactions", action="store_true",
                   help="eject although transactions are open: Kafka completes those being committed or aborted "
                        "and aborts the ongoing ones once their timeout has passed")
    p.add_argument("--link", action="store_true",
                   help="hard-link the closed segments and producer snapshots instead of copying them (Kafka never "
                        "changes them in place; fast for large directories, which then share those files)")
    p.add_argument("--dry-run", action="store_true", help="read DATA_DIR and say what would be written; write nothing")


def _broker_config(args: argparse.Namespace) -> BrokerConfig:
    """kafkalite's settings as ``kafkalite serve`` reads them (``--config``, the environment, ``--override``,
    ``--listen``)."""
    overrides = parse_overrides(args.override)
    if args.listen:
        host, sep, port = args.listen.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            raise ConfigError(f"--listen {args.listen!r}: expected HOST:PORT")
        overrides["listeners"] = f"PLAINTEXT://{host}:{port}"
    overrides["log.dirs"] = args.data_dir
    return BrokerConfig.load(args.config, overrides)


def _check_target(new_dir: Path, data_dir: Path) -> None:
    a, b = new_dir.resolve(), data_dir.resolve()
    if a == b or b in a.parents or a in b.parents:
        raise EjectError(f"--to {new_dir} must be outside {data_dir} (and not contain it)")
    if new_dir.exists() and (not new_dir.is_dir() or any(new_dir.iterdir())):
        raise EjectError(f"--to {new_dir} exists and is not an empty directory")


_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")


def _copy_file(src: Path, dst: Path) -> int:
    """Copy one file's bytes and times, with the fewest system calls (shutil.copyfile stats each file four times:
    most of its cost here, where the files are many and small): copy_file_range, else sendfile, in the kernel."""
    fin = os.open(src, os.O_RDONLY)
    try:
        st = os.fstat(fin)
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            offset = 0
            while offset < st.st_size:
                try:
                    n = os.copy_file_range(fin, fout, st.st_size - offset, offset, offset)
                except OSError:      # not across these file systems: sendfile
                    n = os.sendfile(fout, fin, offset, st.st_size - offset)
                if n <= 0:
                    raise OSError(f"{src} shrank while it was copied")
                offset += n
            os.utime(fout, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(fout)
    finally:
        os.close(fin)
    return st.st_size


def _copy_partition(src_dir: Path, dst_dir: Path, files: list[str], link: bool) -> tuple[int, int]:
    """Copy a partition directory; with ``link``, hard-link the files Kafka never changes in place -- the closed
    segments (every segment file below the active one's base offset) and producer-state snapshots -- and copy the
    rest (the active segment, which Kafka appends to and whose indexes it resizes; the checkpoints). Returns
    (bytes copied, bytes linked)."""
    dst_dir.mkdir()
    active = max((m.group(1) for m in map(_SEGMENT_FILE.match, files) if m and m.group(2) == "log"), default=None)
    copied = linked = 0
    for f in files:
        m = _SEGMENT_FILE.match(f)
        if link and m and (m.group(2) == "snapshot" or (active is not None and m.group(1) < active)):
            try:
                os.link(src_dir / f, dst_dir / f)
                linked += (dst_dir / f).stat().st_size
                continue
            except OSError:       # another file system, or links not allowed: copy
                pass
        copied += _copy_file(src_dir / f, dst_dir / f)
    return copied, linked


def eject(src: Source, new_dir: Path, config: BrokerConfig, *, controller: str | None = None,
          internal: str | None = None, link: bool = False, dry_run: bool = False) -> Result:
    """Write NEW_DIR from ``src`` (read under the data directory's lock, which the caller holds)."""
    carry = set(src.topics)
    internal_counts = {t: src.topics[t].count for t in ("__consumer_offsets", "__transaction_state",
                                                        SHARE_STATE_TOPIC) if t in src.topics}
    dir_id = src.directory_id or uuid.uuid4()
    props = properties.build(config, node_id=src.node_id, new_dir=str(new_dir.resolve()),
                             internal_partitions=internal_counts, controller=controller, internal=internal)
    settings = {k: properties.get(config, k) for k in (
        "offsets.topic.segment.bytes", "transaction.state.log.segment.bytes",
        "share.coordinator.state.topic.segment.bytes", "min.insync.replicas")}
    settings["transaction.state.log.min.isr"] = props.values["transaction.state.log.min.isr"]
    settings["share.coordinator.state.topic.min.isr"] = props.values["share.coordinator.state.topic.min.isr"]
    img = image.build(src, node_id=src.node_id, directory_id=dir_id, endpoints=props.endpoints,
                      settings=settings, carry=carry)
    end_offset = len(img.records) + 1
    result = Result(new_dir, new_dir / PROPERTIES_FILE, snapshot.file_name(end_offset, SNAPSHOT_EPOCH), img.counts,
                    src.next_producer_id, 0, 0, img.dropped, props.notes)
    if dry_run:
        return result
    part = new_dir.with_name(new_dir.name + ".part")
    if part.exists():
        shutil.rmtree(part)
    part.mkdir(parents=True)
    # one thread: creating files is what costs (threads measured slower on a busy machine's file system)
    for t in sorted(carry):
        for pdir in src.topics[t].partitions.values():
            c, ln = _copy_partition(src.data_dir / pdir.name, part / pdir.name, pdir.files, link)
            result.bytes_copied += c
            result.bytes_linked += ln
    for name in LOG_DIR_FILES:
        if (src.data_dir / name).exists():
            _copy_file(src.data_dir / name, part / name)
    write_properties(str(part / META), {"node.id": str(src.node_id), "directory.id": uuid_to_base64(dir_id),
                                        "version": "1", "cluster.id": src.cluster_id})
    meta_dir = part / METADATA_DIR
    meta_dir.mkdir()
    write_partition_metadata(str(meta_dir / "partition.metadata"), METADATA_TOPIC_ID)
    snapshot.write(str(meta_dir), img.records, end_offset, SNAPSHOT_EPOCH, int(time.time() * 1000))
    # the quorum's state at the snapshot's epoch, no leader yet (Kafka's FileQuorumStateStore, data_version 0 of a
    # static quorum): the first election moves to the next epoch
    (meta_dir / "quorum-state").write_text(json.dumps(
        {"clusterId": "", "leaderId": -1, "leaderEpoch": SNAPSHOT_EPOCH, "votedId": -1, "appliedOffset": 0,
         "currentVoters": [{"voterId": src.node_id}], "data_version": 0}, separators=(",", ":")))
    header = (f"written by kafkalite eject from {src.data_dir.resolve()}\nstart Apache Kafka 4.4 on it with:\n"
              f"  bin/kafka-server-start.sh {result.properties}")
    path = part / PROPERTIES_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)   # it may hold the internal user's password
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(props.text(header))
    # written last: the directory is a clean copy of a cleanly stopped broker (the broker epoch is the image's)
    (part / CLEAN_SHUTDOWN).write_text(json.dumps({"version": 0, "brokerEpoch": img.broker_epoch},
                                                  separators=(",", ":")))
    fd = os.open(part, os.O_RDONLY)
    try:
        fs.syncfs(fd)
    finally:
        os.close(fd)
    if new_dir.exists():
        new_dir.rmdir()          # checked empty above
    os.replace(part, new_dir)
    fsync_dir(str(new_dir.parent))
    return result


def _not_carried(src: Source) -> list[str]:
    out = []
    out.append("feature levels set with UpdateFeatures (Kafka 4.4 starts at its own defaults: metadata.version "
               "4.4-IV2)")
    return out


def _report(src: Source, res: Result, dry: bool) -> str:
    c = res.counts
    lines = [f"{'would eject' if dry else 'ejected'} {src.data_dir} -> {res.new_dir}",
             f"  topics {c['topics']} ({c['partitions']} partitions), configs {c['configs']}, ACLs {c['acls']}, "
             f"SCRAM credentials {c['scram']}, delegation tokens {c['tokens']}, client quotas {c['quotas']}, next producer id "
             f"{res.next_producer_id}",
             f"  cluster id {src.cluster_id}, node id {src.node_id}, metadata snapshot {METADATA_DIR}/{res.snapshot}"]
    if not dry:
        lines.append(f"  {res.bytes_copied:,} bytes of partition data copied"
                     + (f", {res.bytes_linked:,} hard-linked (closed segments: treat {src.data_dir} as read-only "
                        "now, or remove it)" if res.bytes_linked else ""))
    for what, items in (("left out", res.dropped), ("note", res.notes), ("not carried", _not_carried(src)),
                        ("skipped", src.skipped)):
        lines += [f"  {what}: {item}" for item in items]
    if src.open_transactions:
        lines.append(f"  open transactions ({len(src.open_transactions)}): Kafka finishes those being committed or "
                     "aborted and aborts ongoing ones after their timeout: "
                     + ", ".join(f"{t} ({s})" for t, s in src.open_transactions[:10]))
    if not dry:
        lines += ["", "start Apache Kafka 4.4 on it (from the Kafka distribution's directory):",
                  f"  bin/kafka-server-start.sh {res.properties}"]
    return "\n".join(lines)


def _fail(message: str) -> int:
    for line in message.splitlines():
        sys.stderr.write(f"kafkalite eject: error: {line}\n")
    return 1


def run(args: argparse.Namespace) -> int:
    data_dir, new_dir = Path(args.data_dir), Path(args.new_dir)
    try:
        config = _broker_config(args)
    except ConfigError as exc:
        sys.stderr.write(f"kafkalite eject: error: {exc}\n")
        return 2
    if not data_dir.is_dir():
        return _fail(f"{data_dir} is not a directory")
    fd = -1
    try:
        _check_target(new_dir, data_dir)
        fd = source.lock(data_dir)
        src = source.read(data_dir)
        if not src.clean:
            raise EjectError(f"{data_dir} was not shut down cleanly (no .kafka_cleanshutdown): start kafkalite on "
                             "it, let it recover its logs, stop it with SIGTERM, then eject")
        if src.open_transactions and not args.allow_open_transactions:
            listed = ", ".join(f"{t} ({s})" for t, s in src.open_transactions[:10])
            raise EjectError(f"{len(src.open_transactions)} transaction(s) are open: {listed}.\nStart kafkalite and "
                             "let their producers commit or abort them (or let them time out), or pass "
                             "--allow-open-transactions: Kafka then finishes those being committed or aborted and "
                             "aborts the ongoing ones once their transaction timeout has passed.")
        res = eject(src, new_dir, config, controller=args.controller_listener, internal=args.internal_listener,
                    link=args.link, dry_run=args.dry_run)
    except EjectError as exc:
        return _fail(str(exc))
    except (ValueError, OSError) as exc:
        return _fail(f"{type(exc).__name__}: {exc}")
    finally:
        if fd >= 0:
            os.close(fd)
    sys.stdout.write(_report(src, res, args.dry_run) + "\n")
    return 0
