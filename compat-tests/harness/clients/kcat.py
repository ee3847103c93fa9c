"""kcat 1.7.1 driver (Debian's /usr/bin/kcat, which links librdkafka 2.0.2 - old enough to mis-skip tagged
fields it does not know, so it doubles as a probe for over-eager tagged-field encoding).

Limits of the tool itself (not of the broker): it reads records as text lines from stdin, so keys and values
must not contain the delimiters; headers are given once per invocation (-H) and apply to every record; there is
no way to give a per-record timestamp; it has no admin operations besides -L (metadata) and -Q (offsets by
timestamp; -1/-2 mean latest/earliest as in ListOffsets).
"""

from __future__ import annotations

import json
import re
import subprocess

from harness.clients.base import CODECS, Client, ClientError, which
from harness.records import Rec

KCAT = "/usr/bin/kcat"
KEY_DELIM = "\t"


class KcatClient(Client):
    name = "kcat"
    features = frozenset({"produce", "consume", "fixed_headers", "null_key", "null_value", "idempotent",
                          "metadata", "list_offsets", "offsets_by_time", *(f"codec:{c}" for c in CODECS)})

    def missing(self) -> str | None:
        path = which("kcat") or (KCAT if which(KCAT) else None)
        return None if path else "kcat not installed (apt-get install kcat)"

    def _run(self, args: list[str], stdin: bytes | None = None, timeout: float = 60.0) -> bytes:
        cmd = [which("kcat") or KCAT, *args]
        try:
            p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise ClientError(f"kcat timed out after {timeout}s: {cmd}\nstderr: {e.stderr!r}") from None
        if p.returncode != 0:
            raise ClientError(f"kcat exited {p.returncode}: {' '.join(cmd)}\n"
                              f"stderr: {p.stderr.decode(errors='replace')[-3000:]}")
        return p.stdout

    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        by_part: dict[int, list[Rec]] = {}
        for r in records:
            by_part.setdefault(r.partition if r.partition is not None else -1, []).append(r)
        headers = records[0].headers if records else ()
        for p, recs in by_part.items():
            if any(r.headers != headers for r in recs):
                raise ValueError("kcat sends one header set for all records")
            if any(r.timestamp is not None for r in recs):
                raise ValueError("kcat cannot send explicit timestamps")
            lines = []
            for r in recs:
                val = r.value or b""
                for part in (r.key or b"", val):
                    if b"\n" in part or KEY_DELIM.encode() in part:
                        raise ValueError("kcat records must not contain the delimiters")
                if r.value == b"" or r.key == b"":
                    raise ValueError("kcat -Z cannot tell an empty key/value from a null one")
                # A line without the key delimiter has a null key; with -Z an empty value is a null value.
                lines.append(val if r.key is None else r.key + KEY_DELIM.encode() + val)
            # -E: keep going when all brokers are briefly down (kcat exits on that by default).
            args = ["-P", "-E", "-b", bootstrap, "-t", topic, "-p", str(p), "-K", "\\t", "-Z", "-z", compression,
                    "-X", f"acks={acks}", "-X", f"message.timeout.ms={int(timeout_s * 1000)}"]
            if idempotent is not None:
                args += ["-X", f"enable.idempotence={'true' if idempotent else 'false'}"]
            if max_request_bytes:
                args += ["-X", f"message.max.bytes={max_request_bytes}"]
            for k, v in headers:
                if v is None:
                    raise ValueError("kcat cannot send a null header value")
                args += ["-H", f"{k}={v.decode()}"]
            self._run(args, b"\n".join(lines) + b"\n", timeout=timeout_s + 10)
        return []

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None):
        """One kcat process over the whole topic (kcat's simple consumer assigns every partition) that stops
        after ``count`` records; records of partitions not asked for are dropped."""
        offset = "beginning" if start == "earliest" else str(int(start))
        args = ["-C", "-E", "-b", bootstrap, "-t", topic, "-o", offset, "-c", str(count), "-J", "-q",
                "-X", "fetch.wait.max.ms=100"]
        if max_fetch_bytes:
            args += ["-X", f"fetch.max.bytes={max_fetch_bytes * 2}",
                     "-X", f"receive.message.max.bytes={max_fetch_bytes * 2 + 1_000_000}"]
        proc = subprocess.Popen([which("kcat") or KCAT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            so, se = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            so, se = proc.communicate()
        if proc.returncode not in (0, -9):
            raise ClientError(f"kcat consumer exited {proc.returncode}: {se.decode(errors='replace')[-3000:]}")
        wanted = set(partitions)
        out = [_parse_json_record(json.loads(line)) for line in so.splitlines() if line.strip()]
        return [r for r in out if r.partition in wanted]

    def metadata(self, bootstrap, topics=None):
        topics_out: dict[str, int] = {}
        brokers = []
        for t in topics or [None]:
            args = ["-L", "-b", bootstrap, "-J", "-m", "20"] + (["-t", t] if t else [])
            md = json.loads(self._run(args))
            brokers = []
            for b in md["brokers"]:
                host, _, port = b["name"].rpartition(":")
                brokers.append((b["id"], host, int(port)))
            for tm in md["topics"]:
                if tm.get("error"):
                    raise ClientError(f"metadata error for {tm['topic']}: {tm['error']}")
                topics_out[tm["topic"]] = len(tm["partitions"])
        return {"brokers": brokers, "topics": topics_out}

    def list_offsets(self, bootstrap, topic, partition, spec):
        ts = {"earliest": -2, "latest": -1}.get(spec, spec) if isinstance(spec, str) else spec
        out = self._run(["-Q", "-b", bootstrap, "-t", f"{topic}:{partition}:{ts}", "-m", "20"]).decode()
        m = re.search(rf"\[{partition}\]\s+offset\s+(-?\d+)", out)
        if not m:
            raise ClientError(f"unexpected kcat -Q output: {out!r}")
        return int(m.group(1))


def _parse_json_record(d: dict) -> Rec:
    hdrs = d.get("headers") or []
    headers = tuple((hdrs[i], None if hdrs[i + 1] is None else hdrs[i + 1].encode())
                    for i in range(0, len(hdrs), 2))
    key = d.get("key")
    val = d.get("payload")
    return Rec(None if key is None else key.encode(), None if val is None else val.encode(), headers,
               d.get("ts"), d["partition"], d["offset"])
