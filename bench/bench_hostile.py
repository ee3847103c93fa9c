"""Hostile load: how long other clients wait while one client sends the worst it can.

A real broker process (``kafkalite.server.serve``, as the CLI runs it, with a stdin control line for its
``kafkalite.runtime.loopwatch`` figures) serves a latency probe, a client doing round trips back to back
(ApiVersions and a 1-record acks=1 Produce, alternately), while hostile clients do one kind of thing at a
time. Per kind the table gives the probe's longest and 99th-percentile round trip, the broker's longest
event-loop stall (from its own probe, with the request that held the loop, and the loop thread's and the process's
CPU milliseconds during it: ``stall_cpu_ms``), the most CPU the loop thread spent between two of its probe's
wake-ups (``loop_max_busy_cpu_ms``: the stall the broker itself caused, whatever the machine's load) and the broker's RSS afterwards:

- ``baseline``: nothing hostile;
- ``fuzz``: the protocol fuzzer (kafkalite/tests/fuzz), mutated frames of every API and version;
- ``metadata_huge``: Metadata v12 naming 50,000 topics that do not exist (a ~1 MB request), back to back;
- ``produce_zstd_bomb``: one zstd batch of ~10 KB inflating to 256 MiB, to a compacted topic (whose
  appends read the keys);
- ``produce_gzip_bomb``: the same with a gzip batch inflating to 64 MiB;
- ``create_topics_2000``: CreateTopics of 2,000 one-partition topics in one request (then DeleteTopics);
- ``half_sent_frames``: 400 connections each announce a 256 KiB frame, send half of it and stall;
- ``list_offsets_claimed``: ListOffsets by timestamp on a partition holding one LogAppendTime batch that
  claims 1,000,000 records (RecordsCount) but carries one;
- ``many_<api>`` (``many_produce``, ``many_add_partitions_to_txn``, ``many_txn_offset_commit``,
  ``many_offset_delete``, ``many_alter_configs``, ``many_describe_configs``): one request of that API naming
  600,000 to 1,000,000 partitions or resources (a 4-11 MB frame), encoded once and sent back to back.
  ``many_txn_offset_commit_live`` sends it in an Ongoing transaction (the others' producer id is unknown).

The issue's target is that no request holds the loop for more than ~100 ms; the figures are reported as
measured on the branch that ran them (no pass/fail).

    python -m bench.bench_hostile [--quick] [--kinds a,b]

``KAFKALITE_BENCH_BROKER_SRC=DIR`` runs the broker from another source tree (the probe and hostile clients stay
this tree's), for before/after figures in one sitting; that tree needs ``kafkalite/runtime/loopwatch.py`` started in its
server for the stall column.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_TIMEOUT = 900
BENCH_DIR = Path(__file__).resolve().parent


# -- the broker process -------------------------------------------------------------------------------------
def serve_child(data_dir: str) -> None:
    """Child mode: run the broker; stdin lines ``stats`` (print the loopwatch snapshot as JSON, then reset)
    and ``stop``."""
    import logging

    import trio

    from kafkalite.config.broker import BrokerConfig
    from kafkalite.runtime import loopwatch
    from kafkalite.server.serve import serve

    logging.basicConfig(level=logging.WARNING, format="broker %(levelname)s %(name)s: %(message)s")
    config = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir})

    async def main() -> None:
        shutdown = trio.Event()
        async with trio.open_nursery() as nursery:
            addrs = await nursery.start(lambda task_status: serve(config, shutdown=shutdown,
                                                                  task_status=task_status))
            watch = loopwatch.for_port(addrs[0][1])
            print(f"ready {addrs[0][1]}", flush=True)
            while True:
                line = (await trio.to_thread.run_sync(sys.stdin.readline)).strip()
                if line == "stats" and watch is not None:
                    print(json.dumps(watch.snapshot()), flush=True)
                    watch.reset()
                elif line in ("stop", ""):
                    shutdown.set()
                    return

    trio.run(main)


class BrokerProcess:
    def __init__(self, log_path: Path) -> None:
        self.dir = tempfile.mkdtemp(prefix=".bench-hostile-", dir=os.environ.get("KAFKALITE_BENCH_TMP",
                                                                                   str(BENCH_DIR)))
        self.log = open(log_path, "w")  # noqa: SIM115 -- closed in stop()
        env = dict(os.environ)
        cwd = str(BENCH_DIR.parent)
        other = os.environ.get("KAFKALITE_BENCH_BROKER_SRC")
        if other:   # A/B: the broker from another source tree (e.g. `git archive <commit>` of kafkalite, wire, storage)
            env["PYTHONPATH"] = os.pathsep.join([other, cwd])
            cwd = other   # `python -m` puts the working directory first on sys.path
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.bench_hostile", "--serve", self.dir],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, cwd=cwd, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError(f"broker did not start: {line!r} (see {log_path})")
        self.port = int(line.split()[1])

    def stats(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        out: dict[str, Any] = json.loads(self.proc.stdout.readline())
        from bench import _proc

        out["rss_mb"] = _proc.rss_kb(self.proc.pid) / 1024
        return out

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# -- a tiny blocking client ---------------------------------------------------------------------------------
class Client:
    def __init__(self, port: int, timeout: float = 120.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.cid = 0

    def request(self, body: Any, version: int) -> Any:
        from kafkalite_wire import api
        from kafkalite_wire.headers import RequestHeader

        self.cid += 1
        self.sock.sendall(api.encode_request(RequestHeader(type(body).API_KEY, version, self.cid, "hostile"), body))
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">i", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    frame = bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return api.parse_response(type(body).API_KEY, version, frame)[1]
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed by the broker")
            self.buf += data

    def close(self) -> None:
        self.sock.close()


def produce_req(topic: str, batch: bytes, acks: int = 1) -> Any:
    from kafkalite_wire.messages import ProduceRequest

    return ProduceRequest(acks=acks, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])


def create_topics(c: Client, names: list[str], configs: dict[str, str] | None = None) -> Any:
    from kafkalite_wire.messages import CreateTopicsRequest as C

    cfg = [C.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()]
    return c.request(C(timeout_ms=600_000, topics=[C.CreatableTopic(name=n, num_partitions=1, replication_factor=1,
                                                                     configs=cfg) for n in names]), 7)


class Probe(threading.Thread):
    """Round trips back to back on one connection; ``take()`` returns the latencies (s) since the last."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        from kafkalite_storage.testing import encode_batch
        from kafkalite_wire.messages import ApiVersionsRequest

        self.client = Client(port)
        create_topics(self.client, ["probe"])
        self.batch = encode_batch([b"probe"])
        self.api_versions = ApiVersionsRequest(client_software_name="probe", client_software_version="1")
        self.lat: list[float] = []
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        i = 0
        while not self.stop_flag.is_set():
            t0 = time.perf_counter()
            if i % 2:
                self.client.request(produce_req("probe", self.batch), 9)
            else:
                self.client.request(self.api_versions, 3)
            with self.lock:
                self.lat.append(time.perf_counter() - t0)
            i += 1
            time.sleep(0.002)

    def take(self) -> list[float]:
        with self.lock:
            out, self.lat = self.lat, []
        return out


