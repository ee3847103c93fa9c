"""A long-lived child process spoken to in JSON lines (one command per line in, one reply per line out).

Used for the Java and kafkajs drivers so the JVM / node start once per test session instead of once per
operation. The child's stderr goes to a log file (never a pipe that could fill up and block it).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from harness.clients.base import ClientError


class JsonLineProcess:
    def __init__(self, cmd: list[str], log_path: Path, cwd: str | None = None, start_timeout: float = 60.0):
        self.cmd = cmd
        self.log_path = log_path
        self.cwd = cwd
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the child
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     cwd=self.cwd)
        self._lines = queue.Queue()
        threading.Thread(target=self._reader, args=(self.proc, self._lines), daemon=True).start()
        hello = self._read(self.start_timeout)
        if not hello.get("ready"):
            raise ClientError(f"{self.cmd[0]} driver did not start: {hello}")

    @staticmethod
    def _reader(proc: subprocess.Popen[bytes], q: queue.Queue[bytes | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            q.put(line)
        q.put(None)

    def _read(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise ClientError(f"driver gave no answer within {timeout}s; its log:\n{self.log_tail()}") from None
        if line is None:
            self.proc = None
            raise ClientError(f"driver process exited; its log:\n{self.log_tail()}")
        return json.loads(line)

    def request(self, cmd: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        with self._lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
            self.proc.stdin.flush()
            reply = self._read(timeout)
        if not reply.get("ok"):
            raise ClientError(f"{cmd.get('op')}: {reply.get('error')}\n{reply.get('trace', '')[:4000]}")
        return reply

    def log_tail(self, n: int = 6000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-n:].decode(errors="replace")

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(10)
        except (subprocess.TimeoutExpired, OSError):
            proc.kill()
            proc.wait(10)
