"""Branch unit: resolves ``if`` instructions that decode could not resolve at once.

Kinds (docs/isa.md): RR compares registers, resolved the cycle after decode (the
one-cycle bubble); MR reads the first word of a memory block, resolved
``timing.memory_latency`` cycles after decode; BR waits until every in-flight task that
writes the block has been broadcast on the CDB, then reads it like MR. The operands
that come from registers are captured at decode.
"""

from dataclasses import dataclass, field

from hts.isa import Word

__all__ = ["PendingBranch"]


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
