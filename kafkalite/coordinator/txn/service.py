"""Trio glue around the pure :class:`TransactionCoordinator` (the broker's ``state.txns``).

The server creates ``TransactionService(state)``, starts ``run`` in its background nursery and calls
``close()`` before storage closes. ``run`` reports started at once; until every ``__transaction_state``
partition has been read back the coordinator answers COORDINATOR_LOAD_IN_PROGRESS (as Kafka does while it
loads a partition). Transactions found in PrepareCommit/PrepareAbort are completed during the load; Ongoing
ones are aborted when their timeout passes, by the timer loop (``next_deadline()`` / ``poll(now)``).

Storage: ``__transaction_state`` (``transaction.state.log.num.partitions``, default 50, compacted, internal)
is created on the first transactional InitProducerId; a transactional id lives in partition
``Utils.abs(id.hashCode()) % n`` (the same rule as group ids). Each state change is one uncompressed batch,
appended before the request is answered. Markers go to the data partitions with
``PartitionLog.append_control`` (coordinator epoch 0: there is one coordinator) and wake Fetch long polls.

Producer ids for transactional ids come from ``BrokerState.allocate_producer_id``, the same persisted
allocator idempotent producers use, so the two never collide.
"""
from __future__ import annotations

import logging
import struct
import time
from typing import TYPE_CHECKING, Any

from kafkalite.coordinator.classic.records import RecordDecodeError, build_batch, iter_records
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.common.runtime import CoordinatorRuntime
from kafkalite.coordinator.txn.coordinator import (
    DEFAULT_MAX_TIMEOUT_MS,
    INVALID_PRODUCER_EPOCH,
    PRODUCER_FENCED,
    TP,
    TransactionCoordinator,
    TxnMetadata,
)
from kafkalite.coordinator.txn.records import (
    TXN_STATE_TOPIC,
    TxnLogValue,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)
from kafkalite.errors import error_code_for
from kafkalite.metadata.partitions import partition_for
from kafkalite.state import leader_epoch
from kafkalite_storage.errors import StorageError

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.transactions")

_TRANSACTIONAL_FLAG = 0x10
_PID = struct.Struct(">qh")   # producer id + epoch at offset 43 of a v2 batch
_NOT_ENOUGH_REPLICAS = 19
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                                           E.NOT_COORDINATOR, 51})   # 51: CONCURRENT_TRANSACTIONS


def fenced_error(code: int, version: int, first_fenced_version: int) -> int:
    """KIP-588: versions before PRODUCER_FENCED existed get INVALID_PRODUCER_EPOCH instead."""
    if code == PRODUCER_FENCED and version < first_fenced_version:
        return 47   # INVALID_PRODUCER_EPOCH
    return code


