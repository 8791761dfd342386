"""Assembler and disassembler for HTS task programs.

Small pure passes, each in its own module: :func:`lex` -> :func:`parse` -> :func:`resolve`
(numbers, registers, labels) -> :func:`check` (against the configuration) -> encode.
Every error carries ``file:line:col``.
"""

from pathlib import Path

from hts.config import SystemConfig
from hts.errors import HTSError, Location, display_path

from .checker import check
from .disassembler import disassemble
from .image import IMAGE_SUFFIXES, read_image, write_image
from .lexer import lex
from .parser import parse
from .program import Program
from .resolver import resolve

__all__ = ["assemble", "assemble_file", "load_program", "disassemble", "read_image", "write_image",
           "Program", "IMAGE_SUFFIXES"]


def assemble(text: str, config: SystemConfig, filename: str = "<program>") -> Program:
    parsed = parse(lex(text, filename))
    resolved = resolve(parsed, config)
    check(resolved, config)
    return Program(
        words=tuple(item.word.encode() for item in resolved),
        source=filename,
        lines=tuple(item.statement.location.line for item in resolved),
        labels=dict(parsed.labels),
    )


def assemble_file(path: str | Path, config: SystemConfig) -> Program:
    shown = display_path(path)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise HTSError(f"cannot read: {getattr(err, 'strerror', None) or err}", Location(shown)) from None
    return assemble(text, config, shown)


def load_program(path: str | Path, config: SystemConfig) -> Program:
    """A program from assembly source, or from an assembled image (.hex/.bin)."""
    if Path(path).suffix.lower() in IMAGE_SUFFIXES:
        return read_image(path)
    return assemble_file(path, config)
