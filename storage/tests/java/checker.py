"""Run Apache Kafka's own Java record reader (kafka-clients 3.9.1) against segment files.

``check_logs(paths)`` compiles ``FileRecordsCheck.java`` once (cached by source + classpath hash under
``<repo>/.deps/java-build/``), runs it on the given ``.log`` files and returns its JSON lines as dicts:
``{"type": "batch", "file", "position", "baseOffset", "lastOffset", "count", "records", "crc", "isValid", ...,
"error"}`` per batch and ``{"type": "summary", "file", "batches", "records", "validBytes", "sizeInBytes",
"error"}`` per file. Kafka's ``FileRecords.batches()`` + ``ensureValid()`` + record iteration is the reader the
broker itself and every consumer-side tool use, so agreement with it is the ground truth for "Kafka can read
this log".

Jars come from ``$KAFKALITE_JAVA_DEPS`` (default ``<repo>/.deps/java``: kafka-clients, lz4-java, snappy-java,
zstd-jni, slf4j-api). When Jackson is importable from a local pyspark install its jars are added too, so the
``--dump`` mode can print control-record JSON through Kafka's generated JsonConverters.

In tests call ``require_java(requirement)`` first (the root conftest's ``requirement`` fixture): it skips (loudly,
with the reason) when javac or the jars are missing, and fails instead under ``CI=true``.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SOURCES = sorted(HERE.glob("*.java"))
JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")
MAIN_CLASS = "FileRecordsCheck"


class JavaUnavailable(RuntimeError):
    pass


def deps_dir() -> Path:
    return Path(os.environ.get("KAFKALITE_JAVA_DEPS", REPO / ".deps" / "java"))


def _extra_jars() -> list[str]:
    """Jackson jars from a local pyspark (optional; only the JSON of KRaft control records needs them)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    jars_dir = Path(next(iter(spec.submodule_search_locations))) / "jars"
    return sorted(p for p in glob.glob(str(jars_dir / "jackson-*.jar")) if "scala" not in os.path.basename(p)
                  and "yaml" not in p and "jsr310" not in p)


def classpath_jars() -> list[str]:
    d = deps_dir()
    missing = [j for j in JARS if not (d / j).is_file()]
    if missing:
        raise JavaUnavailable(f"missing jars in {d}: {', '.join(missing)} (run `make` to fetch them)")
    return [str(d / j) for j in JARS] + _extra_jars()


def unavailable_reason() -> str | None:
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH"
    try:
        classpath_jars()
    except JavaUnavailable as e:
        return str(e)
    return None


def require_java(requirement: Any) -> None:
    """Go on when the checker can run; otherwise the root conftest's ``requirement.missing`` (a loud skip, or a
    failure under CI=true). ``requirement`` is that fixture: storage never imports kafkalite."""
    requirement.require("java")
    reason = unavailable_reason()
    if reason is not None:
        requirement.missing(f"Kafka Java checker unavailable: {reason}")


def build() -> Path:
    """Compile the Java sources (once; cached by a hash of sources and classpath) and return the classes dir."""
    jars = classpath_jars()
    h = hashlib.sha256()
    for src in SOURCES:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    for jar in jars:
        st = os.stat(jar)
        h.update(f"{jar}:{st.st_size}:{int(st.st_mtime)}".encode())
    cache_root = Path(os.environ.get("KAFKALITE_JAVA_BUILD", REPO / ".deps" / "java-build"))
    out = cache_root / h.hexdigest()[:16]
    if (out / f"{MAIN_CLASS}.class").is_file():
        return out
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=cache_root))
    proc = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(jars), "-d", str(tmp),
                           *map(str, SOURCES)], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
    try:
        os.rename(tmp, out)
    except OSError:  # another process won the race; use its build
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def run(args: Sequence[str], input: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    classes = build()
    cp = os.pathsep.join([str(classes), *classpath_jars()])
    # -Xmx256M: the heap kafka-run-class.sh gives Kafka's tools (decides where huge record counts run out)
    return subprocess.run(["java", "-Xmx256M", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, MAIN_CLASS,
                           *args],
                          input=input, capture_output=True, timeout=timeout)


def check_logs(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, object]]:
    """Kafka's verdict on each ``.log``: one dict per batch and a summary per file (see module docstring)."""
    proc = run([os.fspath(p) for p in paths])
    rows = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines() if line.startswith("{")]
    errors = [r for r in rows if r.get("error")]
    if (proc.returncode != 0) != bool(errors):
        raise RuntimeError(f"FileRecordsCheck exit {proc.returncode} but errors={errors!r}; "
                           f"stderr={proc.stderr.decode(errors='replace')}")
    return rows


