"""Pass 1: split source text into lines of tokens, with labels and comments taken off.

A line is ``[label:] [keyname field ...] [; comment | # comment]``. Every token keeps its
column so that later passes can point at it.
"""

import re
from dataclasses import dataclass

from hts.base.errors import Location, SourceError, shown

__all__ = ["Token", "SourceLine", "lex", "split_lines"]

_LABEL = re.compile(r"\s*([A-Za-z_.][A-Za-z0-9_.]*)\s*:")
_TOKEN = re.compile(r"\S+")
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Token:
    text: str
    location: Location


@dataclass(frozen=True)
class SourceLine:
    location: Location           # the line (column 1)
    labels: tuple[Token, ...]    # labels defined on this line
    tokens: tuple[Token, ...]    # keyname and fields; empty for a label-only or blank line


def _strip_comment(text: str) -> str:
    cut = min((i for i in (text.find(";"), text.find("#")) if i >= 0), default=len(text))
    return text[:cut]


def split_lines(text: str) -> list[str]:
    """Lines ended by LF, CR LF or CR only: unlike ``str.splitlines``, a form feed or a
    Unicode line separator inside a comment does not end the comment."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def lex(text: str, filename: str) -> list[SourceLine]:
    lines = []
    for number, raw in enumerate(split_lines(text), start=1):
        body = _strip_comment(raw)
        labels, pos = [], 0
        while match := _LABEL.match(body, pos):
            labels.append(Token(match.group(1), Location(filename, number, match.start(1) + 1)))
            pos = match.end()
        tokens = tuple(Token(m.group(), Location(filename, number, m.start() + 1))
                       for m in _TOKEN.finditer(body, pos))
        for token in tokens:
            if token.text.endswith(":"):
                raise SourceError(f"label '{shown(token.text[:-1])}' must start its line", token.location)
        lines.append(SourceLine(Location(filename, number, 1), tuple(labels), tokens))
    return lines
