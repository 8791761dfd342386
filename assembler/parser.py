"""Pass 2: turn lines into statements (keyname plus eight fields) and collect labels.

A task needs all nine fields. A control instruction may leave out the last one,
metadata, which only accelerators read: the paper's own branch listing opens with
``mov 3 0 a 00 0 0 0001``, eight fields, and must assemble as printed.
"""

import re
from dataclasses import dataclass

from hts.base.errors import Location, SourceError, SourceErrors, shown
from hts.isa import CONTROL_KEYNAMES

from .lexer import SourceLine, Token

__all__ = ["FIELD_NAMES", "Statement", "ParsedProgram", "parse"]

# Source order of the fields after the keyname (the paper's assembly format).
FIELD_NAMES = ("a", "b", "c", "d", "task_id", "pid", "k", "metadata")
_FORMAT = "keyname A B C D taskid pid K metadata"

# A label may not read as a number or a register, or a field naming it would be ambiguous.
_NOT_A_LABEL = re.compile(r"([0-9a-fA-F]+|0[xX][0-9a-fA-F]+|0[dD][0-9]+|[rR][0-9]+)\Z")


@dataclass(frozen=True)
class Statement:
    pc: int                        # index of the instruction in the program
    location: Location             # the line it came from
    keyname: Token
    fields: dict[str, Token]       # FIELD_NAMES -> token


@dataclass(frozen=True)
class ParsedProgram:
    statements: tuple[Statement, ...]
    labels: dict[str, int]         # label -> pc of the instruction that follows it


def parse(lines: list[SourceLine]) -> ParsedProgram:
    statements, labels, errors = [], {}, []
    label_tokens: dict[str, Token] = {}
    for line in lines:
        for label in line.labels:
            if _NOT_A_LABEL.match(label.text):
                errors.append(SourceError(f"label '{shown(label.text)}' reads as a number or register; "
                                          "choose another name", label.location))
            elif label.text in labels:
                first = label_tokens[label.text].location
                errors.append(SourceError(f"duplicate label '{shown(label.text)}' (first defined at line "
                                          f"{first.line})", label.location))
            else:
                labels[label.text] = len(statements)
                label_tokens[label.text] = label
        if not line.tokens:
            continue
        keyname, *fields = line.tokens
        given, expected = len(line.tokens), 1 + len(FIELD_NAMES)
        if keyname.text in CONTROL_KEYNAMES and given == expected - 1:
            fields.append(Token("0", line.location))
        elif given != expected:
            allowed = f"{expected - 1} or {expected}" if keyname.text in CONTROL_KEYNAMES else str(expected)
            errors.append(SourceError(f"{given} fields were given and {allowed} are expected: {_FORMAT}",
                                      line.location))
            continue
        statements.append(Statement(len(statements), line.location, keyname,
                                    dict(zip(FIELD_NAMES, fields))))
    if errors:
        raise SourceErrors(errors)
    return ParsedProgram(tuple(statements), labels)

