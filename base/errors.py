"""Errors the user caused (a bad program, a bad configuration, a bad file).

Each carries where it happened, so the CLI prints ``file:line:col: message`` and exits
non-zero; anything else that escapes is a bug in the toolkit and shows its traceback.
"""

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Location", "HTSError", "SourceError", "SourceErrors", "ConfigError", "display_path"]


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None = None
    col: int | None = None
    word: int | None = None          # index of an instruction in an image (.bin has no lines)

    def __str__(self):
        if self.line is None and self.word is not None:
            return f"{self.file}: word {self.word}"
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)


class HTSError(Exception):
    """Base of every error caused by the user's input."""

    def __init__(self, message: str, location: Location | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self):
        return f"{self.location}: {self.message}" if self.location else self.message


class SourceError(HTSError):
    """An error in a program (assembly source, or an assembled .hex/.bin file)."""


class SourceErrors(SourceError):
    """Several errors found in one pass over a program; printed one per line, in order."""

    def __init__(self, errors: list[SourceError]):
        self.errors = sorted(errors, key=lambda e: (e.location.line or 0, e.location.col or 0))
        super().__init__("\n".join(str(e) for e in self.errors))

    def __str__(self):
        return self.message


class ConfigError(HTSError):
    """An error in a system configuration; ``key`` is the dotted path of the key at fault."""

    def __init__(self, key: str, message: str, location: Location | None = None):
        super().__init__(f"{key}: {message}" if key else message, location)
        self.key = key


def display_path(path: str | Path) -> str:
    """A path as the user should see it in a message: relative to cwd when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
