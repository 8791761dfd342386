"""Branch unit: resolves ``if`` instructions that decode could not resolve at once.

Kinds (docs/isa.md): RR compares registers, resolved the cycle after decode (the
one-cycle bubble); MR reads the first word of a memory block, resolved
``timing.memory_latency`` cycles after decode; BR waits until every in-flight task that
writes the block has been broadcast on the CDB, then reads it like MR. The operands
that come from registers, and the physical block to read, are captured at decode.

A speculated MR or BR branch holds a speculation ID and a checkpoint of the process's
GPRs and loop stack; its process decodes on down the not-taken path meanwhile.
"""

from dataclasses import dataclass, field

from hts.isa import Word

from .loop_stack import LoopFrame

__all__ = ["PendingBranch", "Checkpoint"]


@dataclass(frozen=True)
class Checkpoint:
    """Front-end state to return to when a speculated branch turns out taken."""
    gprs: tuple[int, ...]
    loops: tuple[LoopFrame, ...]


@dataclass
class PendingBranch:
    pid: int
    pc: int
    word: Word
    kind: str                         # "RR", "MR" or "BR"
    y: int                            # R[B] at decode
    x: int | None = None              # R[A] at decode, for RR
    waits_for: set[int] = field(default_factory=set)   # BR: writers not yet broadcast
    resolves_at: int | None = None    # cycle of resolution, once known
    block: int = 0                    # MR/BR: physical block read (TM when remapped)
    mask: int = 0                     # speculation IDs it is itself under
    spec_id: int | None = None        # set when speculated (predicted not taken)
    checkpoint: Checkpoint | None = None

    @property
    def target(self) -> int:
        return self.pc + self.word.offset
