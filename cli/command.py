"""A subcommand of ``hts``: its name, its help, the arguments it adds and the code that runs it."""

import argparse
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Command"]


@dataclass(frozen=True)
class Command:
    """One ``hts`` subcommand, declared beside the function that runs it.

    Parameters
    ----------
    name : str
        The subcommand (``hts NAME``).
    help : str
        One line for ``hts --help``.
    description : str
        The paragraph of ``hts NAME --help``.
    add_arguments : callable
        Adds the subcommand's own arguments to its parser.
    run : callable
        Runs it on the parsed arguments; returns the exit status.
    """

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]

    def register(self, subparsers) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(self.name, help=self.help, description=self.description)
        self.add_arguments(parser)
        parser.set_defaults(run=self.run)
        return parser
