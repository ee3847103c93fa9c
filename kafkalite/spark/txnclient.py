"""The two transaction-coordinator requests librdkafka does not expose: DescribeTransactions and EndTxn.

The exactly-once sink splits a Kafka transaction between two processes: an executor task writes rows inside
it and the driver commits it later (two-phase commit, as Flink's Kafka sink does through reflection on the
Java producer). librdkafka can neither tell which producer id and epoch ``init_transactions`` obtained nor
commit a transaction it did not open, so this module speaks those two requests itself, with the ``wire`` codec:

- ``FindCoordinator`` (key type 1 = transaction) finds the coordinator of a transactional id;
- ``DescribeTransactions`` (KIP-664) returns its producer id, epoch and state: the executor asks right after
  ``init_transactions``, so the epoch it reports is the one its transaction is fenced by;
- ``EndTxn`` (committed=true) with that producer id and epoch completes it. The coordinator answers a retry of a
  completed commit with success, a commit of a transaction fenced by a newer epoch (a re-run task, a timeout)
  with PRODUCER_FENCED / INVALID_PRODUCER_EPOCH, which the driver must treat as "this batch is not committed".

Security: ``security.protocol`` PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, with SASL PLAIN or SCRAM-SHA-256/512
(RFC 5802 without channel binding, as Kafka does: SaslHandshake v1, then SaslAuthenticate rounds carrying the
mechanism's bytes), from the same ``kafka.*`` options the sink gives librdkafka (:class:`Security`); the socket,
TLS and SASL part is the shared ``kafkalite.client.wire``.
"""
from __future__ import annotations

import ssl
import time
from typing import Any

from kafkalite.client.wire import Security, WireError, bootstrap, call
from kafkalite_wire.messages import DescribeTransactionsRequest, EndTxnRequest, FindCoordinatorRequest

__all__ = ["FENCED", "RETRIABLE", "Security", "TxnClient", "TxnCommitError"]

# Kafka error codes that mean "ask again" for these requests.
RETRIABLE = {7, 14, 15, 16, 51}  # REQUEST_TIMED_OUT, COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS
FENCED = {47, 49, 90}  # INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED


class TxnCommitError(WireError):
    """A transaction could not be committed (fenced, or the coordinator refused); ``code`` is Kafka's."""


def _call(host: str, port: int, body: Any, version: int, timeout: float, sec: Security | None = None) -> Any:
    return call(host, port, body, version, timeout, sec, client_id="kafkalite-spark-eos", error=TxnCommitError)


class TxnClient:
    """Finds the transaction coordinator from ``bootstrap.servers`` and retries through broker restarts."""

    def __init__(self, bootstrap_servers: str, *, deadline_s: float = 180.0, timeout_s: float = 30.0,
                 security: Security | None = None) -> None:
        self.bootstrap = bootstrap(bootstrap_servers)
        self.security = security
        self.deadline_s = deadline_s
        self.timeout_s = timeout_s

    def _coordinator(self, txn_id: str) -> tuple[str, int]:
        last: Exception | None = None
        for host, port in self.bootstrap:
            try:
                r = _call(host, port, FindCoordinatorRequest(key=txn_id, key_type=1), 1, self.timeout_s,
                          self.security)
            except OSError as exc:
                last = exc
                continue
            if r.error_code == 0:
                return r.host, r.port
            last = TxnCommitError(f"FindCoordinator for {txn_id!r}: error {r.error_code}", r.error_code)
        raise last if last is not None else ConnectionError("no bootstrap server")

    def _retrying(self, txn_id: str, attempt: Any) -> Any:
        end = time.monotonic() + self.deadline_s
        delay = 0.1
        while True:
            try:
                return attempt(*self._coordinator(txn_id))
            except ssl.SSLCertVerificationError:
                raise  # a certificate the trust store refuses will not be accepted on a retry
            except (OSError, TxnCommitError) as exc:
                code = getattr(exc, "code", None)
                if (code is not None and code not in RETRIABLE) or time.monotonic() > end:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def describe(self, txn_id: str) -> tuple[int, int, str]:
        """``(producer id, epoch, state)`` of ``txn_id`` as its coordinator has it now."""

        def attempt(host: str, port: int) -> tuple[int, int, str]:
            r = _call(host, port, DescribeTransactionsRequest(transactional_ids=[txn_id]), 0, self.timeout_s,
                      self.security)
            st = r.transaction_states[0]
            if st.error_code:
                raise TxnCommitError(f"DescribeTransactions {txn_id!r}: error {st.error_code}", st.error_code)
            return st.producer_id, st.producer_epoch, st.transaction_state

        return self._retrying(txn_id, attempt)

    def commit(self, txn_id: str, producer_id: int, epoch: int, *, committed: bool = True) -> None:
        """EndTxn for the transaction ``(producer_id, epoch)`` opened under ``txn_id``; idempotent.
        ``committed=False`` aborts it."""
        what = "commit" if committed else "abort"

        def attempt(host: str, port: int) -> None:
            req = EndTxnRequest(transactional_id=txn_id, producer_id=producer_id, producer_epoch=epoch,
                                committed=committed)
            r = _call(host, port, req, 2, self.timeout_s, self.security)
            if r.error_code:
                raise TxnCommitError(f"EndTxn({what}) {txn_id!r} producer {producer_id} epoch {epoch}: error "
                                     f"{r.error_code}", r.error_code)

        self._retrying(txn_id, attempt)
