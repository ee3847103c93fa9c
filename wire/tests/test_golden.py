"""Golden bytes captured from real brokers and clients decode and re-encode byte for byte.

* kafkajs fixtures (`fixtures/kafkajs/<api>/vN_{request,response}*.json`): request/response *bodies* (no size,
  no header). Decoded with the matching generated class at version N; re-encoding gives identical bytes.
* kafka-go fixtures (`fixtures/kafka-go/*.hex`): whole Fetch v10 responses (size + correlation id + body).

Precise exceptions (see `SPECIAL`/`NOT_MESSAGES`):
* kafkajs writes the request/response *header's* empty tagged-field byte (0x00) at the start of the body for
  flexible versions (AlterPartitionReassignments v0, ListPartitionReassignments v0): we decode from offset 1.
* `apiVersions/v1_response_missing_throttle_time.json` is a v0-shaped body (no throttle_time_ms) that kafkajs
  accepts when a broker answers v1 with a v0 body; as a v1 body it is (correctly) short -> DecodeError; it is
  checked to decode as v0 instead.
* Files that are not message bodies (record batches, message sets, member metadata/assignment blobs, SASL
  payloads) are listed in NOT_MESSAGES and are not protocol messages of any API.
"""

from __future__ import annotations

import binascii
import json
import re
from pathlib import Path

import pytest

import kafkalite_wire.messages as M
from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError
from kafkalite_wire.spec import reference_dir

KAFKAJS = reference_dir() / "fixtures" / "kafkajs"
KAFKA_GO = reference_dir() / "fixtures" / "kafka-go"

NOT_MESSAGES = {
    "describeGroups/v1_memberAssignment.json",  # ConsumerProtocolAssignment blob
    "describeGroups/v1_memberMetadata.json",  # ConsumerProtocolSubscription blob
    "joinGroup/v1_assignerMetadata.json",
    "joinGroup/v2_assignerMetadata.json",
    "syncGroup/v1_memberAssignment.json",
    "saslAuthenticate/plain_bytes.json",  # SASL payloads carried inside SaslAuthenticate auth_bytes
    "saslAuthenticate/scram256_bytes.json",
    "saslAuthenticate/scram256_firstRequest_response.json",
    "saslAuthenticate/scram256_firstRequest_response_v1.json",
}
HEADER_TAG_PREFIX = {"alterPartitionReassignments", "listPartitionReassignments"}

_NAME = re.compile(r"^v(\d+)_(?:[A-Za-z0-9]+_)*?(request|response)")


def _load(path: Path) -> bytes:
    return bytes(json.loads(path.read_text())["data"])


def _cases() -> list[tuple[str, str, int, str]]:
    out = []
    if not KAFKAJS.exists():
        return [("missing", "missing", 0, "request")]
    for p in sorted(KAFKAJS.glob("*/*.json")):
        api_dir, name = p.parent.name, p.name
        if api_dir in ("recordBatch", "messageSet", "sasl") or f"{api_dir}/{name}" in NOT_MESSAGES:
            continue
        m = _NAME.match(name)
        assert m, f"unclassified fixture {api_dir}/{name}"
        version = int(m.group(1))
        kind = m.group(2)
        out.append((api_dir, name, version, kind))
    return out


@pytest.mark.parametrize(("api_dir", "name", "version", "kind"), _cases())
def test_kafkajs_fixture_roundtrip(reference: Path, api_dir: str, name: str, version: int, kind: str) -> None:
    data = _load(KAFKAJS / api_dir / name)
    cls = getattr(M, api_dir[0].upper() + api_dir[1:] + kind.capitalize())
    start = 1 if api_dir in HEADER_TAG_PREFIX else 0
    if start:
        assert data[0] == 0  # the header's empty tagged-field section
    if name == "v1_response_missing_throttle_time.json":
        with pytest.raises(DecodeError):
            cls.decode(data, 1)
        version = 0
    obj, end = cls.decode_from(data, version, start)
    assert end == len(data), f"{len(data) - end} trailing bytes"
    assert obj.encode(version) == data[start:]
    # decoding is stable: the decoded object re-decodes equal
    assert cls.decode(obj.encode(version), version) == obj


def test_kafkajs_fixture_values(reference: Path) -> None:
    """Spot-check decoded values against the facts documented in fixtures/README.md."""
    p = M.ProduceRequest.decode(_load(KAFKAJS / "produce" / "v3_request.json"), 3)
    assert p.transactional_id is None and p.acks == -1 and p.timeout_ms == 30000
    av = M.ApiVersionsResponse.decode(_load(KAFKAJS / "apiVersions" / "v1_response.json"), 1)
    assert av.error_code == 0 and len(av.api_keys) == 34
    produce = next(k for k in av.api_keys if k.api_key == 0)
    assert produce.max_version == 3
    av0 = M.ApiVersionsResponse.decode(_load(KAFKAJS / "apiVersions" / "v0_response.json"), 0)
    assert len(av0.api_keys) == 21
    f = M.ProduceRequest.decode(_load(KAFKAJS / "produce" / "v7_request.json"), 7)
    batch = f.topic_data[0].partition_data[0].records
    assert isinstance(batch, memoryview)
    assert int.from_bytes(batch[43:51], "big") == 4004  # producerId inside the record batch


def _kafka_go_files() -> list[str]:
    return sorted(p.name for p in KAFKA_GO.glob("*.hex")) if KAFKA_GO.exists() else ["missing"]


@pytest.mark.parametrize("name", _kafka_go_files())
def test_kafka_go_fetch_v10_roundtrip(reference: Path, name: str) -> None:
    raw = binascii.unhexlify((KAFKA_GO / name).read_text().strip())
    size = int.from_bytes(raw[:4], "big")
    assert size == len(raw) - 4
    cid, body = api.parse_response(1, 10, raw[4:])
    assert isinstance(body, M.FetchResponse)
    records = body.responses[0].partitions[0].records
    assert isinstance(records, memoryview) and len(records) > 0
    again = cid.to_bytes(4, "big") + body.encode(10)
    assert again == raw[4:]
    # and through the broker-side encoder, with the size prefix
    from kafkalite_wire.headers import RequestHeader

    chunks = api.encode_response(RequestHeader(1, 10, cid), body)
    assert api.join_chunks(chunks) == raw