# -- hostile kinds ------------------------------------------------------------------------------------------
def _batch(records: bytes, count: int, codec: int, *, log_append_time: bool = False) -> bytes:
    """A v2 batch around an already encoded (and maybe compressed) records section."""
    from kafkalite_storage.batch import crc32c

    attrs = codec | (0x08 if log_append_time else 0)
    now = int(time.time() * 1000)
    tail = struct.pack(">hiqqqhii", attrs, count - 1, now, now, -1, -1, -1, count) + records
    crc = crc32c(tail)
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), -1, 2, crc) + tail


def _bomb_record(inflated: int) -> bytes:
    from kafkalite_storage.testing import Rec, encode_record

    return encode_record(0, 0, Rec(key=b"k", value=b"\0" * inflated))


def kind_fuzz(port: int, seconds: float) -> None:
    from kafkalite.tests.fuzz.runner import Fuzzer

    f = Fuzzer("127.0.0.1", port, seed=11)
    f.setup()
    f.run(duration=seconds)


def kind_metadata_huge(port: int, seconds: float) -> None:
    from kafkalite_wire.messages import MetadataRequest as M

    c = Client(port)
    req = M(topics=[M.MetadataRequestTopic(name=f"no-such-topic-{i:06d}") for i in range(50_000)],
            allow_auto_topic_creation=False)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.request(req, 12)
    c.close()


