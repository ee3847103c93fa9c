"""Request memory under slow senders: the broker's RSS while many connections each hold half a request.

Starts ``kafkalite serve`` (default ``queued.max.request.bytes``), opens ``--connections`` connections that
each send half of a ``--frame-bytes`` request and then nothing, and reports the broker's resident memory
idle, while they are held, and after they closed, plus how many bytes the clients offered. Every request
byte read counts against the pool, so "held" stays near the pool size however much is offered, and the
memory comes back when they close (``kafkalite.runtime.malloc``). Linux only (reads /proc).

    python -m bench.bench_request_memory [--connections 2000] [--frame-bytes 262144] [--quick]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import socket
import struct
import subprocess
import sys
import tempfile
from typing import Any

from kafkalite.tests.support.procstat import settled_rss_mb

BENCH_TIMEOUT = 300


def run(connections: int, frame_bytes: int, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kafkalite-bench-") as d:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
        proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0",
                                 "--data-dir", d, *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=env)
        socks: list[socket.socket] = []
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline().rsplit(":", 1)[1])
            idle = settled_rss_mb(proc.pid)
            frame = struct.pack(">ihhi", frame_bytes, 0, 9, 1) + bytes(frame_bytes - 8)
            offered = 0
            for _ in range(connections):
                s = socket.create_connection(("127.0.0.1", port), timeout=20)
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    offered += s.send(frame[: frame_bytes // 2])
                socks.append(s)
            held = settled_rss_mb(proc.pid)
            for s in socks:
                s.close()
            socks.clear()
            after = settled_rss_mb(proc.pid)
        finally:
            for s in socks:
                s.close()
            proc.terminate()
            proc.wait(timeout=60)
    return {"connections": connections, "frame_bytes": frame_bytes, "offered_mb": round(offered / 2**20, 1),
            "rss_idle_mb": round(idle, 1), "rss_held_mb": round(held, 1), "rss_after_close_mb": round(after, 1)}


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--frame-bytes", type=int, default=256 * 1024)
    ap.add_argument("--quick", action="store_true")
    args, extra = ap.parse_known_args(sys.argv[1:])
    n = min(args.connections, 500) if args.quick else args.connections
    row = run(n, args.frame_bytes, [a for a in extra if a.startswith("--override") or "=" in a])
    print(" | ".join(f"{k} {v}" for k, v in row.items()))
    return {"rows": [row]}


if __name__ == "__main__":
    main()
