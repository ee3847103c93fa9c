"""Codec micro-benchmarks for `wire` (medians over repeats, reported as ratios and throughputs).

* Produce v9 decode: 1 KiB vs 1 MiB of records. Records decode to a memoryview slice of the frame, so the cost
  must not grow with the payload: the ratio should be ~1.
* Decode + CRC-32C check of a 1 MiB record batch (what the broker does per produced batch), in GB/s.
* Metadata v12 response, 100 topics x 10 partitions: encode+decode, generated codec vs the interpretive
  reference codec (`kafkalite_wire.reference`) -- how much the code generation buys.
* Fetch v16 response with 100 partitions whose records are file regions: encode_chunks cost (no data copied).
* One Produce v9 request cycle as the broker runs it around a handler: FrameBuffer split, parse_request
  (header + body), encode_response of a one-partition ProduceResponse.

    python -m bench.bench_wire [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import crc32c

from kafkalite_wire import api
from kafkalite_wire.framing import FrameBuffer
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import FetchResponse, MetadataResponse, ProduceRequest, ProduceResponse
from kafkalite_wire.reference import codec_for

BENCH_TIMEOUT = 300


def _median_time(fn: Callable[[], object], loops: int, repeats: int) -> float:
    """Median seconds per call."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - t0) / loops)
    return statistics.median(samples)


def record_batch(payload_size: int) -> bytes:
    """A magic-2 record batch holding one record with a `payload_size`-byte value, with a valid CRC-32C."""
    value = b"v" * payload_size

    def varint(n: int) -> bytes:
        n = (n << 1) ^ (n >> 63)
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    body = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    record = varint(len(body)) + body
    # attributes .. end: attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, epoch, seq, count
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, 1) + record
    crc = crc32c.crc32c(after_crc)
    batch_len = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch + magic + crc + rest
    return struct.pack(">qiibI", 0, batch_len, 0, 2, crc) + after_crc


def produce_body(records: bytes) -> bytes:
    req = ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="bench", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    return req.encode(9)


def check_crc(batch: memoryview) -> bool:
    return struct.unpack_from(">I", batch, 17)[0] == crc32c.crc32c(batch[21:])


def metadata_response() -> MetadataResponse:
    topics = []
    for t in range(100):
        parts = [
            MetadataResponse.MetadataResponsePartition(
                partition_index=p,
                leader_id=1,
                leader_epoch=0,
                replica_nodes=[1],
                isr_nodes=[1],
                offline_replicas=[],
            )
            for p in range(10)
        ]
        topics.append(
            MetadataResponse.MetadataResponseTopic(name=f"topic-{t}", topic_id=uuid.uuid4(), partitions=parts)
        )
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092)],
        cluster_id="bench-cluster",
        controller_id=1,
        topics=topics,
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="bench_wire")
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    repeats = 5 if args.quick else 15
    scale = 1 if args.quick else 4

    small = produce_body(record_batch(1024))
    big = produce_body(record_batch(1024 * 1024))
    t_small = _median_time(lambda: ProduceRequest.decode(small, 9), 200 * scale, repeats)
    t_big = _median_time(lambda: ProduceRequest.decode(big, 9), 200 * scale, repeats)

    def decode_and_crc() -> None:
        req = ProduceRequest.decode(big, 9)
        rec = req.topic_data[0].partition_data[0].records
        assert isinstance(rec, memoryview) and check_crc(rec)

    t_crc = _median_time(decode_and_crc, 5 * scale, repeats)

    md = metadata_response()
    md_bytes = md.encode(12)
    ref = codec_for(MetadataResponse)
    assert ref.encode(md, 12) == md_bytes
    t_gen = _median_time(lambda: MetadataResponse.decode(md.encode(12), 12), 2 * scale, repeats)
    t_ref = _median_time(lambda: ref.decode(ref.encode(md, 12), 12), 1, max(3, repeats // 3))

    parts = [
        FetchResponse.PartitionData(partition_index=p, high_watermark=10, records=[(99, 4096 * p, 1 << 20)])
        for p in range(100)
    ]
    fetch = FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic_id=uuid.uuid4(), partitions=parts)]
    )
    t_fetch = _median_time(lambda: fetch.encode_chunks(16), 20 * scale, repeats)

    # the per-request overhead the broker pays around a handler: frame split, header+body decode, response encode
    req_frame = api.encode_request(RequestHeader(0, 9, 1, "bench"), ProduceRequest.decode(small, 9))
    resp = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="bench",
                partition_responses=[ProduceResponse.PartitionProduceResponse(index=0, base_offset=42)],
            )
        ]
    )

    def request_cycle() -> None:
        fb = FrameBuffer()
        fb.receive_data(req_frame)
        frame = fb.next_frame()
        assert frame is not None
        hdr, _body = api.parse_request(frame)
        api.encode_response(hdr, resp)

    t_cycle = _median_time(request_cycle, 200 * scale, repeats)

    results: dict[str, Any] = {
        "produce_v9_request_cycle_us": round(t_cycle * 1e6, 2),
        "produce_v9_decode_1KiB_us": round(t_small * 1e6, 2),
        "produce_v9_decode_1MiB_us": round(t_big * 1e6, 2),
        "produce_decode_ratio_1MiB_vs_1KiB": round(t_big / t_small, 3),
        "decode_plus_crc32c_1MiB_GBps": round((1024 * 1024) / t_crc / 1e9, 3),
        "metadata_v12_100x10_bytes": len(md_bytes),
        "metadata_v12_generated_encode_decode_ms": round(t_gen * 1e3, 3),
        "metadata_v12_reference_encode_decode_ms": round(t_ref * 1e3, 3),
        "metadata_v12_reference_over_generated": round(t_ref / t_gen, 2),
        "fetch_v16_100_file_regions_encode_chunks_us": round(t_fetch * 1e6, 1),
        "repeats": repeats,
    }
    width = max(len(k) for k in results)
    for k, v in results.items():
        print(f"{k:<{width}}  {v}")
    return results


if __name__ == "__main__":
    main()
