"""General-purpose register bank of one process: ``hts.gprs`` registers of 32 bits."""

from hts.isa import REGISTER_BITS

__all__ = ["GPRBank"]

_MASK = (1 << REGISTER_BITS) - 1


class GPRBank:
    def __init__(self, count: int):
        self.values = [0] * count

    def __getitem__(self, index: int) -> int:
        return self.values[index]

    def __setitem__(self, index: int, value: int):
        self.values[index] = value & _MASK

    def snapshot(self) -> tuple[int, ...]:
        return tuple(self.values)

    def restore(self, values: tuple[int, ...]):
        self.values = list(values)
