"""Assembler and disassembler for HTS task programs.

Small pure passes, each in its own module: :func:`lex` -> :func:`parse` -> :func:`resolve`
(numbers, registers, labels) -> :func:`check` (against the configuration) -> encode.
Every error carries ``file:line:col``.
"""

from pathlib import Path

from hts.base.config import SystemConfig
from hts.base.errors import HTSError, Location, SourceError, SourceErrors, display_path

from .checker import check
from .disassembler import disassemble
from .image import IMAGE_SUFFIXES, read_image, write_image
from .lexer import lex
from .parser import parse
from .program import Program
from .resolver import resolve

__all__ = ["assemble", "assemble_file", "load_program", "check_image", "source_limit", "disassemble", "read_image", "write_image",
           "Program", "IMAGE_SUFFIXES"]


def source_limit(config: SystemConfig) -> int:
    """Characters a source may have: room for long comments on every instruction program
    memory holds, and a bound on the time and memory assembling it takes."""
    return max(1 << 20, 512 * config.hts.program_words)


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
    shown = display_path(path)
    try:
        _refuse_oversized(Path(path).stat().st_size, config, Location(shown))
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise HTSError(f"cannot read: {getattr(err, 'strerror', None) or err}", Location(shown)) from None
    return assemble(text, config, shown)


def load_program(path: str | Path, config: SystemConfig) -> Program:
    """A program from assembly source, or from an assembled image (.hex/.bin)."""
    if Path(path).suffix.lower() in IMAGE_SUFFIXES:
        _refuse_oversized_image(path, config)
        return check_image(read_image(path), config)
    return assemble_file(path, config)


def _refuse_oversized_image(path: str | Path, config: SystemConfig):
    """Refuse, before reading it, an image larger than a source may be."""
    shown = display_path(path)
    try:
        size = Path(path).stat().st_size
    except OSError as err:
        raise HTSError(f"cannot read: {err.strerror}", Location(shown)) from None
    limit = source_limit(config)
    if size > limit:
        raise SourceError(f"image of {size:,} bytes is larger than any program of {config.hts.program_words} "
                          f"instructions (hts.program_words) needs; the limit is {limit:,}", Location(shown))


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
