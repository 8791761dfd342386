"""Every subcommand keeps its options: the parser against tests/data/cli_options.json.

The file was written from the parser as it stood before the CLI was split into a module
per subcommand (plus ``hts examples``, added since). A change of an option, its default,
choices, metavar or arity fails here; to make one on purpose, change the file with it.
"""

import argparse
import json
from pathlib import Path

from hts.cli import build_parser

EXPECTED = Path(__file__).with_name("data") / "cli_options.json"


def _actions(parser: argparse.ArgumentParser) -> list[dict]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        default = action.default
        rows.append({"flags": list(action.option_strings) or [action.dest], "dest": action.dest,
                     "nargs": action.nargs, "choices": list(action.choices) if action.choices else None,
                     "default": default if isinstance(default, (int, float, str, bool, list, type(None)))
                     else repr(default),
                     "required": action.required, "metavar": action.metavar, "action": type(action).__name__})
    return rows


def option_table(parser: argparse.ArgumentParser) -> dict[str, list[dict]]:
    """Subcommand ("" for ``hts`` itself) -> its arguments, in the order --help lists them."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": _actions(parser), **{name: _actions(sub) for name, sub in subparsers.choices.items()}}


def test_every_subcommand_has_the_options_it_had():
    expected = json.loads(EXPECTED.read_text())
    actual = option_table(build_parser())
    assert sorted(actual) == sorted(expected)
    for command, options in expected.items():
        assert actual[command] == options, f"hts {command}"


def test_subcommands_are_listed_in_their_order():
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == ["asm", "disasm", "run", "compare", "scaling", "bench", "verilog", "synth",
                                        "prove", "cosim", "explore", "fuzz", "mutate", "config", "tools", "demo",
                                        "examples"]
