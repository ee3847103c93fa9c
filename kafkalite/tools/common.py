"""What every tool shares: the connection options, confluent-kafka's clients, errors, tables and JSON.

The tools are Kafka *clients*: they reach any broker (kafkalite or Kafka) through confluent-kafka, as
``kafka-topics.sh`` and friends reach it through the Java admin client, and import nothing of the broker.
confluent-kafka is installed by the checkout's setup (``make run``, ``tools/bootstrap.sh venv``) and by the
``tools`` extra; without it a tool exits 1 with one line naming the interpreter that lacks it and the command
that installs it there (never a bare ``pip install 'kafkalite[tools]'``, which outside this checkout would
fetch whatever a registry holds under that name), and ``kafkalite serve`` is unaffected.

Output: a table on a terminal (aligned columns, one header line), the same rows tab-separated when stdout is
a pipe (so ``cut``/``awk`` work), or JSON with ``--json`` (one document; the shape is documented per tool).
Errors: :class:`ToolError` carries the exit code; a Kafka error is shown as ``NAME: message`` (Kafka's error
name, e.g. ``TOPIC_ALREADY_EXISTS: Topic 't' already exists.``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

OK, FAILED, USAGE = 0, 1, 2
DEFAULT_BOOTSTRAP = "localhost:9092"


def extra_hint() -> str:
    """The one line a tool prints when confluent-kafka is missing: which Python lacks it, how to add it."""
    return (f"the tools need confluent-kafka, which {sys.executable} does not have: in a kafkalite checkout run "
            f"`make run` or `tools/bootstrap.sh venv`, or install it into this Python: "
            f"{sys.executable} -m pip install 'confluent-kafka>=2.4'")


class ToolError(Exception):
    """Ends a tool with one error line and ``code`` (1: the operation failed, 2: usage)."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def usage(message: str) -> NoReturn:
    raise ToolError(message, USAGE)


def confluent() -> Any:
    """The ``confluent_kafka`` module, or a ToolError naming the extra that installs it."""
    try:
        import confluent_kafka
    except ImportError:
        raise ToolError(extra_hint()) from None
    return confluent_kafka


def add_connection_options(parser: argparse.ArgumentParser, *, verbose: bool = True) -> None:
    """The options of a tool that talks to a broker; ``verbose=False`` for a tool whose own ``--verbose`` means
    more output (kafka-consumer-groups'), where ``--debug`` alone shows the client library's log."""
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT",
                        default=os.environ.get("KAFKALITE_BOOTSTRAP_SERVER", DEFAULT_BOOTSTRAP),
                        help="broker to connect to (default $KAFKALITE_BOOTSTRAP_SERVER or localhost:9092)")
    parser.add_argument("--command-config", metavar="FILE",
                        help="a properties file of client settings (librdkafka names: security.protocol, "
                             "sasl.*, ssl.*, ...)")
    parser.add_argument("--timeout-ms", type=int, default=30_000, metavar="MS", dest="request_timeout_ms",
                        help="how long to wait for each answer of the broker (default 30000)")
    add_client_options(parser, verbose=verbose)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


#: how long a tool waits for a first answer from the bootstrap servers before it gives up
BOOTSTRAP_TIMEOUT_MS = 5000


def add_client_options(parser: argparse.ArgumentParser, *, verbose: bool = True) -> None:
    """Options every tool shares for reaching a broker: how long to try, and the client library's own log."""
    parser.add_argument("--bootstrap-timeout", type=int, default=BOOTSTRAP_TIMEOUT_MS, metavar="MS",
                        dest="bootstrap_timeout_ms",
                        help=f"give up when no broker has answered within MS (default {BOOTSTRAP_TIMEOUT_MS})")
    if verbose:
        parser.add_argument("--verbose", action="store_true", dest="client_log",
                            help="show the client library's (librdkafka's) own log on stderr; quiet without it")
    parser.add_argument("--debug", metavar="CONTEXTS",
                        help="librdkafka debug contexts on stderr (e.g. broker,protocol or all); implies --verbose")


