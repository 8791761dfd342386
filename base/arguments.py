"""Command-line arguments that take a free-form value say, once, whether it names a file.

An argument added with :func:`add_argument` carries its :class:`Role`; :func:`declared_files`
reads the roles back from a parsed command line, so one check
(:func:`hts.base.output.check_files`) sees every input and output of a command before it
starts. ``tests/test_arguments.py`` walks every parser and fails on a free-form argument
declared neither way, so an option added later cannot escape the check.
"""

import argparse
import enum
from dataclasses import dataclass, field

from .config import PRESETS

__all__ = ["Role", "Files", "add_argument", "role_of", "declared_files"]


class Role(enum.Enum):
    INPUT = "a file the command reads"
    CONFIGURATION = "a preset's name, or a configuration file the command reads"
    INPUT_DIRECTORY = "a folder the command reads"
    OUTPUT = "a file the command writes"
    OUTPUT_DIRECTORY = "a folder the command writes into"
    NO_FILE = "a value that names no file"


@dataclass
class Files:
    """The files a command line names, by what the command does with them."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    output_directories: list[str] = field(default_factory=list)

    def __add__(self, other: "Files") -> "Files":
        return Files(self.inputs + other.inputs, self.outputs + other.outputs,
                     self.output_directories + other.output_directories)


def add_argument(parser: argparse.ArgumentParser, role: Role, *flags, **kwargs) -> argparse.Action:
    """``parser.add_argument(*flags, **kwargs)``, marked with what its value names."""
    action = parser.add_argument(*flags, **kwargs)
    action.names = role
    return action


def role_of(action: argparse.Action) -> Role | None:
    return getattr(action, "names", None)


def _values(args: argparse.Namespace, action: argparse.Action) -> list[str]:
    value = getattr(args, action.dest, None)
    values = value if isinstance(value, list) else [value]
    return [str(item) for item in values if item is not None]


def declared_files(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Files:
    files = Files()
    for action in parser._actions:
        role, values = role_of(action), _values(args, action)
        if role in (Role.INPUT, Role.INPUT_DIRECTORY):
            files.inputs += values
        elif role is Role.CONFIGURATION:
            files.inputs += [value for value in values if value not in PRESETS]
        elif role is Role.OUTPUT:
            files.outputs += values
        elif role is Role.OUTPUT_DIRECTORY:
            files.output_directories += values
    return files

