"""An assembled program: its instruction words and where each came from."""

from dataclasses import dataclass, field
from functools import cached_property

from hts.base.errors import Location
from hts.isa import Word

__all__ = ["Program"]


@dataclass(frozen=True)
class Program:
    words: tuple[int, ...]
    source: str = "<program>"
    # Source line of each word (assembly line, or line of the .hex file); traces cite them.
    lines: tuple[int | None, ...] = ()
    labels: dict[str, int] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not self.lines:
            object.__setattr__(self, "lines", (None,) * len(self.words))

    def __len__(self):
        return len(self.words)

    def location(self, pc: int) -> Location:
        """Where the word at ``pc`` came from: its source line, or its index in a .bin image."""
        line = self.lines[pc]
        return Location(self.source, line) if line is not None else Location(self.source, word=pc)

    @cached_property
    def decoded(self) -> tuple[Word, ...]:
        return tuple(Word.decode(word) for word in self.words)
