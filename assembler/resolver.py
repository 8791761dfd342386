"""Pass 3: give every field its value: numbers, register names and labels, by operand role.

Numbers are hex as in the paper (``1f``); ``0x1f`` is hex too and ``0d31`` decimal. A
register field also takes ``rN`` (N decimal). An offset field (``jump``/``if`` C) also
takes a label or a negative number. Each value is checked against its field's width.
"""

import re
from dataclasses import dataclass

from hts.base.config import SystemConfig
from hts.base.errors import SourceError, SourceErrors, shown
from hts.isa import CONTROL_KEYNAMES, FIELDS, RESERVED_ACCEL_ID, Opcode, Role, Word, operand_roles

from .lexer import Token
from .parser import ParsedProgram, Statement

__all__ = ["Resolved", "resolve", "parse_number", "format_number"]

_WIDTH = {name: width for name, _, width in FIELDS}
_HEX = re.compile(r"(?:0[xX])?([0-9a-fA-F]+)\Z")
_DECIMAL = re.compile(r"0[dD]([0-9]+)\Z")
_REGISTER = re.compile(r"[rR]([0-9]+)\Z")
_LABEL = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*\Z")

# How messages describe what a field holds.
_HOLDS = {Role.REGISTER: "a register", Role.BLOCK: "a block index", Role.COUNT: "a count",
          Role.IMMEDIATE: "a number", Role.OFFSET: "a PC offset", Role.RESERVED: "a reserved field"}

# How the source names each field in messages.
FIELD_TITLE = {"a": "A", "b": "B", "c": "C", "d": "D", "task_id": "taskid", "pid": "pid",
               "k": "K", "metadata": "metadata"}


@dataclass(frozen=True)
class Resolved:
    statement: Statement
    word: Word
    opcode: Opcode
    roles: dict[str, Role]


# A token longer than this is no number a field can hold (the widest is 64 bits), however
# many leading zeros it has: refused before ``int()`` reads thousands of digits.
_LONGEST_NUMBER = 64


def parse_number(text: str) -> int | None:
    """Value of an unsigned number token (hex, 0x hex, 0d decimal); None if not a number."""
    if match := _DECIMAL.match(text):
        return int(match.group(1), 10)
    if match := _HEX.match(text):
        return int(match.group(1), 16)
    return None


def format_number(value: int, min_digits: int = 1) -> str:
    """Plain-form hex that :func:`parse_number` reads back as ``value``.

    Zero-padding never produces a leading ``0d``, which would read as decimal.
    """
    text = f"{value:0{min_digits}x}"
    return text.lstrip("0") or "0" if text.startswith("0d") else text


def _opcode_and_id(keyname: Token, config: SystemConfig) -> tuple[Opcode, int]:
    if keyname.text in CONTROL_KEYNAMES:
        opcode = CONTROL_KEYNAMES[keyname.text]
        return opcode, RESERVED_ACCEL_ID[opcode]
    accelerator = config.accelerator(keyname.text)
    if accelerator is None:
        known = ", ".join(acc.name for acc in config.accelerators)
        raise SourceError(f"unknown keyname '{shown(keyname.text)}' (accelerators of {config.source}: {known}; "
                          f"instructions: {', '.join(CONTROL_KEYNAMES)})", keyname.location)
    return Opcode.TASK, accelerator.id


def _field_value(name: str, token: Token, role: Role, statement: Statement, labels: dict[str, int],
                 config: SystemConfig) -> int:
    text, where = token.text, f"field {FIELD_TITLE[name]} of {shown(statement.keyname.text)}"
    if match := _REGISTER.match(text):
        if role != Role.REGISTER:
            hint = " (set K bit 0 to make A and C registers)" if statement.keyname.text not in CONTROL_KEYNAMES \
                and name in ("a", "c") else ""
            raise SourceError(f"'{shown(text)}' names a register, but {where} holds {_HOLDS[role]}{hint}",
                              token.location)
        digits = match.group(1)
        # A register beyond the field's width, or written with thousands of digits, does not
        # exist either: said here, before the word is built (the checker names the others).
        if len(digits) > _LONGEST_NUMBER or int(digits, 10) >= 1 << _WIDTH[name]:
            raise SourceError(f"register r{shown(digits)} does not exist (hts.gprs = {config.hts.gprs})",
                              token.location)
        return int(digits, 10)
    negative = text.startswith("-")
    if len(text) > _LONGEST_NUMBER:
        raise SourceError(f"'{shown(text)}' is too long for {where}", token.location)
    value = parse_number(text[1:] if negative else text)
    if value is None:
        if role == Role.OFFSET and _LABEL.match(text):
            if text not in labels:
                raise SourceError(f"undefined label '{shown(text)}'", token.location)
            return _label_offset(labels[text] - statement.pc, _WIDTH[name], shown(text), token)
        raise SourceError(f"'{shown(text)}' is not a number (hex, 0x.. hex or 0d.. decimal)"
                          + (" or a label" if role == Role.OFFSET else ""), token.location)
    width = _WIDTH[name]
    if negative:
        if role != Role.OFFSET:
            raise SourceError(f"{where} cannot be negative", token.location)
        if value > 1 << (width - 1):
            raise SourceError(f"offset -{value:#x} does not fit in {width} signed bits", token.location)
        return -value & ((1 << width) - 1)
    if value >= 1 << width:
        raise SourceError(f"{where} = {value:#x} does not fit in {width} bits", token.location)
    return value


def _label_offset(distance: int, width: int, label: str, token: Token) -> int:
    """The field holding ``distance`` (target - pc), refused when it does not fit."""
    reach = 1 << (width - 1)
    if not -reach <= distance < reach:
        raise SourceError(f"label '{label}' is {distance:+d} instructions away; a PC offset reaches "
                          f"{-reach}..{reach - 1}; jump through an intermediate label", token.location)
    return distance & ((1 << width) - 1)


def _resolve_statement(statement: Statement, labels: dict[str, int], config: SystemConfig) -> Resolved:
    opcode, accel_id = _opcode_and_id(statement.keyname, config)
    k = _field_value("k", statement.fields["k"], Role.IMMEDIATE, statement, labels, config)
    roles = operand_roles(opcode, k)
    values = {name: _field_value(name, token, roles.get(name, Role.IMMEDIATE), statement, labels, config)
              for name, token in statement.fields.items()}
    return Resolved(statement, Word(accel_id=accel_id, **values), opcode, roles)


def resolve(parsed: ParsedProgram, config: SystemConfig) -> list[Resolved]:
    resolved, errors = [], []
    for statement in parsed.statements:
        try:
            resolved.append(_resolve_statement(statement, parsed.labels, config))
        except SourceError as err:
            errors.append(err)
    if errors:
        raise SourceErrors(errors)
    return resolved
