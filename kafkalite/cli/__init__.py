"""Command line: ``kafkalite <command> ...``.

Commands are one table, :data:`COMMANDS`: name -> (module, one-line help). A command module has
``configure(parser)`` (adds its options to an ``argparse`` parser) and ``run(args) -> int`` (the exit code).
Only the module of the command being run is imported, so ``kafkalite serve`` pays nothing for the tools (which
need confluent-kafka) and a tool pays nothing for the broker. Adding a command is one line in the table.

Exit codes, for every command: 0 success, 1 the operation failed (one ``kafkalite <cmd>: error: ...`` line on
stderr), 2 a usage error (argparse's own message, or ours in the same form).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

if TYPE_CHECKING:
    from kafkalite.cli.serve import config_from_args

__all__ = ["COMMANDS", "config_from_args", "main"]


def __getattr__(name: str) -> Any:
    if name == "config_from_args":   # re-exported for tests that build configs from argv
        # lazy attribute: importing kafkalite.cli (every command does) must not load the broker's config and storage
        from kafkalite.cli.serve import config_from_args

        return config_from_args
    raise AttributeError(f"module 'kafkalite.cli' has no attribute {name!r}")

# name -> (module with configure(parser) and run(args), help line). ``dump-log`` forwards its arguments as
# they are to kafkalite_storage.dumplog (argparse would claim its option-like arguments such as --files).
COMMANDS: dict[str, tuple[str, str]] = {
    # the broker first, then the tools in the order a newcomer meets them: make a topic, write to it, read it,
    # see the group that read it; then settings, security, operations and debugging
    "serve": ("kafkalite.cli.serve", "run the broker"),
    "topics": ("kafkalite.tools.topics", "list, describe, create, delete topics, add partitions (kafka-topics)"),
    "produce": ("kafkalite.tools.produce", "write lines from stdin or a file to a topic (kafka-console-producer)"),
    "consume": ("kafkalite.tools.consume", "print records of a topic (kafka-console-consumer)"),
    "groups": ("kafkalite.tools.groups", "list, describe (lag), reset offsets of, delete consumer groups "
                                         "(kafka-consumer-groups)"),
    "configs": ("kafkalite.tools.configs", "describe and alter topic, broker and group configs, users' SCRAM "
                                           "credentials (kafka-configs)"),
    "schemas": ("kafkalite.tools.schemas", "list, get, register, check, delete schemas; set compatibility and "
                                           "mode (a Confluent-compatible schema registry's REST API)"),
    "acls": ("kafkalite.tools.acls", "add, remove, list ACLs (kafka-acls)"),
    "scram": ("kafkalite.tools.scram", "describe, set, delete users' SCRAM credentials (kafka-configs --entity-type users)"),
    "certs": ("kafkalite.cli.certs", "write a dev CA and broker/client TLS certificates"),
    "health": ("kafkalite.tools.health", "exit 0 if the local broker is up (/health with metrics on, else its "
                                         "listener); for container health checks"),
    "fault": ("kafkalite.cli.fault", "inject errors, latency, drops, pauses; cluster operations (serve --control)"),
    "migrate": ("kafkalite.cli.migrate", "move topics, records, committed offsets, ACLs, SCRAM users and quotas "
                                         "into an Apache Kafka cluster, online and resumably"),
    "eject": ("kafkalite.eject.command", "copy a stopped broker's data dir into one Apache Kafka 4.4 starts on "
                                         "(topics, offsets, groups, ACLs, users)"),
    "dump-log": ("kafkalite_storage.dumplog", "print segment/index contents (like kafka-dump-log.sh)"),
}
_RAW = {"dump-log"}


class _CommandParser(argparse.ArgumentParser):
    """A command's parser. An option it does not know is the error it reports (with the command's usage), even
    when argparse would first complain about a required option the unknown one was probably meant to be
    (``kafkalite topics --lst``: "unrecognized arguments: --lst", not "one of --list ... is required")."""

    argv: Sequence[str] = ()   # the command's own arguments, set by main() on the command's parser only

    def _known(self, arg: str) -> bool:
        opt = arg.split("=", 1)[0]
        if opt in self._option_string_actions:
            return True
        return self.allow_abbrev and sum(o.startswith(opt) for o in self._option_string_actions) == 1

    def error(self, message: str) -> NoReturn:
        if self.argv and not message.startswith("unrecognized arguments") and not self._subparsers:
            unknown = [a for a in self.argv if a.startswith("--") and a != "--" and not self._known(a)]
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}"
        super().error(message)


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (or of ``only``, which alone is imported)."""
    parser = argparse.ArgumentParser(prog="kafkalite", description="A Kafka-compatible broker and its tools")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser)
    for name, (module, help_) in COMMANDS.items():
        if only is not None and name != only:
            continue
        if name in _RAW:
            p = sub.add_parser(name, help=help_, add_help=False)
            p.add_argument("args", nargs=argparse.REMAINDER)
            continue
        p = sub.add_parser(name, help=help_, description=help_)
        importlib.import_module(module).configure(p)
    return parser


