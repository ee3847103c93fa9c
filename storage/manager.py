"""The log directory (Kafka's LogManager): partition logs, log-dir checkpoints, clean-shutdown marker.

Layout of a log dir: `meta.properties` (KRaft v1: version, cluster.id, node.id, directory.id), `.lock`,
`<topic>-<partition>/` directories, the offset checkpoints `recovery-point-offset-checkpoint`,
`log-start-offset-checkpoint`, `replication-offset-checkpoint` (high watermarks), `cleaner-offset-checkpoint`,
and `.kafka_cleanshutdown` (JSON `{"version":0,"brokerEpoch":N}`) written last on a clean close and deleted
when the directory is opened. Its presence at open means indexes and producer snapshots can be trusted;
without it every log is recovered from its recovery point. Partition directories ending in `-delete` are
half-deleted topics and are removed; `-future` and `-stray` ones are left alone. The KRaft metadata log
`__cluster_metadata-0` is not a topic and is not loaded.

A failing disk never ends housekeeping or close: a failed flush or checkpoint file is logged once (again
when it recovers) and the rest still runs; close closes every file whatever fails, and writes
`.kafka_cleanshutdown` only if every log was flushed and closed and every checkpoint written, so that the
next start recovers whatever may not be durable. A damaged checkpoint file is ignored with a warning
(Kafka's LogManager resets the recovery points then: a full recovery after an unclean stop). With many logs
(more than BULK_SYNC_LOGS to sync), checkpoint and close make them durable with one syncfs of the log dir's
file system instead of fsyncs per file (`fs.syncfs`, a fault-injected step like the fsyncs it replaces); a
failed syncfs puts the bookkeeping back and counts as a failed flush.

Lazy loading. After a clean shutdown nothing needs recovery, so opening registers each partition directory by
name only (with its checkpointed offsets) and loads it on first use (`get_log`), or in the background
(`load_pending`, in slices from a worker thread), as Kafka's parallel log loading makes a start with many
partitions quick. Checkpoints carry the values of logs not loaded yet over unchanged. The latest leader
epoch of every partition (Metadata answers it for each) is kept at clean close in a file of ours,
`kafkalite-leader-epochs` (offset-checkpoint format), so an unloaded partition's epoch is known without
reading its directory (without that file, e.g. a data dir written by Kafka, a partition's epoch is read
from its own leader-epoch-checkpoint when first asked for).

After an unclean shutdown the same holds, as Kafka recovers each log on its own: every partition is
registered, and recovered from its recovery point (segments after it re-read, indexes and producer state
rebuilt, a torn tail truncated) when it is first used or by the background loader -- always before it
serves a request, since every access goes through `get_log`. A partition is registered with its
checkpointed recovery point and log start offset, which checkpoints carry over unchanged until it is
recovered. A clean close while some logs have still not been recovered writes no `.kafka_cleanshutdown`,
so the next start recovers them (the others' recovery points are then at their log ends: nothing to redo).
An unrecovered partition's leader epoch comes from its leader-epoch-checkpoint as it was at the crash; its
recovery may drop entries past the recovered log end, as Kafka's truncation does.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite_storage import fs
from kafkalite_storage.checkpoints import (
    read_leader_epochs,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
    uuid_to_base64,
    write_atomic,
    write_offset_checkpoint,
    write_properties,
)
from kafkalite_storage.config import LogConfig
from kafkalite_storage.errors import StorageError
from kafkalite_storage.handles import TooManyOpenFilesError

if TYPE_CHECKING:
    from kafkalite_storage.log import PartitionLog
    from kafkalite_storage.segment import LogSegment

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
RECOVERY_POINT = "recovery-point-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
REPLICATION = "replication-offset-checkpoint"
CLEANER = "cleaner-offset-checkpoint"
META = "meta.properties"
LEADER_EPOCHS = "kafkalite-leader-epochs"
BULK_SYNC_LOGS = 64   # a checkpoint with more logs to fsync than this syncs the file system once instead
METADATA_LOG = "__cluster_metadata"


def _fd_grace_s() -> float:
    """How long a removed segment's descriptors stay open (the log module's FD_GRACE_S).

    The log module (and the segment, index, producer-state modules under it) is imported with the first partition
    log this manager opens or creates, not with the manager: a broker that starts fresh, or after a clean stop
    (when partitions are registered by name and loaded on first use), answers its first requests without it."""
    from kafkalite_storage.log import FD_GRACE_S  # only with segments of a deleted log: see above

    return FD_GRACE_S

_DIR_RE = re.compile(r"^(.+)-(\d+)$")


@dataclass(slots=True)
class _Unloaded:
    """A partition directory registered at open, not loaded yet, and its checkpointed offsets; `clean`
    False: it is recovered from its recovery point when loaded (the open followed an unclean stop)."""

    path: str
    recovery_point: int | None
    log_start_offset: int | None
    high_watermark: int | None
    cleaner: int | None
    leader_epoch: int | None      # None: not known yet (read from its leader-epoch-checkpoint when asked)
    clean: bool = True


def _sync_filesystem(path: str) -> None:
    """Make everything written to the file system holding `path` durable (`fs.syncfs`: syncfs(2), or sync(2)
    where libc has none); OSError if it reports a failure."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fs.syncfs(fd)
    finally:
        os.close(fd)


