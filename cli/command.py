"""A subcommand of ``hts``: its name, its help, the arguments it adds and the code that runs it."""

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from hts.base.arguments import Files, declared_files

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
        Adds the subcommand's own arguments to its parser, each file argument with its
        :class:`~hts.base.arguments.Role`.
    run : callable
        Runs it on the parsed arguments; returns the exit status.
    more_files : callable, optional
        The files a command line names without an argument of its own: an output named
        after an input, the programs a sweep file lists.
    """

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    more_files: Callable[[argparse.Namespace], Files] | None = None

    def register(self, subparsers) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(self.name, help=self.help, description=self.description)
        self.add_arguments(parser)
        parser.set_defaults(run=self.run, files=lambda args: self.files(parser, args))
        return parser

    def files(self, parser: argparse.ArgumentParser, args: argparse.Namespace) -> Files:
        """Every file this command line reads or writes."""
        more = self.more_files(args) if self.more_files else Files()
        return declared_files(parser, args) + more