def _command_parser(parser: argparse.ArgumentParser, name: str) -> _CommandParser:
    commands: Any = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    return cast(_CommandParser, commands[name])


def _overview() -> argparse.ArgumentParser:
    """``kafkalite --help`` / a bad command: every command's help line, without importing any of them."""
    parser = argparse.ArgumentParser(prog="kafkalite", description="A Kafka-compatible broker and its tools")
    parser.add_argument("-V", "--version", action="store_true", help="print kafkalite's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_module, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_)
    return parser


def version() -> str:
    """The installed distribution's version (pyproject's ``version``): read from the ``METADATA`` of the one
    ``kafkalite-*.dist-info`` the installer wrote next to this package (a wheel install), else through
    ``importlib.metadata``, whose import alone (email, zipfile, csv, ...) was twice the rest of ``--version``."""
    import os

    site = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with contextlib.suppress(OSError):
        infos = [n for n in os.listdir(site) if n.startswith("kafkalite-") and n.endswith(".dist-info")]
        if len(infos) == 1:
            with open(os.path.join(site, infos[0], "METADATA"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():   # the end of the headers
                        break
    from importlib.metadata import PackageNotFoundError  # lazy: an editable install or a source tree only
    from importlib.metadata import version as dist_version

    try:
        return dist_version("kafkalite")
    except PackageNotFoundError:   # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv else None
    if name in ("--version", "-V"):
        sys.stdout.write(f"kafkalite {version()}\n")
        return 0
    if name in _RAW:
        mod = importlib.import_module(COMMANDS[name][0])
        return int(mod.main(argv[1:]) or 0)
    if name not in COMMANDS:
        _overview().parse_args(argv)   # prints help (exit 0) or the usage error (exit 2)
        return 2
    if name == "serve":
        return _serve(argv)
    parser = _build_parser(name)
    command = _command_parser(parser, name)
    command.argv = argv[1:]
    args, extra = parser.parse_known_args(argv)
    if extra:   # the command's own usage line, not the top-level one
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return int(importlib.import_module(COMMANDS[name][0]).run(args) or 0)


def _serve(argv: list[str]) -> int:
    """``kafkalite serve``: no garbage collection until the broker is ready (kafkalite.cli.serve turns it back on
    then): a start allocates a few hundred thousand objects that all live on (modules, classes, the config),
    and CPython's collector would walk them again and again, some 5-10 % of the start, to find no garbage."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        # serve only: trio without the `ldconfig -p` subprocess its import runs (kafkalite.runtime.trio_import)
        from kafkalite.runtime.trio_import import import_trio

        import_trio()
        parser = _build_parser("serve")
        command = _command_parser(parser, "serve")
        command.argv = argv[1:]
        args, extra = parser.parse_known_args(argv)
        if extra:
            command.error(f"unrecognized arguments: {' '.join(extra)}")
        return int(importlib.import_module(COMMANDS["serve"][0]).run(args) or 0)
    finally:
        if enabled:
            gc.enable()


if __name__ == "__main__":
    sys.exit(main())
