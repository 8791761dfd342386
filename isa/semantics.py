"""Arithmetic and branch semantics of the control instructions, shared by every model."""

from amaranth.lib import enum

from .opcodes import Cond, Opcode
from .instruction import to_signed

__all__ = ["REGISTER_BITS", "FaultCause", "alu", "branch_taken"]

REGISTER_BITS = 32


class FaultCause(enum.Enum, shape=3):
    """Why a process stopped at an instruction on its committed path (docs/isa.md, "Faults")."""
    NONE    = 0
    INPUT   = 1  # a task's input region leaves the process's window
    OUTPUT  = 2  # a task's output region leaves it
    BRANCH  = 3  # a memory branch's block lies outside it
    ILLEGAL = 4  # the word cannot execute (hardware only: software checks programs when it loads them)
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
