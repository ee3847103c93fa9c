"""``kafka-dump-log.sh``'s command line (jopt-simple style options) on top of ``dump_files``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from kafkalite_storage.dumplog.dumpers import dump_files

_USAGE = """\
This tool helps to parse a log file and dump its contents to the console, useful for debugging a seemingly \
corrupt log segment.
Option                                  Description
------                                  -----------
--deep-iteration                        If set, uses deep instead of shallow iteration. Automatically set if \
print-data-log is enabled.
--files <String: file1, file2, ...>     REQUIRED: The comma separated list of data and index log files to be \
dumped.
--help                                  Print usage information.
--index-sanity-check                    If set, just checks the index sanity without printing its content.
--key-decoder-class [String]            If set, used to deserialize the keys (org.apache.kafka.tools.api
                                          String/Integer/LongDecoder). (default: org.apache.kafka.tools.api.
                                          StringDecoder)
--max-bytes <Integer: size>             Limit the amount of total batches read in bytes (default: 2147483647).
--max-message-size <Integer: size>      Size of largest message. (default: 5242880)
--offsets-decoder                       If set, log data will be parsed as offset data from the
                                          __consumer_offsets topic.
--print-data-log                        If set, printing the messages content when dumping data logs.
--skip-record-metadata                  Whether to skip printing metadata for each record.
--transaction-log-decoder               If set, log data will be parsed as transaction metadata from the
                                          __transaction_state topic.
--value-decoder-class [String]          If set, used to deserialize the messages. (default: org.apache.kafka.
                                          tools.api.StringDecoder)
--verify-index-only                     If set, just verify the index log without printing its content.
"""

_FLAGS = {"--print-data-log": "print_data_log", "--deep-iteration": "deep_iteration",
          "--index-sanity-check": "index_sanity_check", "--verify-index-only": "verify_index_only",
          "--skip-record-metadata": "skip_record_metadata"}
_VALUED = {"--files": "files", "--max-message-size": "max_message_size", "--max-bytes": "max_bytes"}
_DECODERS = {"--offsets-decoder": "offsets", "--transaction-log-decoder": "transaction-log"}
_OPTIONAL_VALUED = {"--key-decoder-class": "key_decoder_class", "--value-decoder-class": "value_decoder_class"}


def _expand_abbreviation(opt: str) -> str:
    """jopt-simple accepts any unambiguous prefix of a long option (``--print`` for ``--print-data-log``)."""
    known = [*_FLAGS, *_VALUED, *_DECODERS, *_OPTIONAL_VALUED, "--help"]
    if not opt.startswith("--") or opt in known:
        return opt
    matches = [k for k in known if k.startswith(opt)]
    return matches[0] if len(matches) == 1 else opt


def main(argv: Sequence[str] | None = None) -> int:
    """``kafka-dump-log.sh`` flags: ``--files F[,F2]`` (required), ``--print-data-log``, ``--deep-iteration``,
    ``--index-sanity-check``, ``--verify-index-only``, ``--skip-record-metadata``, ``--max-message-size N``,
    ``--max-bytes N``. Output is written as UTF-8 like a JVM in a UTF-8 locale. Errors are one line each
    (``kafkalite dump-log: error: ...``): exit status 2 for a usage error, 1 when a file cannot be dumped."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:  # `kafkalite dump-log -- --files ...` (argparse REMAINDER keeps the separator)
        args = args[1:]
    flags: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        opt, eq, val = a.partition("=")
        opt = _expand_abbreviation(opt)
        a = opt if not eq else a
        if a in ("--help", "-h"):
            sys.stdout.write(_USAGE)
            return 0
        if a in _FLAGS:
            flags[_FLAGS[a]] = True
        elif a in _DECODERS:
            flags["decoder"] = _DECODERS[a]
        elif opt in _OPTIONAL_VALUED:  # jopt-simple withOptionalArg: the next word unless it is an option
            if not eq and i + 1 < len(args) and not args[i + 1].startswith("-"):
                i += 1
                val = args[i]
            flags[_OPTIONAL_VALUED[opt]] = val or "org.apache.kafka.tools.api.StringDecoder"
        elif opt in _VALUED:
            if not eq:
                i += 1
                if i >= len(args):
                    return _usage(f"{opt} needs a value")
                val = args[i]
            flags[_VALUED[opt]] = val
        else:
            return _usage(f"unrecognized option {a} (kafkalite dump-log --help lists the options)")
        i += 1
    if "files" not in flags:
        return _usage("--files is required: the comma-separated segment, index or snapshot files to dump")
    files = flags.pop("files").split(",")
    while files and files[-1] == "":  # Java's String.split drops trailing empty strings
        files.pop()
    for k in ("max_message_size", "max_bytes"):
        if k in flags:
            try:
                flags[k] = int(flags[k])
            except ValueError:
                return _usage(f"--{k.replace('_', '-')} {flags[k]!r}: expected a number of bytes")
    out = _utf8_text(sys.stdout)
    err = _utf8_text(sys.stderr)
    try:
        return dump_files(files, out=out, err=err, **flags)
    except BrokenPipeError:  # `| head`: a JVM's System.out swallows the error; stop quietly instead
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        for wrapped, orig in ((out, sys.stdout), (err, sys.stderr)):
            wrapped.flush()
            if wrapped is not orig:
                wrapped.detach()  # type: ignore[attr-defined]


def _usage(message: str) -> int:
    """A usage error: one line, exit status 2, as for every ``kafkalite`` command (Kafka's tool prints jopt-simple's
    message and its whole help, and exits 1)."""
    sys.stderr.write(f"kafkalite dump-log: error: {message}\n")
    return 2


def _utf8_text(stream: IO[str]) -> IO[str]:
    """The same stream's bytes as UTF-8 text (a JVM in a UTF-8 locale), whatever Python's locale says."""
    import io

    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        return stream
    stream.flush()
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="replace", newline="\n", write_through=True)


if __name__ == "__main__":
    raise SystemExit(main())


