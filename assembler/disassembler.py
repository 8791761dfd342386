"""Program words back to assembly, in the paper's plain form (every field hex)."""

from hts.base.config import SystemConfig
from hts.base.errors import Location, SourceError
from hts.isa import CONTROL_KEYNAMES, Opcode

from .program import Program
from .resolver import format_number

__all__ = ["disassemble"]

_KEYNAME_OF_OPCODE = {op: name for name, op in CONTROL_KEYNAMES.items()}


def _keyname(accel_id: int, config: SystemConfig, location: Location, opcode) -> str:
    if opcode is None:
        raise SourceError(f"accelerator ID {accel_id:#04x} is reserved and names no instruction", location)
    if opcode != Opcode.TASK:
        return _KEYNAME_OF_OPCODE[opcode]
    accelerator = config.accelerator_by_id(accel_id)
    if accelerator is None:
        raise SourceError(f"accelerator ID {accel_id:#04x} is not in the configuration {config.source}",
                          location)
    return accelerator.name


def disassemble(program: Program, config: SystemConfig) -> list[str]:
    """One line of plain-form assembly per instruction word."""
    text = []
    for pc, word in enumerate(program.decoded):
        keyname = _keyname(word.accel_id, config, program.location(pc), word.opcode)
        fields = (word.a, word.b, word.c, word.d, word.task_id, word.pid, word.k)
        # metadata padded to four digits, as the paper prints it
        text.append(" ".join([keyname, *map(format_number, fields), format_number(word.metadata, 4)]))
    return text