class TransactionService(CoordinatorRuntime):
    state_topic = TXN_STATE_TOPIC
    task_name = "transaction-coordinator"
    load_failed_message = "starting with no transactions"
    logger = log

    def __init__(self, state: BrokerState | None) -> None:
        super().__init__(state)
        self._tv_warned = False   # transaction.version unreadable: said once
        cfg = getattr(state, "config", None)
        self.num_partitions = cfg.get_int("transaction.state.log.num.partitions") if cfg is not None else 50
        max_timeout = cfg.get_int("transaction.max.timeout.ms") if cfg is not None \
            else DEFAULT_MAX_TIMEOUT_MS
        self.segment_bytes = cfg.get_int("transaction.state.log.segment.bytes") \
            if cfg is not None else 104_857_600
        self.coordinator = TransactionCoordinator(self, max_timeout)
        self.coordinator.loading = True
        self.coordinator.transaction_version = self.transaction_version()
        self._values: dict[str, TxnLogValue | None] = {}

    def transaction_version(self) -> int:
        """The cluster's finalized ``transaction.version`` (``kafkalite.metadata.features``): 2 under the Kafka 4.x
        profiles and the default, as UpdateFeatures left it."""
        st = self.state
        if st is None or getattr(st, "config", None) is None:
            return 0
        try:
            return int(st.features.finalized().get("transaction.version", 0))
        except Exception as exc:   # no log dir to read feature levels from (a unit test's state): logged, TV1
            if not self._tv_warned:
                self._tv_warned = True
                log.warning("transaction.version unreadable (%s: %s): transactions use version 0",
                            type(exc).__name__, exc)
            return 0

    # -- lifecycle (CoordinatorRuntime) ------------------------------------------------------------
    async def before_load(self) -> None:
        if self.state is not None and getattr(self.state, "groups", None) is not None:
            groups_loaded = getattr(self.state.groups, "loaded", None)
            if groups_loaded is not None:   # completing a transaction may touch group offsets
                await groups_loaded.wait()

    async def load(self) -> None:
        values: dict[str, TxnLogValue | None] = {}

        def feed(data: bytes) -> None:
            for _off, key, value in iter_records(data):
                try:
                    tid = decode_txn_key(key)
                    values[tid] = None if value is None else decode_txn_value(value)
                except (RecordDecodeError, UnicodeDecodeError, ValueError) as exc:
                    log.warning("skipping undecodable %s record: %s", TXN_STATE_TOPIC, exc)

        partitions = await self.read_state_topic(feed)
        if partitions is not None:
            self.num_partitions = partitions   # an existing topic decides the partition count
        self._values = values

    def load_failed(self) -> None:
        self._values = {}

    def after_load(self) -> None:
        values, self._values = self._values, {}
        self.coordinator.loading = False
        try:
            self.coordinator.load(self.now_ms(), values)
        except Exception:
            log.exception("completing loaded transactions failed")
        if values:
            log.info("loaded %d transactional ids from %s", len(self.coordinator.txns), TXN_STATE_TOPIC)

    def close(self) -> None:
        self.coordinator.loading = True   # answer COORDINATOR_LOAD_IN_PROGRESS from now on
        super().close()

    # -- the backend the pure coordinator writes through ------------------------------------------
    def partition_for(self, txn_id: str) -> int:
        return partition_for(txn_id, self.num_partitions)

    async def ensure_topic(self) -> bool:
        """Create ``__transaction_state`` if needed (its partition logs in a worker thread)."""
        overrides = {"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes),
                     "compression.type": "uncompressed"}
        if not await self.create_state_topic(self.num_partitions, overrides):
            return False
        st = self.state
        if st is not None and TXN_STATE_TOPIC in st.topics:
            self.num_partitions = st.topics[TXN_STATE_TOPIC].partitions   # the existing topic's count decides
        return True

    def persist(self, meta: TxnMetadata) -> None:
        st = self.state
        if st is None:
            return
        p = self.partition_for(meta.transactional_id)
        plog = st.get_log(TXN_STATE_TOPIC, p)
        if plog is None:
            raise E.AppendError(E.UNKNOWN_TOPIC_OR_PARTITION, f"{TXN_STATE_TOPIC}-{p} does not exist")
        if getattr(st, "cluster", None) is not None and not st.leads(TXN_STATE_TOPIC, p):
            raise E.AppendError(E.NOT_LEADER_OR_FOLLOWER, f"{TXN_STATE_TOPIC}-{p} is led by another broker")
        now = time.time_ns() // 1_000_000
        batch = build_batch([(encode_txn_key(meta.transactional_id), encode_txn_value(meta.to_value(),
                                                                            self._value_version()))], now)
        try:
            plog.append(batch, leader_epoch=0, now_ms=now)
        except StorageError as exc:   # the coordinator maps the append error as Kafka does (txn_write_error)
            raise E.AppendError(int(error_code_for(exc)), f"{TXN_STATE_TOPIC}-{p}: {exc}") from exc

    def _value_version(self) -> int:
        """TransactionLogValue's version by the finalized level now (UpdateFeatures may have changed it)."""
        self.coordinator.transaction_version = self.transaction_version()
        return 1 if self.coordinator.transaction_version >= 1 else 0

    def write_marker(self, tp: TP, producer_id: int, producer_epoch: int, commit: bool) -> None:
        st = self.state
        if st is None:
            return
        if st.cluster is not None:   # the marker goes to the partition's leader
            leader = st.cluster.leader_state(*tp)
            if leader is None:   # no running leader now: the coordinator retries this marker later
                raise E.AppendError(E.NOT_LEADER_OR_FOLLOWER, f"{tp[0]}-{tp[1]} has no running leader")
            st = leader
        plog = st.get_log(*tp)
        if plog is None:
            log.warning("no partition %s-%d for a transaction marker; skipped", *tp)
            return
        plog.append_control(1 if commit else 0, producer_id=producer_id, producer_epoch=producer_epoch,
                            coordinator_epoch=0, leader_epoch=leader_epoch(plog))
        st.notify_append(*tp)

    def allocate_producer_id(self) -> int:
        if self.state is None:   # (a unit test's service: its backend allocates instead)
            raise RuntimeError("no broker state to allocate a producer id from")
        return self.state.allocate_producer_id()

    def complete_group_txn(self, producer_id: int, commit: bool) -> None:
        if self.state is None:
            return
        cluster = self.state.cluster
        for st in [self.state] if cluster is None else cluster.running_states():   # (the group's coordinator)
            if st.groups is not None:
                st.groups.complete_txn(producer_id, commit)

    # -- API entry points (handlers) ---------------------------------------------------------------
    async def init_producer_id(self, ctx: Any, req: Any) -> Any:
        # loads the generated InitProducerId codec: not at start
        from kafkalite_wire.messages import InitProducerIdResponse

        if ctx.version >= 3 and (req.producer_id == -1) != (req.producer_epoch == -1):
            err, pid, epoch = E.INVALID_REQUEST, -1, -1   # both or neither, as KafkaApis requires
        elif not self.coordinator.loading and not await self.ensure_topic():
            err, pid, epoch = E.COORDINATOR_NOT_AVAILABLE, -1, -1
        else:
            bump = (req.producer_id, req.producer_epoch) if ctx.version >= 3 else ()
            try:
                err, pid, epoch = self.coordinator.init_producer_id(
                    self.now_ms(), req.transactional_id, req.transaction_timeout_ms, *bump)
            except OSError as exc:   # no producer-id block could be persisted (a full disk): retriable
                log.error("cannot allocate a producer id for %r: %s", req.transactional_id, exc)
                err, pid, epoch = E.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
            except Exception:
                err, pid, epoch = self._failed(req.transactional_id, "InitProducerId"), -1, -1
        self.kick()
        return InitProducerIdResponse(throttle_time_ms=0, error_code=fenced_error(err, ctx.version, 4),
                                      producer_id=pid, producer_epoch=epoch)

    def check_produce(self, txn_id: str, topic: str, partition: int, records: Any, implicit_add: bool = False) -> int:
        """Partition verification for a transactional Produce (records = one v2 batch): the partition must
        be in the producer's Ongoing transaction (else INVALID_TXN_STATE), at the current epoch.
        ``implicit_add`` (Produce v12+, KIP-890 part 2): the partition is first added to the transaction, as
        Kafka's ReplicaManager does through AddPartitionsToTxnManager (AddPartitionsToTxn v5 to the
        coordinator); PRODUCER_FENCED from there is INVALID_PRODUCER_EPOCH to the producer."""
        if records is None or len(records) < 61:
            return 0   # produce reports the malformed batch itself
        attributes = int.from_bytes(records[21:23], "big")
        if not attributes & _TRANSACTIONAL_FLAG:
            return 0
        pid, epoch = _PID.unpack_from(bytes(records[43:53]))
        err = 0
        if implicit_add:
            err = self._implicit_add(txn_id, pid, epoch, [(topic, partition)])
        if not err:
            err = self.coordinator.check_produce(txn_id, (topic, partition), pid, epoch)
        # Kafka's ReplicaManager turns the coordinator's transient errors into NOT_ENOUGH_REPLICAS, which
        # every producer retries
        return _NOT_ENOUGH_REPLICAS if err in _RETRY_AS_NOT_ENOUGH_REPLICAS else err

    def _implicit_add(self, txn_id: str, producer_id: int, producer_epoch: int, partitions: list[TP]) -> int:
        err = self.add_partitions(txn_id, producer_id, producer_epoch, partitions, client_tv=2)
        return INVALID_PRODUCER_EPOCH if err == PRODUCER_FENCED else err

    def add_partitions(self, txn_id: str, producer_id: int, producer_epoch: int, partitions: list[TP],
                       client_tv: int = 0) -> int:
        try:
            err = self.coordinator.add_partitions(self.now_ms(), txn_id, producer_id, producer_epoch, partitions,
                                                  client_tv)
        except Exception:
            return self._failed(txn_id, "AddPartitionsToTxn")
        self.kick()
        return err

    def verify_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                          partitions: list[TP]) -> tuple[int, dict[TP, int]]:
        return self.coordinator.verify_partitions(txn_id, producer_id, producer_epoch, partitions)

    def add_offsets(self, txn_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        try:
            err = self.coordinator.add_offsets(self.now_ms(), txn_id, producer_id, producer_epoch, group_id,
                                               self._offsets_partition(group_id))
        except Exception:
            return self._failed(txn_id, "AddOffsetsToTxn")
        self.kick()
        return err

    def end_txn(self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool,
                client_tv: int = 0) -> tuple[int, int, int]:
        """-> (error, producer id, epoch): the id and epoch EndTxn v5 answers."""
        try:
            out = self.coordinator.end_txn(self.now_ms(), txn_id, producer_id, producer_epoch, commit, client_tv)
        except Exception:
            return self._failed(txn_id, "EndTxn"), -1, -1
        self.kick()
        return out

    def _failed(self, txn_id: str | None, api: str) -> int:
        """An unexpected exception for one transactional id's request: logged with its traceback and answered
        UNKNOWN_SERVER_ERROR, as Kafka answers an unexpected error; the connection and the other ids go on."""
        log.exception("%s for transactional id %r failed", api, txn_id)
        self.kick()
        return E.UNKNOWN_SERVER_ERROR

    def check_txn_offset_commit(self, txn_id: str, producer_id: int, producer_epoch: int, group_id: str,
                                implicit_add: bool = False) -> int:
        """``implicit_add`` (TxnOffsetCommit v5+, KIP-890 part 2): the group's ``__consumer_offsets`` partition is
        added to the transaction first (the AddOffsetsToTxn a TV2 client no longer sends)."""
        part = self._offsets_partition(group_id)
        if implicit_add:
            err = self._implicit_add(txn_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, part)])
            if err:
                return err
        return self.coordinator.check_txn_offset_commit(txn_id, producer_id, producer_epoch, part)

    def _offsets_partition(self, group_id: str) -> int:
        """The group's ``__consumer_offsets`` partition, by the group coordinator's partition count."""
        groups = getattr(self.state, "groups", None)
        return partition_for(group_id, groups.config.offsets_topic_num_partitions if groups is not None else 50)


__all__ = ["TransactionService", "fenced_error"]