def _discard_partial_dir(path: str) -> str | None:
    """Remove a partition directory whose creation failed half-way (renamed first, as a deletion is, so a
    crash in the middle leaves a `-delete` directory the next start removes). Returns the path still to
    remove when that failed (out of descriptors: removing a tree needs some), else None."""
    if path.endswith("-delete"):
        target = path
    else:
        target = f"{path}.{uuid.uuid4().hex}-delete"
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return None
        except OSError:
            target = path
    shutil.rmtree(target, ignore_errors=True)
    if os.path.exists(target):
        log.warning("could not remove %s yet; retrying at the next cleanup", target)
        return target
    return None


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """`<topic>-<partition>` -> (topic, partition); None for other names (incl. -delete/-future/-stray)."""
    m = _DIR_RE.match(name)
    if not m:
        return None
    return m.group(1), int(m.group(2))


class LogManager:
    """Every partition log of one log directory."""

    #: producer.id.expiration.ms (a broker setting in Kafka; 1 day)
    producer_id_expiration_ms = 86_400_000

    def __init__(self, log_dir: str, default_config: LogConfig, node_id: int, cluster_id: str) -> None:
        self.log_dir = log_dir
        self.default_config = default_config
        self.node_id = node_id
        self.cluster_id = cluster_id
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._unloaded: dict[tuple[str, int], _Unloaded] = {}   # clean open: loaded on first use
        self._load_lock = threading.RLock()
        #: the config a log gets when it is loaded lazily (the broker sets it: topic overrides over defaults)
        self.config_for: Callable[[str], LogConfig] | None = None
        #: runs a function on the thread that appends to the logs (the broker's event loop) and returns its
        #: result; retention, in a worker thread, rolls an expired active segment through it. None: the
        #: caller of enforce_retention is that thread (tests, tools)
        self.run_on_owner: Callable[[Callable[[], Any]], Any] | None = None
        self._closing = False
        self._removals: list[str] = []   # directories whose removal failed (out of descriptors): retried
        self._zombies: list[tuple[float, LogSegment]] = []  # segments of deleted logs, fds still open
        self._zombie_lock = threading.Lock()
        self._create_lock = threading.Lock()   # create_log may run in several worker threads at once
        self._lock_fd = -1
        self.broker_epoch = 0
        self.was_clean = False
        self.closed = False
        self._failing: set[str] = set()  # housekeeping steps failing now (logged once, and on recovery)

    # ---- open ------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        log_dir: str,
        default_config: LogConfig | None = None,
        node_id: int = 1,
        cluster_id: str | None = None,
    ) -> LogManager:
        """Lock the directory, check/write meta.properties, load (and if needed recover) every log."""
        fs.makedirs(log_dir, exist_ok=True)
        cfg = default_config if default_config is not None else LogConfig()
        lock_fd = os.open(os.path.join(log_dir, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(lock_fd)
            raise StorageError(f"log dir {log_dir} is locked: another broker (or process) is using it") from exc
        try:
            meta = read_properties(os.path.join(log_dir, META))
            if meta:
                found_node = meta.get("node.id", meta.get("broker.id"))
                if found_node is not None and int(found_node) != node_id:
                    raise StorageError(f"{log_dir}/meta.properties has node.id {found_node}, not {node_id}")
                found_cluster = meta.get("cluster.id")
                if cluster_id is not None and found_cluster and found_cluster != cluster_id:
                    raise StorageError(f"{log_dir} belongs to cluster {found_cluster}, not {cluster_id}")
                cluster = found_cluster or cluster_id or uuid_to_base64(uuid.uuid4())
            else:
                cluster = cluster_id or uuid_to_base64(uuid.uuid4())
                write_properties(
                    os.path.join(log_dir, META),
                    {"node.id": str(node_id), "directory.id": uuid_to_base64(uuid.uuid4()), "version": "1",
                     "cluster.id": cluster},
                )
            self = cls(log_dir, cfg, node_id, cluster)
            self._lock_fd = lock_fd
            self._load(fresh=not meta)
        except BaseException:
            os.close(lock_fd)
            raise
        return self

    def _load(self, fresh: bool = False) -> None:
        marker = os.path.join(self.log_dir, CLEAN_SHUTDOWN)
        clean = os.path.exists(marker)
        self.was_clean = clean
        if clean:
            try:
                with open(marker, encoding="utf-8") as f:
                    self.broker_epoch = int(json.load(f).get("brokerEpoch", 0))
            except (ValueError, OSError, AttributeError):
                self.broker_epoch = 0
        recovery = self._read_checkpoint(RECOVERY_POINT)
        starts = self._read_checkpoint(LOG_START)
        cleaned = self._read_checkpoint(CLEANER)
        hws = self._read_checkpoint(REPLICATION) if clean else {}
        epochs_path = os.path.join(self.log_dir, LEADER_EPOCHS)
        epochs = self._read_checkpoint(LEADER_EPOCHS) if clean and os.path.exists(epochs_path) else {}
        with os.scandir(self.log_dir) as it:   # the entry types come with the listing: no stat per partition
            dirs = sorted(e.name for e in it if e.is_dir())
        for name in dirs:
            path = os.path.join(self.log_dir, name)
            if name.endswith("-delete"):
                log.info("removing half-deleted log dir %s", name)
                shutil.rmtree(path, ignore_errors=True)
                continue
            tp = parse_partition_dir(name)
            if tp is None or tp[0] == METADATA_LOG:
                continue
            self._unloaded[tp] = _Unloaded(path, recovery.get(tp), starts.get(tp), hws.get(tp),
                                           cleaned.get(tp), epochs.get(tp), clean)
        if clean:
            os.unlink(marker)
        if os.path.exists(epochs_path):
            os.unlink(epochs_path)   # only valid for the clean stop that wrote it
        log.info("opened %s (%s)%s", self.log_dir,
                 "new log dir" if fresh else "clean shutdown" if clean else "unclean shutdown",
                 f": {len(self._unloaded)} logs registered, "
                 f"{'loaded' if clean else 'recovered from their recovery points'} on first use or in the "
                 "background" if self._unloaded else "")

    def _materialize(self, key: tuple[str, int]) -> PartitionLog | None:
        """Load (after an unclean stop: recover) a partition registered at open (any thread; once)."""
        with self._load_lock:
            plog = self._logs.get(key)
            if plog is not None:
                return plog
            spec = self._unloaded.get(key)
            if spec is None or self._closing:
                return None
            cfg = self.config_for(key[0]) if self.config_for is not None else self.default_config
            from kafkalite_storage.log import PartitionLog  # the first partition log: see _fd_grace_s

            plog = PartitionLog.open(spec.path, key[0], key[1], cfg, clean=spec.clean,
                                     recovery_point=spec.recovery_point or 0,
                                     log_start_offset=spec.log_start_offset or 0)
            plog.cleaner_checkpoint = min(spec.cleaner or 0, plog.log_end_offset)
            self._logs[key] = plog
            del self._unloaded[key]
            return plog

    def load_pending(self, limit: int = 1000) -> int:
        """Load up to `limit` logs not loaded yet (blocking: a worker thread); returns how many remain."""
        for key in list(self._unloaded)[:limit]:
            if self._closing:
                break
            try:
                self._materialize(key)
            except (OSError, StorageError):
                log.exception("loading %s-%d failed", *key)
                self._unloaded.pop(key, None)
        return len(self._unloaded)

    def load(self, keys: list[tuple[str, int]]) -> None:
        """Load these partitions if they are not loaded yet (blocking: a worker thread)."""
        for key in keys:
            if key in self._unloaded:
                self._materialize(key)

    def unloaded(self, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """Those of `keys` registered but not loaded yet (cheap)."""
        pending = self._unloaded
        return [k for k in keys if k in pending] if pending else []

    def leader_epoch_of(self, topic: str, partition: int) -> int:
        """The partition's latest leader epoch (-1: none), without loading it."""
        plog = self._logs.get((topic, partition))
        if plog is not None:
            return plog.latest_epoch()
        spec = self._unloaded.get((topic, partition))
        if spec is not None:
            if spec.leader_epoch is None:   # no clean stop's epochs file: its own checkpoint, read once
                entries = read_leader_epochs(os.path.join(spec.path, "leader-epoch-checkpoint"))
                spec.leader_epoch = entries[-1][0] if entries else -1
            return spec.leader_epoch
        plog = self.get_log(topic, partition)
        return plog.latest_epoch() if plog is not None else -1

    @property
    def pending_loads(self) -> int:
        """How many registered partitions are not loaded yet."""
        return len(self._unloaded)

    def partitions(self) -> list[tuple[str, int]]:
        """Every (topic, partition) of the log dir, loaded or not."""
        return [*self._logs, *self._unloaded]

    def topic_id_of(self, topic: str, partition: int) -> uuid.UUID | None:
        """The topic id recorded for a partition, without loading it."""
        plog = self._logs.get((topic, partition))
        if plog is not None:
            return plog.topic_id
        spec = self._unloaded.get((topic, partition))
        if spec is None:
            return None
        try:
            return read_partition_metadata(os.path.join(spec.path, "partition.metadata"))
        except (OSError, ValueError):
            return None

    def _read_checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        try:
            return read_offset_checkpoint(os.path.join(self.log_dir, name))
        except (ValueError, OSError) as exc:
            log.warning("ignoring unreadable %s: %s", name, exc)
            return {}

    # ---- logs --------------------------------------------------------------------------------------
    def create_log(
        self, topic: str, partition: int, topic_id: uuid.UUID | None = None, config: LogConfig | None = None
    ) -> PartitionLog:
        """Create `<topic>-<partition>` (idempotent: an existing log is returned, its config updated).

        All or nothing: if any step fails (out of descriptors, out of space), the half-made directory is
        removed and a StorageError (TooManyOpenFilesError for EMFILE/ENFILE) is raised. Thread-safe."""
        key = (topic, partition)
        with self._create_lock:
            existing = self._logs.get(key) or self._materialize(key)
            if existing is not None:
                if config is not None:
                    existing.update_config(config)
                if topic_id is not None and existing.topic_id is None:
                    existing.set_topic_id(topic_id)
                return existing
            path = os.path.join(self.log_dir, f"{topic}-{partition}")
            fresh = not os.path.exists(path)
            try:
                from kafkalite_storage.log import PartitionLog  # the first partition log: see _fd_grace_s

                plog = PartitionLog.create(path, topic, partition, topic_id, config or self.default_config)
            except (OSError, StorageError) as exc:
                if fresh:
                    self._remove_dir(path)
                if isinstance(exc, StorageError):
                    raise
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    raise TooManyOpenFilesError(exc.errno, f"cannot create {topic}-{partition}: {exc}") from exc
                raise StorageError(f"cannot create {topic}-{partition}: {exc}") from exc
            self._logs[key] = plog
            return plog

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        plog = self._logs.get((topic, partition))
        if plog is None and self._unloaded:
            return self._materialize((topic, partition))
        return plog

    def logs(self) -> Iterator[tuple[tuple[str, int], PartitionLog]]:
        """Iterate ((topic, partition), PartitionLog) pairs (a snapshot: safe while logs change), loading
        every log not loaded yet (blocking); `loaded_logs()` skips those."""
        if self._unloaded:
            self.load_pending(len(self._unloaded))
        return self.loaded_logs()

    def loaded_logs(self) -> Iterator[tuple[tuple[str, int], PartitionLog]]:
        """The logs loaded so far; `partitions()` names every partition, `get_log` loads one."""
        return iter(list(self._logs.items()))

    def delete_topic(self, topic: str) -> None:
        """Delete every partition of `topic` (dir renamed to `<dir>.<uuid hex>-delete`, then removed).

        The files go at once; their descriptors are closed by `cleanup()` after file.delete.delay.ms so
        that in-flight sendfile regions stay valid. Checkpoints drop the partitions at the next checkpoint.
        """
        for key in [k for k in (*self._logs, *self._unloaded) if k[0] == topic]:
            self.delete_log(*key)

    def delete_log(self, topic: str, partition: int) -> None:
        plog: PartitionLog | str | None = self._logs.pop((topic, partition), None)
        if plog is None:
            spec = self._unloaded.pop((topic, partition), None)
            plog = spec.path if spec is not None else None
        if plog is not None:
            self.remove_detached(plog)

    def detach_topic(self, topic: str) -> list[PartitionLog | str]:
        """Take every partition of `topic` out of the manager at once (cheap: call on the owner thread);
        then `remove_detached` each (blocking: a worker thread). The caller keeps the name reserved
        until that is done, so that a new topic of the same name cannot meet the old directories."""
        with self._load_lock:
            out: list[PartitionLog | str] = [self._logs.pop(k) for k in [k for k in self._logs if k[0] == topic]]
            out += [self._unloaded.pop(k).path for k in [k for k in self._unloaded if k[0] == topic]]
        return out

    def detach_topics(self, topics: Collection[str]) -> dict[str, list[PartitionLog | str]]:
        """`detach_topic` of many topics in one pass over the partitions (one pass per topic made a deletion
        of 2,000 topics cost 2,000 passes: ~0.1 s on the owner thread at 2,000 partitions, quadratic)."""
        wanted = set(topics)
        out: dict[str, list[PartitionLog | str]] = {t: [] for t in wanted}
        with self._load_lock:
            for k in [k for k in self._logs if k[0] in wanted]:
                out[k[0]].append(self._logs.pop(k))
            for k in [k for k in self._unloaded if k[0] in wanted]:
                out[k[0]].append(self._unloaded.pop(k).path)
        return out

    def remove_detached(self, plog: PartitionLog | str) -> None:
        """Remove a detached log's directory; its open descriptors keep serving in-flight reads until
        file.delete.delay.ms (closed by `cleanup()`). A path is a log that was never loaded."""
        if isinstance(plog, str):
            self._remove_dir(plog)
            return
        deadline = time.monotonic() + plog.config.file_delete_delay_ms / 1000
        segs = plog.delete(close_files=False)
        with self._zombie_lock:
            self._zombies += [(deadline, seg) for seg in segs]

    def _remove_dir(self, path: str) -> None:
        left = _discard_partial_dir(path)
        if left is not None:
            with self._zombie_lock:
                self._removals.append(left)

    def _retry_removals(self) -> None:
        with self._zombie_lock:
            todo, self._removals = self._removals, []
        for path in todo:
            self._remove_dir(path)

    def _close_zombies(self, force: bool = False) -> None:
        now = time.monotonic()
        with self._zombie_lock:
            zombies, self._zombies = self._zombies, []
        keep = []
        for deadline, seg in zombies:
            if force or deadline + _fd_grace_s() <= now:
                seg.close_without_final_entry()
            else:
                keep.append((deadline, seg))
        with self._zombie_lock:
            self._zombies = keep + self._zombies

    # ---- housekeeping ----------------------------------------------------------------------------
    def _attempt(self, what: str, step: Callable[[], object]) -> bool:
        """Run one housekeeping write; a disk failure is logged once while it lasts, never raised."""
        try:
            step()
        except (OSError, StorageError) as exc:
            if what not in self._failing:
                self._failing.add(what)
                log.error("%s failed (retried; logged again once it works): %s", what, exc)
            return False
        if what in self._failing:
            self._failing.discard(what)
            log.info("%s works again", what)
        return True

    def checkpoint(self) -> bool:
        """Flush rolled segments, then write the four offset checkpoint files (recovery points, log start
        offsets, high watermarks, cleaner). Blocking: call from a worker thread. Returns whether everything
        was written (a failed step is logged, the old file stays intact, the others still run)."""
        logs = list(self._logs.items())
        lazy = list(self._unloaded.items())   # not loaded since a clean open: their values carry over
        ok = True
        todo = [(k, plog) for k, plog in logs if not plog.closed and plog.offline is None and plog.rolled_unsynced]
        if len(todo) > BULK_SYNC_LOGS:
            # thousands of new partitions (each a directory and small metadata files to fsync): one syncfs
            # after the bookkeeping instead of three fsyncs each; written before the checkpoint files
            undo: list[Callable[[], None]] = []

            def bulk() -> None:
                for _k, plog in todo:
                    undo.append(plog.flush_rolled(sync=False))
                _sync_filesystem(self.log_dir)

            if not self._attempt("syncing the log dir's file system", bulk):
                ok = False
                for put_back in undo:   # nothing counts as durable: old recovery points, still pending
                    put_back()
        else:
            for k, plog in todo:
                ok &= self._attempt(f"flush of {k[0]}-{k[1]}", plog.flush_rolled)
        rp = {k: u.recovery_point for k, u in lazy if u.recovery_point is not None}
        ls = {k: u.log_start_offset for k, u in lazy if u.log_start_offset is not None}
        hw = {k: u.high_watermark for k, u in lazy if u.high_watermark is not None}
        cl = {k: u.cleaner for k, u in lazy if u.cleaner is not None}
        rp.update({k: v.recovery_point for k, v in logs})
        ls.update({k: v.log_start_offset for k, v in logs if v.log_start_offset > v.segments[0].base_offset})
        hw.update({k: v.high_watermark for k, v in logs})
        cl.update({k: v.cleaner_checkpoint for k, v in logs if v.cleaner_checkpoint > 0})
        for name, entries in ((RECOVERY_POINT, rp), (LOG_START, ls), (REPLICATION, hw), (CLEANER, cl)):
            path = os.path.join(self.log_dir, name)
            ok &= self._attempt(f"writing {name}", functools.partial(write_offset_checkpoint, path, entries))
        return ok

    def flush_all(self) -> None:
        for k, plog in list(self._logs.items()):
            if not plog.closed and plog.offline is None:
                self._attempt(f"flush of {k[0]}-{k[1]}", plog.flush)

    def flush_dirty(self, now_ms: int) -> None:
        """Flush logs whose flush.ms elapsed (call periodically, from a worker thread)."""
        for k, plog in list(self._logs.items()):
            if (not plog.closed and plog.offline is None and plog._unflushed
                    and now_ms - plog._last_flush_ms >= plog.config.flush_ms):
                self._attempt(f"flush of {k[0]}-{k[1]}", plog.flush)

    def cleanup(self, now_ms: int | None = None) -> None:
        """Housekeeping (worker thread): compact `cleanup.policy=compact` logs, then apply their retention (as
        Kafka's cleaner thread runs deleteOldSegments for the compacted logs: retention.ms / retention.bytes
        when the policy includes delete), remove `.deleted` segments past file.delete.delay.ms, flush logs due
        per flush.ms."""
        from kafkalite_storage.cleaner import clean_log  # first housekeeping pass: not at start

        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        for key, plog in list(self._logs.items()):
            if plog.closed:
                continue
            if plog.config.compact and plog.offline is None:
                self._attempt(f"compaction of {key[0]}-{key[1]}", functools.partial(clean_log, plog, now))
                self._attempt(f"retention of {key[0]}-{key[1]}", functools.partial(
                    plog.delete_old_segments, now, run_on_owner=self.run_on_owner))
            self._attempt(f"removing deleted segments of {key[0]}-{key[1]}", plog.purge_deleted)
            plog.producer_state.remove_expired(now, self.producer_id_expiration_ms)
        self._close_zombies()
        self._retry_removals()
        self.flush_dirty(now)

    def enforce_retention(self, now_ms: int | None = None) -> None:
        """Kafka's retention check (worker thread) for the logs that are not compacted (those are `cleanup`'s,
        as in Kafka): each drops the segments below its log start offset and, when its cleanup.policy includes
        delete, applies retention.bytes and retention.ms, an expired active segment included (rolled first
        through `run_on_owner`; kafkalite_storage.retention)."""
        for k, plog in list(self._logs.items()):
            if not plog.closed and plog.offline is None and not plog.config.compact:
                now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
                self._attempt(f"retention of {k[0]}-{k[1]}", functools.partial(
                    plog.delete_old_segments, now, run_on_owner=self.run_on_owner))

    # ---- close -----------------------------------------------------------------------------------
    def close(self, clean: bool = True) -> None:
        """Clean close: flush + close every log, write checkpoints, then `.kafka_cleanshutdown`."""
        if self.closed:
            return
        self._closing = True
        with self._load_lock:
            logs = list(self._logs.items())
        # many logs: no fsync per file, one syncfs of the whole file system after every close (the marker
        # then depends on it); few logs: each close fsyncs its own files
        bulk = clean and sum(1 for _k, p in logs if not p.closed and p.offline is None) > BULK_SYNC_LOGS
        durable = True
        for k, plog in logs:
            durable &= self._attempt(f"closing {k[0]}-{k[1]}",
                                     functools.partial(plog.close, clean=clean, sync=not bulk))
        synced = True
        if bulk:
            synced = self._attempt("syncing the log dir's file system", functools.partial(_sync_filesystem,
                                                                                         self.log_dir))
        self._close_zombies(force=True)
        if clean:
            if synced:
                durable &= self.checkpoint()
            else:   # the closes moved recovery points to the log ends: not durable, so not written
                durable = False
            unrecovered = sum(1 for u in self._unloaded.values() if not u.clean)
            if unrecovered:   # never loaded since an unclean stop: the next start must still recover them
                log.info("not writing %s: %d logs were not recovered since the unclean stop; the next start "
                         "recovers them", CLEAN_SHUTDOWN, unrecovered)
                durable = False
            if durable:
                epochs = {k: u.leader_epoch for k, u in self._unloaded.items() if u.leader_epoch is not None}
                epochs.update({k: v.latest_epoch() for k, v in logs})
                # without it the next start reads each partition's own epoch file when asked: not fatal
                self._attempt(f"writing {LEADER_EPOCHS}", functools.partial(
                    write_offset_checkpoint, os.path.join(self.log_dir, LEADER_EPOCHS), epochs))
            marker = json.dumps({"version": 0, "brokerEpoch": self.broker_epoch}, separators=(",", ":"))
            if not durable:
                if not unrecovered:
                    log.warning("not writing %s: some data or checkpoint may not be durable; the next start "
                                "recovers the logs", CLEAN_SHUTDOWN)
            elif not self._attempt(f"writing {CLEAN_SHUTDOWN}",
                                   lambda: write_atomic(os.path.join(self.log_dir, CLEAN_SHUTDOWN),
                                                        marker.encode())):
                log.warning("the next start recovers the logs")
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        self.closed = True

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
