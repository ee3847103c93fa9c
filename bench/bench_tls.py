"""What TLS costs: produce and fetch throughput over PLAINTEXT vs SSL on the same broker, in one run.

Starts one ``kafkalite serve`` with a PLAINTEXT and an SSL listener (certificates from ``kafkalite certs``),
then, alternating transports ``--rounds`` times, produces ``--mb`` MB of 1 KiB records with confluent-kafka
(librdkafka, so the client is not the bottleneck it would be in Python) and reads them back from offset 0
with kcat.
Reported per transport: the medians of MB/s for produce (acks=all) and fetch, and the broker's CPU seconds
per GB moved, and the SSL / PLAINTEXT ratios. A PLAINTEXT fetch sends the records with ``os.sendfile``; an SSL
fetch reads them with ``pread`` and encrypts them in the broker (kafkalite.server.tls), which is the cost
measured here.

    python -m bench.bench_tls [--mb 64] [--rounds 3] [--quick]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _proc

BENCH_TIMEOUT = 600
RECORD = 1024


def _produce(conf: dict[str, Any], topic: str, n: int) -> float:
    from confluent_kafka import Producer

    p = Producer({**conf, "acks": "all", "linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.kbytes":
                  1 << 20, "compression.type": "none"})
    value = os.urandom(RECORD)
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    left = p.flush(120)
    dt = time.perf_counter() - t0
    if left:
        raise RuntimeError(f"{left} records not delivered")
    return n * RECORD / dt / 2**20


def _fetch(conf: dict[str, Any], topic: str, n: int) -> float:
    """kcat (librdkafka in C) reads the partition from offset 0 to the end and discards the records: a Python
    consumer loop would measure itself (~30 MB/s of 1 KiB records) rather than the broker."""
    x: list[str] = []
    for k, v in conf.items():
        if k != "bootstrap.servers":
            x += ["-X", f"{k}={v}"]
    t0 = time.perf_counter()
    p = subprocess.run(["kcat", "-C", "-b", conf["bootstrap.servers"], "-t", topic, "-p", "0", "-o", "beginning",
                        "-c", str(n), "-e", "-q", "-f", "%o\\n", "-X", "fetch.max.bytes=52428800",
                        "-X", "fetch.message.max.bytes=8388608", *x],
                       capture_output=True, text=True, timeout=300)
    dt = time.perf_counter() - t0
    got = p.stdout.count("\n")
    if p.returncode != 0 or got < n:
        raise RuntimeError(f"kcat fetched {got} of {n}: {p.stderr[-500:]}")
    return n * RECORD / dt / 2**20


def run(mb: int, rounds: int) -> dict[str, Any]:
    from kafkalite.cli.certs import write_certs

    n = mb * 2**20 // RECORD
    with tempfile.TemporaryDirectory(prefix="kafkalite-bench-tls-") as d:
        certs = write_certs(Path(d) / "certs")
        props = Path(d) / "server.properties"
        props.write_text(f"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0\n"
                         f"ssl.keystore.location={certs['broker.pem']}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
        log = open(Path(d) / "broker.log", "w+")  # noqa: SIM115 - read back below
        proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", "--config", str(props),
                                 "--data-dir", str(Path(d) / "data"), "--log-level", "WARNING"],
                                stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        try:
            assert proc.stdout is not None
            proc.stdout.readline()
            ports = None
            for _ in range(100):
                out = subprocess.run(["ss", "-Htlnp"], capture_output=True, text=True).stdout
                ports = sorted({int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines()
                                if f"pid={proc.pid}," in line})
                if len(ports) == 2:
                    break
                time.sleep(0.1)
            assert ports and len(ports) == 2, "could not find the broker's two ports"
            confs = {"PLAINTEXT": None, "SSL": None}
            results: dict[str, dict[str, list[float]]] = {t: {"produce": [], "fetch": [], "cpu": []} for t in confs}
            for port in ports:   # which port is which: try a TLS handshake
                import socket
                import ssl

                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=5) as s, \
                            ssl.create_default_context(cafile=str(certs["ca.pem"])).wrap_socket(
                                s, server_hostname="localhost"):
                        confs["SSL"] = {"bootstrap.servers": f"localhost:{port}", "security.protocol": "SSL",
                                        "ssl.ca.location": str(certs["ca.pem"])}
                except (ssl.SSLError, OSError):
                    confs["PLAINTEXT"] = {"bootstrap.servers": f"127.0.0.1:{port}"}
            for r in range(rounds):
                for transport, conf in confs.items():
                    assert conf is not None
                    topic = f"bench-{transport.lower()}-{r}"
                    cpu0 = _proc.tree_cpu_s(proc.pid)
                    results[transport]["produce"].append(_produce(conf, topic, n))
                    results[transport]["fetch"].append(_fetch(conf, topic, n))
                    results[transport]["cpu"].append((_proc.tree_cpu_s(proc.pid) - cpu0) / (2 * mb / 1024))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            log.close()
    rows = []
    for transport, res in results.items():
        rows.append({"transport": transport, "produce_mb_s": round(statistics.median(res["produce"]), 1),
                     "fetch_mb_s": round(statistics.median(res["fetch"]), 1),
                     "broker_cpu_s_per_gb": round(statistics.median(res["cpu"]), 2)})
    plain, tls = rows
    ratios = {"ssl_over_plaintext_produce": round(tls["produce_mb_s"] / plain["produce_mb_s"], 2),
              "ssl_over_plaintext_fetch": round(tls["fetch_mb_s"] / plain["fetch_mb_s"], 2),
              "ssl_over_plaintext_broker_cpu": round(tls["broker_cpu_s_per_gb"] / plain["broker_cpu_s_per_gb"], 2)}
    return {"mb": mb, "rounds": rounds, "rows": rows, "ratios": ratios}


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args, _extra = ap.parse_known_args(sys.argv[1:])
    mb, rounds = (16, 3) if args.quick else (args.mb, args.rounds)
    result = run(mb, rounds)
    for row in result["rows"]:
        print(" | ".join(f"{k} {v}" for k, v in row.items()))
    print(" | ".join(f"{k} {v}" for k, v in result["ratios"].items()))
    return result


if __name__ == "__main__":
    main()
