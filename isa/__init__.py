"""The HTS task ISA: the 128-bit instruction layout, its operations and control bits.

Defined once here and used by the assembler, the models, the HDL and the testbenches.
The semantics of every instruction are written down in docs/isa.md.
"""

from .instruction import (
    FIELDS, INSTRUCTION_BITS, BranchControl, Control, Instruction, TaskControl, Word, to_signed,
)
from .opcodes import (
    CONTROL_KEYNAMES, FIRST_RESERVED_ACCEL_ID, RESERVED_ACCEL_ID, RESERVED_KEYNAMES, Cond, Opcode,
    opcode_of,
)
from .operands import OPERAND_FIELDS, Role, operand_roles
from .semantics import REGISTER_BITS, FaultCause, alu, branch_taken
