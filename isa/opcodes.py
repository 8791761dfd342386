"""Operations of the HTS task ISA and the accelerator IDs reserved for them.

An instruction's operation is carried in its accelerator-ID field (Table I, bits [7:0]):
IDs below :data:`FIRST_RESERVED_ACCEL_ID` name accelerator classes (a ``task``), the IDs
from there up name the scheduler's own instructions. Decode turns the ID into an
:class:`Opcode`, the small enum the rest of the scheduler switches on.
"""

from amaranth.lib import enum

__all__ = [
    "Opcode", "Cond", "FIRST_RESERVED_ACCEL_ID", "RESERVED_ACCEL_ID", "CONTROL_KEYNAMES",
    "RESERVED_KEYNAMES", "opcode_of",
]


class Opcode(enum.Enum, shape=3):
    """Decoded operation: what the decode stage tells the rest of the scheduler."""
    TASK = 0   # run on an accelerator: read blocks [A, A+B), write blocks [C, C+D)
    MOV  = 1   # R[C] = A
    ADD  = 2   # R[C] = R[A] + R[B]
    MUL  = 3   # R[C] = R[A] * R[B]
    JUMP = 4   # PC = PC + C
    IF   = 5   # if cond(X, R[B]) then PC = PC + C
    LBEG = 6   # loop of A iterations, counter R[B]
    LEND = 7   # end of the loop whose counter is R[B]


class Cond(enum.Enum, shape=2):
    """Branch condition in K[1:0] of an ``if``; operands compared as signed 32-bit."""
    EQ  = 0
    NEQ = 1
    GE  = 2
    LE  = 3


# The top of the 8-bit ID space is kept for the scheduler's own instructions so that
# accelerator classes can be numbered densely from 0; 0xFF stays unassigned (illegal).
FIRST_RESERVED_ACCEL_ID = 0xF8

RESERVED_ACCEL_ID = {
    Opcode.MOV:  0xF8,
    Opcode.ADD:  0xF9,
    Opcode.MUL:  0xFA,
    Opcode.JUMP: 0xFB,
    Opcode.IF:   0xFC,
    Opcode.LBEG: 0xFD,
    Opcode.LEND: 0xFE,
}

# Assembly keynames of the control instructions (the paper's spelling).
CONTROL_KEYNAMES = {op.name.lower(): op for op in RESERVED_ACCEL_ID}

# Keynames an accelerator class may not take: the control instructions and the generic
# word for an accelerator call.
RESERVED_KEYNAMES = frozenset(CONTROL_KEYNAMES) | {"task"}

_OPCODE_OF_RESERVED_ID = {accel_id: op for op, accel_id in RESERVED_ACCEL_ID.items()}


def opcode_of(accel_id: int) -> Opcode | None:
    """The operation an accelerator-ID field encodes; None for an illegal reserved ID."""
    if accel_id < FIRST_RESERVED_ACCEL_ID:
        return Opcode.TASK
    return _OPCODE_OF_RESERVED_ID.get(accel_id)
