"""Kafka's ecosystem on kafkalite (#25): the jars ``tools/bootstrap.sh eco`` fetched from Maven Central into
``.deps/eco/<set>/``, a SparkSession carrying Spark's own Kafka connector through ``spark.jars``, and the
classpath of Kafka Streams.

Nothing here downloads at run time: a missing jar set is reported by ``spark_missing()`` /
``streams_missing()`` and the tests skip loudly (fail under ``CI=true``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]  # compat-tests/
REPO = HERE.parent
ECO = Path(os.environ.get("KAFKALITE_ECO_JARS", REPO / ".deps" / "eco"))
CACHE = Path(os.environ.get("KAFKALITE_COMPAT_CACHE", REPO / ".deps" / "compat-cache"))

# What bootstrap pins (tools/bootstrap.sh ECO_SETS); MATRIX.md and the reports name these.
SPARK_CONNECTOR = "spark-sql-kafka-0-10_2.13 4.2.0 (kafka-clients 3.9.2)"
STREAMS = "kafka-streams 4.4.0 (kafka-clients 4.4.0)"


def jars(name: str) -> list[Path]:
    return sorted((ECO / name).glob("*.jar"))


def spark_missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (tools/bootstrap.sh spark)"
    if shutil.which("java") is None:
        return "java not on PATH"
    if not any(j.name.startswith("spark-sql-kafka-0-10") for j in jars("spark-kafka")):
        return f"Spark's Kafka connector jars missing in {ECO / 'spark-kafka'}: run tools/bootstrap.sh eco"
    return None


def spark_conf() -> dict[str, str]:
    """The session settings every Spark driver of these tests uses (the in-process one and the subprocess
    streaming jobs): local[2], a bounded driver heap, UTC, Spark's connector on the classpath."""
    return {
        "spark.jars": ",".join(str(j) for j in jars("spark-kafka")),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "512m",
    }


def _fresh_jvm() -> None:
    """Stop a Spark JVM this process started earlier (another test module's session): ``spark.jars`` reach only a
    JVM launched with them, and PySpark reuses its first JVM for every later session, so in one pytest run after
    kafkalite's own Spark tests ``format("kafka")`` would not be found. The next session launches a new JVM."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:   # the JVM process PySpark launched: gone before the next one starts
            proc.stdin.close() if proc.stdin else None
            proc.wait(timeout=60)
        SparkContext._gateway = None
        SparkContext._jvm = None


def make_spark(app: str) -> Any:
    """A local[2] SparkSession with Spark's ``kafka`` format and kafkalite's ``kafkalite`` format."""
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkalite.spark

    _fresh_jvm()
    b = SparkSession.builder.master("local[2]").appName(app)
    for k, v in spark_conf().items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    kafkalite.spark.register(spark)
    return spark


def read_offsets_log(checkpoint: Path) -> list[dict[str, dict[str, int]]]:
    """The end offsets of every micro-batch in a streaming checkpoint's ``offsets/`` log, by batch id.

    A file is ``v1``, the batch's metadata JSON, then one line per source: the source's offset JSON, which for
    Spark's Kafka source (and kafkalite's) is ``{"topic": {"partition": offset}}``."""
    out: list[dict[str, dict[str, int]]] = []
    logs = sorted((checkpoint / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    for i, p in enumerate(logs):
        assert int(p.name) == i, f"offsets log not contiguous: {[q.name for q in logs]}"
        lines = p.read_text().splitlines()
        assert lines[0] == "v1", lines[0]
        out.append(json.loads(lines[2]))
    return out


def committed_batches(checkpoint: Path) -> int:
    """How many micro-batches the query committed (files in the checkpoint's ``commits/`` log)."""
    return len(list((checkpoint / "commits").glob("[0-9]*")))


# -- Kafka Streams ---------------------------------------------------------------------------------------------
def streams_missing() -> str | None:
    if shutil.which("java") is None or shutil.which("javac") is None:
        return "java/javac not on PATH (need a JDK >= 17)"
    if not any(j.name.startswith("kafka-streams-") for j in jars("streams")):
        return f"Kafka Streams jars missing in {ECO / 'streams'}: run tools/bootstrap.sh eco"
    return None


def compile_streams_apps() -> Path:
    """javac ``compat-tests/streams/*.java`` against the Streams jars, once per hash of sources + jars."""
    sources = sorted((HERE / "streams").glob("*.java"))
    h = hashlib.sha256()
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    for jar in jars("streams"):
        h.update(jar.name.encode())
    out = CACHE / f"streams-{h.hexdigest()[:16]}"
    if (out / ".ok").exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="streams-build-", dir=CACHE))
    cp = os.pathsep.join(str(j) for j in jars("streams"))
    p = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(tmp), *map(str, sources)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"javac failed:\n{p.stdout}\n{p.stderr}")
    (tmp / ".ok").write_text("")
    try:
        tmp.rename(out)
    except OSError:  # another session won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def streams_command(main: str, *args: str) -> list[str]:
    """``java`` with a bounded heap running ``main`` of the compiled Streams apps."""
    cp = os.pathsep.join([str(compile_streams_apps()), *(str(j) for j in jars("streams"))])
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, main, *args]