def kind_produce_bomb(codec: str, inflated: int) -> Callable[[int, float], None]:
    def run(port: int, seconds: float) -> None:
        c = Client(port)
        topic = f"bomb-{codec}"
        create_topics(c, [topic], {"cleanup.policy": "compact"})
        record = _bomb_record(inflated)
        if codec == "zstd":
            import zstandard

            compressed, code = zstandard.ZstdCompressor(level=3).compress(record), 4
        else:
            co = zlib.compressobj(9, zlib.DEFLATED, 31)
            compressed, code = co.compress(record) + co.flush(), 1
        del record
        batch = _batch(compressed, 1, code)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            c.request(produce_req(topic, batch), 9)
        c.close()
    return run


def kind_create_topics(port: int, seconds: float) -> None:
    from kafkalite_wire.messages import DeleteTopicsRequest

    c = Client(port, timeout=600)
    names = [f"many-{uuid.uuid4().hex[:8]}-{i}" for i in range(2000)]
    create_topics(c, names)
    c.request(DeleteTopicsRequest(topic_names=names, timeout_ms=600_000), 5)
    c.close()


def kind_half_sent(port: int, seconds: float) -> None:
    socks = []
    try:
        for _ in range(400):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(struct.pack(">i", 256 * 1024) + b"\0" * (128 * 1024))
            socks.append(s)
        time.sleep(seconds)
    except OSError:
        pass   # the broker may refuse or close some: the probe's figures tell the rest
    finally:
        for s in socks:
            s.close()


def kind_list_offsets_claimed(port: int, seconds: float) -> None:
    from kafkalite_storage.testing import Rec, encode_record
    from kafkalite_wire.messages import ListOffsetsRequest as L

    c = Client(port)
    create_topics(c, ["claimed"])
    batch = _batch(encode_record(0, 0, Rec(value=b"v")),
                   1_000_000, 0, log_append_time=True)
    c.request(produce_req("claimed", batch), 9)
    req = L(replica_id=-1, topics=[L.ListOffsetsTopic(name="claimed", partitions=[
        L.ListOffsetsPartition(partition_index=0, timestamp=0)])])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.request(req, 7)
    c.close()


def _send_frame(c: Client, frame: bytes) -> None:
    """Send an already encoded request and wait for its response frame (not decoded: it may be huge)."""
    c.sock.sendall(frame)
    while True:
        if len(c.buf) >= 4:
            (n,) = struct.unpack(">i", c.buf[:4])
            if len(c.buf) >= 4 + n:
                del c.buf[:4 + n]
                return
        data = c.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("closed by the broker")
        c.buf += data


def _many_body(api_name: str, n: int) -> tuple[Any, int]:
    """One request of ``api_name`` naming ``n`` partitions (or resources), and the version to send it at."""
    from kafkalite_wire import messages as m

    if api_name == "produce":
        P = m.ProduceRequest
        return P(acks=1, timeout_ms=30000, topic_data=[P.TopicProduceData(name="probe", partition_data=[
            P.PartitionProduceData(index=i, records=None) for i in range(n)])]), 9
    if api_name == "add_partitions_to_txn":
        A = m.AddPartitionsToTxnRequest
        return A(v3_and_below_transactional_id="hostile-tx", v3_and_below_producer_id=1,
                 v3_and_below_producer_epoch=0,
                 v3_and_below_topics=[A.AddPartitionsToTxnTopic(name="probe", partitions=list(range(n)))]), 3
    if api_name == "txn_offset_commit":
        T = m.TxnOffsetCommitRequest
        return T(transactional_id="hostile-tx", group_id="hostile-g", producer_id=1, producer_epoch=0, topics=[
            T.TxnOffsetCommitRequestTopic(name="probe", partitions=[
                T.TxnOffsetCommitRequestPartition(partition_index=i, committed_offset=1) for i in range(n)])]), 3
    if api_name == "offset_delete":
        OD = m.OffsetDeleteRequest
        return OD(group_id="hostile-g", topics=[OD.OffsetDeleteRequestTopic(name="probe", partitions=[
            OD.OffsetDeleteRequestPartition(partition_index=i) for i in range(n)])]), 0
    if api_name == "alter_configs":
        A2 = m.AlterConfigsRequest
        return A2(resources=[A2.AlterConfigsResource(resource_type=2, resource_name=f"t{i}", configs=[])
                             for i in range(n)]), 2
    D = m.DescribeConfigsRequest
    return D(resources=[D.DescribeConfigsResource(resource_type=2, resource_name=f"t{i}", configuration_keys=None)
                        for i in range(n)]), 4


