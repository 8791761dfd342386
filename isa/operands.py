"""What each field of each instruction means: the operand roles.

The assembler checks fields by role (a register must exist, a region must fit in memory,
an offset may be a label), the models read operands by role, and the disassembler prints
them by role. Fields an instruction does not use are ``RESERVED``: carried, not checked.
"""

from amaranth.lib import enum

from .instruction import Word
from .opcodes import Opcode

__all__ = ["Role", "operand_roles", "OPERAND_FIELDS"]

# Fields that carry operands; task_id, pid, k and metadata have fixed meanings of their own.
OPERAND_FIELDS = ("a", "b", "c", "d")


class Role(enum.Enum):
    REGISTER = "register"   # index of a GPR
    BLOCK = "block"         # index of a memory block
    COUNT = "count"         # number of blocks (region size) or of loop iterations
    IMMEDIATE = "immediate" # a constant
    OFFSET = "offset"       # signed PC offset, relative to the instruction itself
    RESERVED = "reserved"   # unused by this instruction


_R, _B, _N, _I, _O, _X = Role.REGISTER, Role.BLOCK, Role.COUNT, Role.IMMEDIATE, Role.OFFSET, Role.RESERVED

# Roles of (a, b, c, d) per operation; a task and an if depend on their K bits as well.
_FIXED_ROLES = {
    Opcode.MOV:  (_I, _X, _R, _X),
    Opcode.ADD:  (_R, _R, _R, _X),
    Opcode.MUL:  (_R, _R, _R, _X),
    Opcode.JUMP: (_X, _X, _O, _X),
    Opcode.LBEG: (_N, _R, _X, _X),
    Opcode.LEND: (_X, _R, _X, _X),
}


def operand_roles(opcode: Opcode, k: int) -> dict[str, Role]:
    """Role of each of a, b, c, d for an instruction with this opcode and control field."""
    probe = Word(k=k)
    if opcode == Opcode.TASK:
        base = _R if probe.indirect else _B
        roles = (base, _N, base, _N)
    elif opcode == Opcode.IF:
        roles = (_B if probe.memory_branch else _R, _R, _O, _X)
    else:
        roles = _FIXED_ROLES[opcode]
    return dict(zip(OPERAND_FIELDS, roles))