def dump_logs(paths: Iterable[str | os.PathLike[str]], print_data_log: bool = False,
              allow_errors: bool = False) -> str:
    """kafka-dump-log's batch/record lines as computed by kafka-clients (see FileRecordsCheck --dump). With
    ``allow_errors`` a file whose reading throws ends with the JVM's ``Exception in thread "main" ...`` line."""
    args = ["--dump"] + (["--print-data-log"] if print_data_log else []) + [os.fspath(p) for p in paths]
    proc = run(args)
    if proc.returncode != 0 and not allow_errors:
        raise RuntimeError(proc.stdout.decode(errors="replace")[-2000:] + proc.stderr.decode(errors="replace"))
    return proc.stdout.decode("utf-8")


def java_utf8_strings(samples: Sequence[bytes]) -> list[str]:
    """``new String(sample, UTF_8)`` for each sample, computed by the JVM."""
    proc = run(["--decode-hex"], input="".join(s.hex() + "\n" for s in samples).encode())
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace"))
    out = []
    for line in proc.stdout.decode().splitlines():
        units = bytes.fromhex(line.strip())
        out.append(units.decode("utf-16-be", errors="surrogatepass"))
    return out


def scala_library_jar() -> str | None:
    """scala-library 2.13 from a local pyspark install (the Scala version Kafka 3.9's default build uses)."""
    override = os.environ.get("KAFKALITE_SCALA_LIBRARY")
    if override:
        return override if os.path.isfile(override) else None
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(glob.glob(os.path.join(next(iter(spec.submodule_search_locations)), "jars",
                                          "scala-library-2.13.*.jar")))
    return found[-1] if found else None


def _scala_run(args: Sequence[str], lines: Sequence[str]) -> list[str]:
    jar = scala_library_jar()
    if jar is None or shutil.which("javac") is None:
        raise JavaUnavailable("scala-library 2.13 jar or javac not found")
    cp = [jar, *classpath_jars()]
    src = HERE / "scala" / "ScalaOrder.java"
    h = hashlib.sha256(src.read_bytes() + os.pathsep.join(cp).encode()).hexdigest()[:16]
    cache_root = Path(os.environ.get("KAFKALITE_JAVA_BUILD", REPO / ".deps" / "java-build"))
    out = cache_root / f"scala-{h}"
    if not (out / "ScalaOrder.class").is_file():
        cache_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="build-", dir=cache_root))
        proc = subprocess.run(["javac", "-nowarn", "-cp", os.pathsep.join(cp), "-d", str(tmp), str(src)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"javac failed:\n{proc.stderr}")
        try:
            os.rename(tmp, out)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    data = "".join(line + "\n" for line in lines).encode()
    proc = subprocess.run(["java", "-cp", os.pathsep.join([str(out), *cp]), "ScalaOrder", *args], input=data,
                          capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace"))
    return proc.stdout.decode().splitlines()


def scala_hashmap_orders(put_sequences: Sequence[Sequence[str]]) -> list[list[str]]:
    """Iteration order of scala.collection.mutable.HashMap after each sequence of puts (computed by Scala)."""
    return [line.split("\t") for line in _scala_run([], ["\t".join(seq) for seq in put_sequences])]


def scala_topic_partition_sets(sets: Sequence[Sequence[tuple[str, int]]]) -> list[str]:
    """``mutable.HashSet[TopicPartition]`` iteration order (as "t-p,t-p"), computed by Scala."""
    return _scala_run(["tp"], ["\t".join(f"{t} {p}" for t, p in items) for items in sets])
