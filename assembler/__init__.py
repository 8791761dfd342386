"""Assembler and disassembler for HTS task programs.

Small pure passes, each in its own module: :func:`lex` -> :func:`parse` -> :func:`resolve`
(numbers, registers, labels) -> :func:`check` (against the configuration) -> encode.
Every error carries ``file:line:col``.
"""

from pathlib import Path

from hts.base.config import SystemConfig
from hts.base.errors import Location, SourceError, SourceErrors, display_path
from hts.base.files import PROGRAM_BYTES_PER_INSTRUCTION, PROGRAM_MIN_BYTES, program_limit, read_text

from .checker import check
from .disassembler import disassemble
from .image import IMAGE_SUFFIXES, read_image, write_image
from .lexer import lex
from .parser import parse
from .program import Program
from .resolver import resolve

__all__ = ["assemble", "assemble_file", "load_program", "load_image", "check_image", "source_limit", "disassemble",
           "read_image", "write_image", "Program", "IMAGE_SUFFIXES"]


def source_limit(config: SystemConfig) -> int:
    """Characters (and bytes of a file) a source or image may have: room for long comments on
    every instruction program memory holds, and a bound on the time and memory assembling it
    takes (:func:`hts.base.files.program_limit`)."""
    return program_limit(config.hts.program_words)


def _limit_reason(config: SystemConfig) -> str:
    return (f"{PROGRAM_BYTES_PER_INSTRUCTION} per instruction of program memory, hts.program_words = "
            f"{config.hts.program_words}, or {PROGRAM_MIN_BYTES:,} if that is more")


def _refuse_oversized(size: int, config: SystemConfig, where: Location):
    limit = source_limit(config)
    if size > limit:
        raise SourceError(f"source of {size:,} characters is longer than any program of "
                          f"{config.hts.program_words} instructions (hts.program_words) needs; the limit is "
                          f"{limit:,}", where)


def assemble(text: str, config: SystemConfig, filename: str = "<program>") -> Program:
    _refuse_oversized(len(text), config, Location(filename))
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
    text = read_text(path, source_limit(config), "source", _limit_reason(config))
    return assemble(text, config, display_path(path))


def load_image(path: str | Path, config: SystemConfig) -> Program:
    """An assembled image (.hex/.bin), read within the size a source may have, and checked
    as a source is."""
    return check_image(read_image(path, source_limit(config), _limit_reason(config)), config)


def load_program(path: str | Path, config: SystemConfig) -> Program:
    """A program from assembly source, or from an assembled image (.hex/.bin)."""
    if Path(path).suffix.lower() in IMAGE_SUFFIXES:
        return load_image(path, config)
    return assemble_file(path, config)


def check_image(image: Program, config: SystemConfig) -> Program:
    """``image`` if it passes every check a source passes, else the errors at its words.

    The image is disassembled and assembled again, so the assembler's own checks apply
    (registers, loop nesting, jump targets, regions, program size), and every word must
    come back as it was (no bits the assembly cannot express).
    """
    if len(image) > config.hts.program_words:
        raise SourceError(f"the image has {len(image)} instructions, more than program memory holds "
                          f"(hts.program_words = {config.hts.program_words})", image.location(config.hts.program_words))
    text = "\n".join(disassemble(image, config))        # its errors name the image's words already
    try:
        again = assemble(text, config, image.source)
    except SourceError as err:
        errors = getattr(err, "errors", [err])
        raise SourceErrors([SourceError(error.message, image.location(error.location.line - 1))
                            for error in errors]) from None
    for pc, (word, back) in enumerate(zip(image.words, again.words)):
        if word != back:
            raise SourceError(f"word {word:#034x} has bits no instruction uses (it assembles back as "
                              f"{back:#034x})", image.location(pc))
    return image