def _live_txn(port: int, txn_id: str, group_id: str) -> tuple[int, int]:
    """An Ongoing transaction that added ``group_id`` (InitProducerId + AddOffsetsToTxn): its producer id and
    epoch, so a TxnOffsetCommit goes past the producer check into the group coordinator."""
    from kafkalite_wire import messages as m

    c = Client(port)
    init = c.request(m.InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), 4)
    c.request(m.AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=init.producer_id,
                                       producer_epoch=init.producer_epoch, group_id=group_id), 3)
    c.close()
    return init.producer_id, init.producer_epoch


def kind_many(api_name: str, n: int = 1_000_000) -> Callable[[int, float], None]:
    def run(port: int, seconds: float) -> None:
        from kafkalite_wire import api
        from kafkalite_wire.headers import RequestHeader

        body, version = _many_body(api_name.removesuffix("_live"), n)
        if api_name == "txn_offset_commit_live":
            body.producer_id, body.producer_epoch = _live_txn(port, body.transactional_id, body.group_id)
        frame = api.encode_request(RequestHeader(type(body).API_KEY, version, 1, "hostile"), body)
        del body
        c = Client(port, timeout=600)
        end = time.monotonic() + seconds
        while True:
            _send_frame(c, frame)
            if time.monotonic() >= end:
                break
        c.close()
    return run


KINDS: dict[str, Callable[[int, float], None]] = {
    "baseline": lambda port, seconds: time.sleep(seconds),
    "fuzz": kind_fuzz,
    "metadata_huge": kind_metadata_huge,
    "produce_zstd_bomb": kind_produce_bomb("zstd", 256 * 1024 * 1024),
    "produce_gzip_bomb": kind_produce_bomb("gzip", 64 * 1024 * 1024),
    "create_topics_2000": kind_create_topics,
    "half_sent_frames": kind_half_sent,
    "list_offsets_claimed": kind_list_offsets_claimed,
    **{f"many_{name}": kind_many(name, n) for name, n in (
        ("produce", 1_000_000), ("add_partitions_to_txn", 1_000_000), ("txn_offset_commit", 600_000), ("txn_offset_commit_live", 600_000),
        ("offset_delete", 1_000_000), ("alter_configs", 1_000_000), ("describe_configs", 1_000_000))},
}


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="bench.bench_hostile")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    a, _unknown = ap.parse_known_args()
    if a.serve:
        serve_child(a.serve)
        return {}
    quick = a.quick or os.environ.get("BENCH_QUICK") == "1"
    seconds = 3.0 if quick else 8.0
    results_dir = BENCH_DIR / "results"
    results_dir.mkdir(exist_ok=True)
    broker = BrokerProcess(results_dir / "hostile-broker.log")
    rows = []
    try:
        probe = Probe(broker.port)
        probe.start()
        for kind in a.kinds.split(","):
            time.sleep(0.5)
            probe.take()
            broker.stats()
            t0 = time.monotonic()
            error = None
            try:
                KINDS[kind](broker.port, seconds)
            except Exception as exc:
                error = repr(exc)[:120]
            took = time.monotonic() - t0
            time.sleep(0.3)
            lat = sorted(probe.take())
            st = broker.stats()
            row = {"kind": kind, "seconds": round(took, 1), "probe_round_trips": len(lat),
                   "probe_max_ms": round(lat[-1] * 1000, 1) if lat else None,
                   "probe_p99_ms": round(lat[int(len(lat) * 0.99) - 1] * 1000, 2) if len(lat) > 1 else None,
                   "probe_median_ms": round(statistics.median(lat) * 1000, 2) if lat else None,
                   "loop_max_stall_ms": st["max_stall_ms"], "held_by": st["max_stall_what"] or "-",
                   "stall_cpu_ms": [st.get("max_stall_loop_cpu_ms"), st.get("max_stall_process_cpu_ms")],
                   "loop_max_busy_cpu_ms": st.get("max_busy_cpu_ms"),
                   "broker_rss_mb": round(st["rss_mb"], 1), "hostile_error": error or "-"}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not probe.is_alive():
                print("the probe's connection failed; stopping", flush=True)
                break
        probe.stop_flag.set()
        probe.join(30)
    finally:
        broker.stop()
    worst = max(rows, key=lambda r: r["loop_max_stall_ms"] or 0)
    return {"rows": rows, "longest_stall_ms": worst["loop_max_stall_ms"], "longest_stall_kind": worst["kind"]}


if __name__ == "__main__":
    out = main()
    if out:
        print(json.dumps(out, indent=1))
