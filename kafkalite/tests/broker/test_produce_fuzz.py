"""Mutated record batches never break the connection: each gets a per-partition error code (or is stored)."""
from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.tests.broker.test_protocol import metadata, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode

VALID = encode_batch([b"key-value-1", b"key-value-2", b"third"], producer_id=-1)
ALLOWED = {ErrorCode.NONE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD, ErrorCode.MESSAGE_TOO_LARGE,
           ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.INVALID_TIMESTAMP,
           ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID,
           ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.DUPLICATE_SEQUENCE_NUMBER, ErrorCode.INVALID_TXN_STATE}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, len(VALID) - 1),
))
def test_mutated_batches_get_error_codes(raw: Callable[[], RawClient], mutation: object) -> None:
    c = raw()   # a fresh connection per example: an error must not close it
    metadata(c, "fuzz")
    data = bytearray(VALID)
    if isinstance(mutation, int):
        data = data[:mutation]                       # truncation
    else:
        for pos, val in mutation:                    # byte flips
            data[pos] = val
    resp = c.request(produce_req("fuzz", bytes(data)), 9)
    code = resp.responses[0].partition_responses[0].error_code
    assert code in ALLOWED
