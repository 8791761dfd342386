"""A read-only view of one model cycle, for observers such as functional coverage.

:class:`HTSModel` (``models/hts.py``) takes an optional ``observer``, called once per
simulated cycle with a :class:`CycleView`. The view holds what the trace does not: the
occupancy of the structures at the start of the cycle, the decode stall of each
process, whether the copy-back engine was busy, and the instruction decode consumed.
It is made of plain values, so an observer can keep it without seeing later cycles
change it. Cycles the model skips (nothing changes in them) are not observed: their
state is the state of the last simulated cycle.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from hts.isa import Opcode

__all__ = ["Occupancy", "DecodedInstruction", "CycleView", "SEARCH_CORNERS", "WAKEUP_CORNERS", "LIST_CORNERS"]

# What can happen to a tracker search of several rows, one row a cycle.
SEARCH_CORNERS = {
    "squashed": "a squash removes a task or memory branch whose search is past its first row",
    "released": "a tag an earlier row of a search found is released before the search ends",
    "branch": "a memory branch searches the tracker over several rows",
}

# What the wake-up's walker can meet.
WAKEUP_CORNERS = {
    "queued": "a released producer's list waits while the walker reads another one",
    "squashed_waiter": "the walker takes a squashed task's count to zero: its tag is free again",
}

# What the ready lists can meet.
LIST_CORNERS = {
    "dead_head": "dispatch drops a squashed task from the head of its class's ready list",
    "wrap": "a class's ready list runs across the end of its ring",
    "two_joins": "one edge appends the task leaving enqueue and a woken task to one class's list",
}


@dataclass(frozen=True)
class Occupancy:
    """How full each structure is, with its capacity alongside."""
    tracker: int                   # tags in flight
    tracker_capacity: int
    tlb: int                       # TLB entries valid
    tlb_capacity: int
    tm_used: int                   # TM blocks handed out by the bump allocator
    tm_capacity: int


@dataclass(frozen=True)
class DecodedInstruction:
    """The instruction decode consumed in a cycle, as the process stood when it did."""
    pid: int
    pc: int
    opcode: Opcode
    speculative: bool              # decoded under an unresolved speculated branch
    discarding: bool               # after it, the process discards a zero-iteration loop body


@dataclass(frozen=True)
class CycleView:
    cycle: int
    start: Occupancy               # registered state at the start of the cycle
    copying: bool                  # a copy-back was in progress at the start of the cycle
    stalls: Mapping[int, str]      # pid -> why it decoded nothing this cycle (models/hts.py, stall reasons)
    decoded: DecodedInstruction | None
    searches: frozenset[str] = frozenset()   # corners of tracker searches met this cycle (SEARCH_CORNERS)
    wakeups: frozenset[str] = frozenset()    # corners of the wake-up met this cycle (WAKEUP_CORNERS)
    lists: frozenset[str] = frozenset()      # corners of the ready lists met this cycle (LIST_CORNERS)

    def __post_init__(self):
        object.__setattr__(self, "stalls", MappingProxyType(dict(self.stalls)))
