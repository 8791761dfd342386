"""Branch unit: resolves ``if`` instructions that decode could not resolve at once.

Kinds (docs/isa.md): RR compares registers, resolved the cycle after decode (the
one-cycle bubble). A memory branch's physical block is translated at decode; the next
cycle the branch unit searches the memory tracker for the block's writers (a cycle of
its own, so that decode does one associative search). With none it is MR: it reads the
first word of the block, resolved ``timing.memory_latency`` cycles after that search.
Otherwise it is BR: it waits until every writer has been broadcast on the CDB, then
reads the block like MR. The operands that come from registers are captured at decode.

A speculated MR or BR branch holds a speculation ID and a checkpoint of the process's
GPRs and loop stack; its process decodes on down the not-taken path meanwhile.
"""

from dataclasses import dataclass, field

from hts.isa import Word

from .loop_stack import LoopFrame
from .memory_tracker import MemoryTracker

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
    kind: str                         # "RR", "MR" or "BR" (a memory branch is "MR" until searched)
    y: int                            # R[B] at decode
    x: int | None = None              # R[A] at decode, for RR
    waits_for: set[int] = field(default_factory=set)   # BR: writers not yet broadcast
    resolves_at: int | None = None    # cycle of resolution, once known
    block: int = 0                    # MR/BR: physical block read (TM when remapped)
    searched: bool = True             # a memory branch's writers are searched the cycle after decode
    mask: int = 0                     # speculation IDs it is itself under
    spec_id: int | None = None        # set when speculated (predicted not taken)
    checkpoint: Checkpoint | None = None

    @property
    def target(self) -> int:
        return self.pc + self.word.offset

    def search(self, tracker: MemoryTracker, broadcast: frozenset[int], t: int, latency: int):
        """The cycle after decode: the block's writers in flight make the branch BR, none MR.

        The tracker then holds every task decoded before the branch and none after it
        (decode handles one instruction per cycle); the tags broadcast now are left out.
        """
        writers = tracker.writers_of(self.block, ignoring=broadcast)
        if writers:
            self.kind, self.waits_for = "BR", set(writers)
        else:
            self.kind, self.resolves_at = "MR", t + latency
        self.searched = True
