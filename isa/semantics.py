"""Arithmetic and branch semantics of the control instructions, shared by every model."""

from .opcodes import Cond, Opcode
from .instruction import to_signed

__all__ = ["REGISTER_BITS", "alu", "branch_taken"]

REGISTER_BITS = 32
_MASK = (1 << REGISTER_BITS) - 1


def alu(opcode: Opcode, a: int, b: int) -> int:
    """Result of ``add``/``mul`` on two register values, modulo 2**32."""
    if opcode == Opcode.ADD:
        return (a + b) & _MASK
    if opcode == Opcode.MUL:
        return (a * b) & _MASK
    raise ValueError(f"{opcode} is not an ALU operation")


def branch_taken(cond: Cond, x: int, y: int) -> bool:
    """Whether an ``if`` with condition ``cond`` jumps; x and y compared as signed 32-bit."""
    x, y = to_signed(x & _MASK, REGISTER_BITS), to_signed(y & _MASK, REGISTER_BITS)
    return {Cond.EQ: x == y, Cond.NEQ: x != y, Cond.GE: x >= y, Cond.LE: x <= y}[cond]