def client_config(args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": args.bootstrap_server}
    if getattr(args, "debug", None):
        conf.update({"debug": args.debug, "log_level": 7})
    elif not getattr(args, "client_log", False):
        # librdkafka logs every failed connection attempt (hundreds of lines while a broker is down); the tool
        # says what went wrong in its own one line
        conf["log_level"] = 0
    if getattr(args, "command_config", None):
        conf.update(properties_file(args.command_config, "--command-config"))
    conf.update(extra)
    # --command-property / --producer-property / --consumer-property K=V (Kafka's console tools): applied last
    for item in getattr(args, "client_properties", None) or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            usage(f"client property {item!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    return conf


def properties_file(path: str, option: str) -> dict[str, str]:
    """A Java properties file's settings (``--command-config``, ``--formatter-config``, ...); a file that cannot
    be read is a usage error naming ``option``."""
    # only a tool given a file: config.broker (and storage behind it) costs a tool ~40 ms
    from kafkalite.config.broker import parse_properties

    try:
        with open(path, encoding="utf-8") as fh:
            return dict(parse_properties(fh.read()))
    except OSError as exc:
        usage(f"{option} {path}: {exc.strerror or exc}")


def timeout_s(args: argparse.Namespace) -> float:
    return max(getattr(args, "request_timeout_ms", 30_000), 1) / 1000


def bootstrap_s(args: argparse.Namespace) -> float:
    """Seconds to wait for the first answer from the bootstrap servers (``--bootstrap-timeout``)."""
    return max(getattr(args, "bootstrap_timeout_ms", BOOTSTRAP_TIMEOUT_MS), 1) / 1000


def unreachable(args: argparse.Namespace, exc: BaseException) -> ToolError:
    """The one line a tool ends with when no broker answered its first request."""
    return ToolError(f"cannot reach a broker at {args.bootstrap_server} within {bootstrap_s(args):g} s "
                     f"(--bootstrap-timeout): {kafka_message(exc)}")


def admin(args: argparse.Namespace) -> Any:
    """An AdminClient that has reached the broker (a Metadata round trip), or a ToolError saying it cannot."""
    ck = confluent()
    from confluent_kafka.admin import AdminClient

    client = AdminClient(client_config(args, **{"socket.connection.setup.timeout.ms": 10_000}))
    try:
        client.list_topics(timeout=bootstrap_s(args))
    except ck.KafkaException as exc:
        raise unreachable(args, exc) from None
    return client


def kafka_message(exc: BaseException) -> str:
    """``NAME: message`` for a confluent KafkaException / KafkaError, else ``str(exc)``."""
    err = exc.args[0] if exc.args else None
    if hasattr(err, "name") and hasattr(err, "str"):
        name, text = err.name(), err.str()
        if name.startswith("_"):   # librdkafka's local codes (_TRANSPORT, _TIMED_OUT): the text says it
            return text
        return f"{name}: {text}" if text and text != name else name
    return str(exc)


def result(future: Any, timeout: float, what: str) -> Any:
    """A confluent admin future's result, a Kafka error or a timeout turned into a ToolError about ``what``."""
    import concurrent.futures

    try:
        return future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        raise ToolError(f"{what}: no answer within {timeout:g} s") from None
    except Exception as exc:
        raise ToolError(f"{what}: {kafka_message(exc)}") from None


def split_kv(items: Iterable[str], what: str) -> dict[str, str]:
    """``["a=1,b=2", "c=[x,y]"]`` -> ``{"a": "1", "b": "2", "c": "x,y"}`` (kafka-configs' square brackets
    group a list value that contains commas)."""
    out: dict[str, str] = {}
    for item in items:
        for part in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", item):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                usage(f"{what} {part!r}: expected KEY=VALUE")
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            out[key.strip()] = value
    return out


def split_names(items: Iterable[str]) -> list[str]:
    return [p.strip() for item in items for p in item.split(",") if p.strip()]


def parse_properties_args(items: Iterable[str], known: Mapping[str, str]) -> dict[str, str]:
    """``--property k=v`` values (each flag may carry several); unknown keys are a usage error."""
    props = dict(known)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            usage(f"--property {item!r}: expected KEY=VALUE")
        if key not in known:
            usage(f"--property {key}: unknown (known: {', '.join(sorted(known))})")
        props[key] = value
    return props


def truthy(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes", "on")


def unescape(value: str) -> str:
    """Separators given on a command line: ``\\t`` and ``\\n`` mean tab and newline, as in Kafka's tools."""
    return value.encode("utf-8").decode("unicode_escape") if "\\" in value else value


_DURATION = re.compile(r"^(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.I)


def parse_datetime_ms(text: str) -> int:
    """Milliseconds since the epoch from an integer, or an ISO-8601 date/time (Kafka's
    ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone; no zone means local time, as Kafka's tools do)."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        usage(f"{text!r}: expected milliseconds since the epoch or YYYY-MM-DDTHH:mm:SS[.sss][zone]")
    if value.tzinfo is None:
        value = value.astimezone()
    return int(value.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    """ISO-8601 duration ``PnDTnHnMnS`` (Kafka's --by-duration) in milliseconds; a leading ``-`` negates."""
    m = _DURATION.match(text.strip())
    if not m or not any(m.group(i) for i in range(2, 6)):
        usage(f"--by-duration {text!r}: expected an ISO-8601 duration such as PT1H30M or P1DT2H")
    days, hours, minutes, seconds = (float(m.group(i) or 0) for i in range(2, 6))
    ms = int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)
    return -ms if m.group(1) else ms


def emit(args: argparse.Namespace, data: Any, headers: Sequence[str], rows: Iterable[Sequence[Any]],
         out: Any = None) -> None:
    """``data`` as JSON with ``--json``, else ``rows`` as a table (a terminal) or tab-separated lines."""
    out = out or sys.stdout
    if getattr(args, "json", False):
        json.dump(data, out, indent=None, separators=(", ", ": "), default=str)
        out.write("\n")
        return
    table(headers, rows, out)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], out: Any = None) -> None:
    out = out or sys.stdout
    cells = [["-" if v is None else str(v) for v in row] for row in rows]
    if not out.isatty():
        if headers:
            out.write("\t".join(headers) + "\n")
        for row in cells:
            out.write("\t".join(row) + "\n")
        return
    widths = [len(h) for h in headers]
    for row in cells:
        for i, v in enumerate(row):
            if i < len(widths):
                widths[i] = max(widths[i], len(v))
            else:
                widths.append(len(v))
    for row in ([list(headers)] if headers else []) + cells:
        out.write("  ".join(v.ljust(widths[i]) for i, v in enumerate(row)).rstrip() + "\n")


class Progress:
    """A one-line progress report on stderr (a terminal, or ``--progress``), at most every half second."""

    def __init__(self, enabled: bool, total: int | None = None, unit: str = "records") -> None:
        self.enabled = enabled
        self.total = total
        self.unit = unit
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, count: int, done_bytes: int | None = None, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        text = f"{count:,} {self.unit}"
        if self.total and done_bytes is not None:
            text += f" ({done_bytes / self.total:.0%} of {self.total:,} bytes)"
        elif self.total:
            text += f" of {self.total:,}"
        sys.stderr.write(("\r" + text + "   ") if self.tty else text + "\n")
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


def run_tool(name: str, fn: Any, args: argparse.Namespace) -> int:
    """Run a tool's body: a ToolError is one line and its code; Ctrl-C ends quietly with 130."""
    try:
        return int(fn(args) or 0)
    except ToolError as exc:
        for line in str(exc).splitlines() or [str(exc)]:
            sys.stderr.write(f"kafkalite {name}: error: {line}\n")
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:   # `kafkalite consume ... | head`
        # the interpreter flushes stdout at exit: point it at /dev/null so that flush cannot fail again
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until exit
        return 0
