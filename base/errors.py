"""Errors the user caused (a bad program, a bad configuration, a bad file).

Each carries where it happened, so the CLI prints ``file:line:col: message`` and exits
non-zero; anything else that escapes is a bug in the toolkit and shows its traceback.

A message shows what the user wrote only through :func:`shown`: cut to a bounded length,
with control and other invisible characters escaped, so a NUL, a BOM or a terminal escape
in an input never reaches the terminal raw. An error's string form escapes them again, as
a safety net, keeping only the line breaks of messages that span several lines.
"""

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Location", "HTSError", "SourceError", "SourceErrors", "ConfigError", "display_path", "shown",
           "escaped", "SHOWN_CHARACTERS"]

#: Characters of a user's value a message shows before cutting it (its length is given).
SHOWN_CHARACTERS = 40

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escaped(text: str, keep: str = "") -> str:
    """``text`` with every character that is not printable (controls such as NUL and ESC, a
    BOM, other invisible format and separator characters) written as a Python escape;
    characters in ``keep`` (say a line break) stay as they are."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char in keep else _escape(char) for char in text)


def shown(text, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` (a token, a key, a value) as an error message may show it: escaped
    (:func:`escaped`), and cut after ``limit`` characters with its length given."""
    text = str(text)
    if len(text) <= limit:
        return escaped(text)
    return f"{escaped(text[:limit])}... ({len(text):,} characters)"


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None = None
    col: int | None = None
    word: int | None = None          # index of an instruction in an image (.bin has no lines)

    def __str__(self):
        if self.line is None and self.word is not None:
            return f"{escaped(self.file)}: word {self.word}"
        parts = [escaped(self.file)]
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
        # Escaped again, as a safety net for a value that reached the message without shown();
        # line breaks stay, for the messages that list several errors or a tool's log.
        message = escaped(self.message, keep="\n\t")
        return f"{self.location}: {message}" if self.location else message


class SourceError(HTSError):
    """An error in a program (assembly source, or an assembled .hex/.bin file)."""


class SourceErrors(SourceError):
    """Several errors found in one pass over a program; printed one per line, in order."""

    def __init__(self, errors: list[SourceError]):
        self.errors = sorted(errors, key=lambda e: (e.location.line or 0, e.location.col or 0))
        super().__init__("\n".join(str(e) for e in self.errors))

    def __str__(self):
        return escaped(self.message, keep="\n\t")


class ConfigError(HTSError):
    """An error in a system configuration; ``key`` is the dotted path of the key at fault."""

    def __init__(self, key: str, message: str, location: Location | None = None):
        super().__init__(f"{shown(key, 2 * SHOWN_CHARACTERS)}: {message}" if key else message, location)
        self.key = key


def display_path(path: str | Path) -> str:
    """A path as the user should see it in a message: relative to cwd when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
