"""Java and Scala behaviours kafka-dump-log's output depends on, reproduced in Python.

* ``JavaError``: an exception that ends the tool; the JVM prints ``Exception in thread "main" <class>: <msg>``,
  ``kafkalite dump-log`` one line of its own (``plain_text``: what is wrong with which file, no Java names).
* ``java.io.File`` path text (``_jfile``/``_jname``/``_jabs``) and ``Long.parseLong`` errors.
* ``java_utf8_decode``: ``new String(bytes, UTF_8)`` including Java 17's replacement rules for malformed input
  (checked against the JVM in storage/tests/test_java_checker.py).
* ``ScalaHashMap``: the iteration order of Scala 2.13's ``mutable.HashMap``, which orders the tool's per-file
  error reports (checked against scala-library 2.13 in the same test module).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable
from typing import Any

_INT_MAX = 2**31 - 1
_NO_TIMESTAMP = -1
_HEADER_SIZE_UP_TO_MAGIC = 17
_LOG_OVERHEAD = 12
_RECORD_OVERHEAD_V0 = 14
_BATCH_OVERHEAD = 61
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_MAX_MESSAGE_SIZE_DEFAULT = 5 * 1024 * 1024
_Writer = Callable[[str], object]

_CORRUPT_RECORD = "org.apache.kafka.common.errors.CorruptRecordException"
_INVALID_RECORD = "org.apache.kafka.common.InvalidRecordException"
_KAFKA_EXC = "org.apache.kafka.common.KafkaException"
_ILLEGAL_ARG = "java.lang.IllegalArgumentException"


class JavaError(Exception):
    """An exception Kafka's tool would throw out of ``main`` (the JVM prints it and exits with status 1).

    ``java_class`` and ``message`` are Kafka's (the tests hold them against the JVM's); ``plain`` (the whole
    line) or ``detail`` (what follows ``FILE: ``) say the same in our own words where the raise site knows more
    than Kafka's message tells (see ``plain_text``)."""

    def __init__(self, java_class: str, message: str | None = None, *, plain: str | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message
        self.plain = plain
        self.detail = detail

    def render(self) -> str:
        head = f'Exception in thread "main" {self.java_class}'
        return head if self.message is None else f"{head}: {self.message}"


# Java names in Kafka's messages (a cause's class, a FileRecords' toString) and what our line says instead
_FILE_RECORDS = re.compile(r"FileRecords\(size=-?\d+, file=(.*?), start=-?\d+, end=-?\d+\)")
_JAVA_NAME = re.compile(r"\b(?:java|javax|org\.apache\.kafka|scala)(?:\.\w+)*\.([A-Z]\w*)(:\s*)?")
_JAVA_WORDS = {"EOFException": "unexpected end of data", "BufferUnderflowException": "unexpected end of data",
               "NoSuchElementException": "no batch where one was expected",
               "IndexOutOfBoundsException": "a length reaches past the data",
               "NullPointerException": "a required field is missing",
               "OutOfMemoryError": "a batch larger than this tool will load"}
_SUFFIXES = ".log, .index, .timeindex, .snapshot, .txnindex or .checkpoint"


def _unjava(text: str) -> str:
    """Kafka's message without Java class names: ``java.io.EOFException`` -> ``unexpected end of data``,
    ``java.util.zip.ZipException: Not in GZIP format`` -> ``Not in GZIP format``, ``FileRecords(...)`` -> its file."""
    text = _FILE_RECORDS.sub(lambda m: m.group(1), text)

    def word(m: re.Match[str]) -> str:
        known = _JAVA_WORDS.get(m.group(1))
        return known + (": " if m.group(2) else "") if known else ""

    return _JAVA_NAME.sub(word, text).strip().rstrip(":").strip()


def plain_text(exc: JavaError, path: str) -> str:
    """The one line (without the ``kafkalite dump-log: error: `` prefix) for an error that ended the dump of
    ``path``: what is wrong with which file, in our words, never a Java class name or a stack trace."""
    if exc.plain:
        return exc.plain
    if exc.detail:
        return f"{path}: {exc.detail}"
    cls = exc.java_class.rsplit(".", 1)[-1]
    name = _jname(path)
    if cls == "StringIndexOutOfBoundsException":   # a name without a dot: Kafka cannot tell the file's kind
        if os.path.isdir(path):
            return (f"{path} is a directory: name the files in it to dump "
                    f"(e.g. {path}/00000000000000000000.log)")
        return f"{path}: not a file kafka-dump-log reads (expected a {_SUFFIXES} file)"
    if cls == "NumberFormatException":
        suffix = name[name.rfind("."):] if "." in name else ".log"
        return (f"{path}: not a segment file name: Kafka names a segment's files by its base offset, "
                f"20 digits (e.g. 00000000000000000000{suffix})")
    what = _unjava(exc.message or "") or _JAVA_WORDS.get(cls, "")
    kind = "corrupt index" if cls == "CorruptIndexException" else "corrupt or truncated data"
    return f"{path}: {kind}: {what}" if what else f"{path}: {kind}"


# ---------------------------------------------------------------------------------------------------------------
# Java-compatible helpers: java.io.File path text, String(bytes, UTF_8), Scala HashMap iteration order.


def _jfile(path: str) -> str:
    """``new File(path).toString()``: duplicate slashes collapse and a trailing slash goes (UnixFileSystem)."""
    out: list[str] = []
    prev = ""
    for ch in path:
        if ch == "/" and prev == "/":
            continue
        out.append(ch)
        prev = ch
    s = "".join(out)
    if len(s) > 1 and s.endswith("/"):
        s = s[:-1]
    return s


def _jname(path: str) -> str:
    return path[path.rfind("/") + 1 :]


def _jabs(path: str) -> str:
    """``File.getAbsolutePath()``: relative paths are resolved against user.dir, without normalising ``..``."""
    if path.startswith("/"):
        return path
    cwd = os.getcwd()
    return cwd if path == "" else _jfile(cwd + "/" + path)


def _jparse_long(s: str) -> int:
    body = s[1:] if s[:1] in "+-" else s
    if not body or not body.isascii() or not body.isdigit():
        raise JavaError("java.lang.NumberFormatException", f'For input string: "{s}"')
    value = int(s)
    if not -(2**63) <= value < 2**63:
        raise JavaError("java.lang.NumberFormatException", f'For input string: "{s}"')
    return value


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _java_utf8_slow(data: bytes) -> str:
    """Port of the replacement rules of Java 17's ``String(byte[], UTF_8)``.

    Differences from Python's ``errors="replace"``: a 3-byte sequence that decodes to a surrogate (ED A0..BF xx)
    is one U+FFFD (Python: three); a bad third byte after a valid lead+continuation replaces both with one U+FFFD;
    a truncated sequence at the end of input becomes a single U+FFFD and ends decoding.
    """
    out: list[str] = []
    n = len(data)
    i = 0
    rep = "\ufffd"
    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if i < n:
                if not _cont(data[i]):
                    out.append(rep)
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)))
                    i += 1
                continue
            out.append(rep)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if i + 1 < n:
                b2, b3 = data[i], data[i + 1]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    out.append(rep)
                    i += 0 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)) else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(rep if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 2
                continue
            if i < n and ((b1 == 0xE0 and (data[i] & 0xE0) == 0x80) or not _cont(data[i])):
                out.append(rep)
                continue
            out.append(rep)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 2 < n:
                b2, b3, b4 = data[i], data[i + 1], data[i + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(rep)
                    if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                            or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)):
                        i += 0
                    elif not _cont(b3):
                        i += 1
                    else:
                        i += 2
                else:
                    out.append(chr(uc))
                    i += 3
                continue
            if b1 > 0xF4 or (i < n and ((b1 == 0xF0 and not 0x90 <= data[i] <= 0xBF)
                                        or (b1 == 0xF4 and (data[i] & 0xF0) != 0x80) or not _cont(data[i]))):
                out.append(rep)
                continue
            i += 1
            out.append(rep)
            if i < n and not _cont(data[i]):
                continue
            break
        else:
            out.append(rep)
    return "".join(out)


