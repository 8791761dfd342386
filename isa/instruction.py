"""The 128-bit HTS instruction (Table I of the paper), defined once.

:class:`Instruction` is the Amaranth layout that the RTL decodes; :class:`Word` is the
same layout as a Python record that the assembler, the models and the testbenches use.
Both are derived from the one ``Instruction`` declaration below: :data:`FIELDS` reads
field offsets and widths out of it, so moving a field moves it everywhere.

Fields, LSB first::

    [7:0]    accel_id  accelerator class, or a reserved ID for a control instruction
    [23:8]   a         input region base block (or GPR, or immediate: see docs/isa.md)
    [31:24]  b         input region size in blocks (or GPR)
    [47:32]  c         output region base block (or GPR, or signed PC offset)
    [55:48]  d         output region size in blocks
    [59:56]  task_id   program-chosen tag, reported in traces
    [63:60]  pid       process ID
    [67:64]  k         control bits (TaskControl or BranchControl)
    [127:68] metadata  parameters passed through to the accelerator
"""

from dataclasses import dataclass, fields as dataclass_fields

from amaranth.lib import data

from .opcodes import Cond, Opcode, opcode_of

__all__ = [
    "TaskControl", "BranchControl", "Control", "Instruction", "FIELDS", "INSTRUCTION_BITS",
    "Word", "to_signed",
]


class TaskControl(data.Struct):
    """K of a ``task``: bit 0 set means A and C name GPRs holding the block addresses."""
    indirect: 1
    reserved: 3


class BranchControl(data.Struct):
    """K of an ``if``: condition, whether it may be speculated, and where X comes from.

    ``memory`` = 0: X = R[A] (register-read branch, resolved in place with two bubbles).
    ``memory`` = 1: X = first word of memory block A (memory-read branch, or bus-read
    when an in-flight task will write that block).
    """
    cond: Cond
    speculate: 1
    memory: 1


class Control(data.Union):
    """The 4-bit K field, viewed as the control of whichever instruction carries it."""
    task: TaskControl
    branch: BranchControl


class Instruction(data.Struct):
    """One 128-bit HTS instruction, Table I."""
    accel_id: 8
    a: 16
    b: 8
    c: 16
    d: 8
    task_id: 4
    pid: 4
    k: Control
    metadata: 60


INSTRUCTION_BITS = Instruction.as_shape().size

# (name, offset, width) of every field, LSB first, read from the layout above.
FIELDS = tuple((name, field.offset, field.width) for name, field in Instruction.as_shape())

assert INSTRUCTION_BITS == 128, "Table I defines a 128-bit instruction"


def to_signed(value: int, width: int) -> int:
    """Two's-complement reading of a ``width``-bit field."""
    sign = 1 << (width - 1)
    return (value & (sign - 1)) - (value & sign)


@dataclass(frozen=True)
class Word:
    """An instruction as field values; ``encode``/``decode`` convert to the 128-bit word."""
    accel_id: int = 0
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    task_id: int = 0
    pid: int = 0
    k: int = 0
    metadata: int = 0

    def __post_init__(self):
        for name, _, width in FIELDS:
            value = getattr(self, name)
            if not 0 <= value < (1 << width):
                raise ValueError(f"field {name} = {value:#x} does not fit in {width} bits")

    def encode(self) -> int:
        word = 0
        for name, offset, _ in FIELDS:
            word |= getattr(self, name) << offset
        return word

    @classmethod
    def decode(cls, word: int) -> "Word":
        if not 0 <= word < (1 << INSTRUCTION_BITS):
            raise ValueError(f"{word:#x} is not a {INSTRUCTION_BITS}-bit instruction word")
        return cls(**{name: (word >> offset) & ((1 << width) - 1) for name, offset, width in FIELDS})

    # Views used by every consumer, so that the meaning of a bit is written down once.

    @property
    def opcode(self) -> Opcode | None:
        return opcode_of(self.accel_id)

    @property
    def indirect(self) -> bool:
        """A task whose A and C name GPRs (K bit 0)."""
        return bool(self.k & 1)

    @property
    def cond(self) -> Cond:
        return Cond(self.k & 0b11)

    @property
    def speculate(self) -> bool:
        """An ``if`` that may be speculated not-taken (K bit 2)."""
        return bool(self.k & 0b100)

    @property
    def memory_branch(self) -> bool:
        """An ``if`` whose X is the first word of memory block A (K bit 3)."""
        return bool(self.k & 0b1000)

    @property
    def offset(self) -> int:
        """C as the signed PC offset of ``jump`` and ``if``."""
        return to_signed(self.c, 16)


assert tuple(f.name for f in dataclass_fields(Word)) == tuple(name for name, _, _ in FIELDS), \
    "Word must list the fields of Instruction in the same order"
