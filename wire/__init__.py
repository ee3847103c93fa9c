"""wire -- a sans-I/O Kafka protocol codec generated from Apache Kafka 3.9.0's and 4.3's JSON message specs
(merged per API by `kafkalite_wire.specmerge`: every version either release serves).

Modules:

* `kafkalite_wire.messages` -- every request/response class (`ProduceRequest`, `FetchResponse`, ...) and
  `REGISTRY: dict[int, ApiInfo]`. Lazy: the package imports no message module; a class is imported (with the
  other class of its API, from `_gen_<api>`) on first `from kafkalite_wire.messages import X`, and
  `ApiInfo.request_class`/`.response_class` resolve on first access. Classes are plain `__slots__` classes with
  dataclass-style `__init__` (keywords, spec defaults, fresh lists), `__eq__` and `__repr__` (no `dataclasses`
  API: `fields()`/`replace()`/`asdict()` do not apply). Nested struct types are class attributes of the message
  (`FetchResponse.PartitionData`); fields are snake_case with the spec's defaults. `Cls.decode(buf, version)`,
  `Cls.decode_from(buf, version, pos) -> (obj, end)`, `obj.encode(version) -> bytes`,
  `obj.encode_chunks(version) -> list[Chunk]` (records payloads / file regions kept as separate chunks).
* `kafkalite_wire.api` -- `parse_request(frame)`, `encode_response(hdr, body)`, `encode_request`, `parse_response`.
* `kafkalite_wire.headers` -- request header v0-v2, response header v0-v1 and the version rules.
* `kafkalite_wire.framing` -- `FrameBuffer` (size-prefixed frames, maximum checked before buffering).
* `kafkalite_wire.primitives` -- readers/writers of the primitive types; `Chunk`, `FileRegion`, `RecordsValue`.
* `kafkalite_wire.errors` -- `ErrorCode` (every Kafka error code, `.retriable`), `DecodeError`, `EncodeError`.
* `kafkalite_wire.codegen` (build time), `kafkalite_wire.spec` (spec loader), `kafkalite_wire.reference` (slow test oracle).

Never imports trio, sockets, storage or kafkalite.
"""