def java_utf8_decode(data: bytes) -> str:
    """What Java's ``new String(data, StandardCharsets.UTF_8)`` returns (Kafka's StringDecoder, header keys)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _java_utf8_slow(data)


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


class ScalaHashMap:
    """Key order of a Scala 2.13 ``mutable.HashMap[String, _]`` (what DumpLogSegments collects errors in).

    Buckets are ``improveHash(hashCode) & (capacity - 1)``; capacity starts at 16 and doubles whenever a ``put``
    (also one that only replaces a value) finds ``size + 1 >= 0.75 * capacity``; a bucket keeps its nodes sorted
    by improved hash (signed compare), equal hashes in insertion order. Iteration walks buckets in order.
    """

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.capacity = 16

    def put(self, key: str, value: Any) -> None:
        if len(self.values) + 1 >= int(self.capacity * 0.75):
            self.capacity *= 2
        self.values[key] = value

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def ordered_keys(self) -> list[str]:
        entries = []
        for n, k in enumerate(self.values):
            h = _java_string_hash(k) & 0xFFFFFFFF
            h ^= h >> 16
            entries.append((h & (self.capacity - 1), _i32(h), n, k))
        return [k for _, _, _, k in sorted(entries)]



def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _i64(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v & 0x8000000000000000 else v


def _optional_long(v: int | None) -> str:
    """``java.util.OptionalLong.toString()``."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"
