"""Every option of every ``kafkalite`` command says what it does in ``--help``; the commands are listed in a
newcomer's order; an option a command does not know is reported with that command's own usage."""
from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from kafkalite.cli import _RAW, COMMANDS, _build_parser, main


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(``kafkalite <command> [<operation>]``, its parser) for every command built on argparse."""
    top = _build_parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]

    def walk(prefix: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        yield prefix, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(f"{prefix} {name}", sub)

    for name, parser in commands.choices.items():
        if name not in _RAW:
            yield from walk(name, parser)


def test_every_option_of_every_command_has_help() -> None:
    missing = []
    seen = 0
    for where, parser in _parsers():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                # each operation's line in the command's --help
                helped = {a.dest for a in action._choices_actions if (a.help or "").strip()}
                missing += [f"{where} {name}" for name in action.choices if name not in helped]
                continue
            seen += 1
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")
    assert seen > 200     # every command was built (a parser that failed to build would show as few options)
    assert missing == [], f"options without help: {missing}"


def test_every_command_has_help_and_dump_log_documents_its_options() -> None:
    assert all(help_.strip() for _module, help_ in COMMANDS.values())
    from kafkalite_storage.dumplog import cli as dumplog

    options = [*dumplog._FLAGS, *dumplog._VALUED, *dumplog._DECODERS, *dumplog._OPTIONAL_VALUED, "--help"]
    for option in options:   # kafka-dump-log's own usage text: one described line per option
        (line,) = [ln for ln in dumplog._USAGE.splitlines() if ln.startswith(option + " ")]
        assert len(line.split(None, 1)) == 2 and len(line.split(None, 1)[1].strip()) > 10, line


def test_commands_in_a_newcomers_order() -> None:
    assert list(COMMANDS)[:5] == ["serve", "topics", "produce", "consume", "groups"]
    assert list(COMMANDS)[-1] == "dump-log"   # debugging the log files comes last


@pytest.mark.parametrize(("argv", "line"), [
    (["topics", "--lst"], "kafkalite topics: error: unrecognized arguments: --lst"),     # a required option missing too
    (["consume", "--bogus"], "kafkalite consume: error: unrecognized arguments: --bogus"),
    (["consume", "--topic", "t", "--from-begining"],
     "kafkalite consume: error: unrecognized arguments: --from-begining"),
    (["serve", "--data-dr", "x"], "kafkalite serve: error: unrecognized arguments: --data-dr x"),
])
def test_unknown_option_gets_the_commands_usage(argv: list[str], line: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: kafkalite {argv[0]} ")
    assert err.rstrip("\n").splitlines()[-1] == line


def test_abbreviations_still_work() -> None:
    """argparse's unique prefixes (``--from-beg``) are not unknown options."""
    parser = _build_parser("consume")
    args = parser.parse_args(["consume", "--topic", "t", "--from-beg"])
    assert args.from_beginning is True
