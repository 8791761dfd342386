"""Program images on disk: ``.hex`` (one 32-hex-digit word per line, for ``$readmemh``)
and ``.bin`` (16 bytes per instruction, little-endian), chosen by the file's suffix.

Writes are atomic: the image appears whole under its name or not at all.
"""

from pathlib import Path

from hts.base.config import MAX_PROGRAM_WORDS
from hts.base.errors import HTSError, Location, SourceError, display_path
from hts.base.errors import shown as cut
from hts.base.files import program_limit, read_bytes
from hts.base.output import atomic_path
from hts.isa import INSTRUCTION_BITS

from .lexer import split_lines
from .program import Program

__all__ = ["IMAGE_SUFFIXES", "write_image", "read_image", "image_bytes"]

IMAGE_SUFFIXES = (".hex", ".bin")
_BYTES = INSTRUCTION_BITS // 8
_HEX_DIGITS = INSTRUCTION_BITS // 4


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise HTSError(f"cannot tell the image format from the suffix '{cut(path.suffix)}' "
                       f"(use {' or '.join(IMAGE_SUFFIXES)})", Location(display_path(path)))
    return suffix


def image_bytes(words: tuple[int, ...] | list[int], suffix: str) -> bytes:
    if suffix == ".hex":
        return "".join(f"{word:0{_HEX_DIGITS}x}\n" for word in words).encode()
    return b"".join(word.to_bytes(_BYTES, "little") for word in words)


def write_image(path: str | Path, program: Program):
    path = Path(path)
    data = image_bytes(program.words, _suffix(path))
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def read_image(path: str | Path, limit: int = program_limit(MAX_PROGRAM_WORDS), why: str = "") -> Program:
    """The words of an image, read no further than ``limit`` bytes (by default the most any
    configuration's program memory needs); unchecked (:func:`hts.assembler.load_image`
    checks them against a configuration)."""
    path = Path(path)
    suffix = _suffix(path)
    shown = display_path(path)
    data = read_bytes(path, limit, "image", why)
    if suffix == ".bin":
        if len(data) % _BYTES:
            raise SourceError(f"{len(data)} bytes is not a whole number of {_BYTES}-byte instructions",
                              Location(shown))
        words = tuple(int.from_bytes(data[i:i + _BYTES], "little") for i in range(0, len(data), _BYTES))
        return Program(words, shown)
    words, lines = [], []
    for number, line in enumerate(split_lines(data.decode("ascii", errors="replace")), start=1):
        text = line.split("//", 1)[0].strip()
        if not text:
            continue
        if len(text) > _HEX_DIGITS or any(ch not in "0123456789abcdefABCDEF" for ch in text):
            raise SourceError(f"'{cut(text, 2 * _HEX_DIGITS)}' is not a {INSTRUCTION_BITS}-bit hex word",
                              Location(shown, number, 1))
        words.append(int(text, 16))
        lines.append(number)
    return Program(tuple(words), shown, tuple(lines))
