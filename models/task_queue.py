"""Task queue and fetch of one process: instructions read from program memory, in order.

Fetch reads one instruction per cycle at the fetch PC while the queue, counting the word
in flight, had room at the start of the cycle. A fetched word is in flight for a cycle
and joins the queue at the end of the next, so it decodes two cycles after its fetch at
the earliest. A redirect (jump, taken branch, loop back) flushes the queue and the word
in flight and moves the fetch PC; fetch resumes from the new PC in the next cycle.
"""

from collections import deque
from dataclasses import dataclass

from hts.assembler import Program
from hts.isa import Word

__all__ = ["Fetched", "TaskQueue"]


@dataclass(frozen=True)
class Fetched:
    pc: int
    word: Word


class TaskQueue:
    def __init__(self, program: Program, depth: int):
        self.program = program
        self.depth = depth
        self.entries: deque[Fetched] = deque()
        self.in_flight: Fetched | None = None
        self.fetch_pc = 0
        self.redirected = False

    @property
    def exhausted(self) -> bool:
        """Nothing left to fetch or decode."""
        return not self.entries and self.in_flight is None and self.fetch_pc >= len(self.program)

    @property
    def occupancy(self) -> int:
        """Entries queued and in flight: what fetch's room test counts."""
        return len(self.entries) + (self.in_flight is not None)

    def head(self) -> Fetched | None:
        return self.entries[0] if self.entries else None

    def pop(self) -> Fetched:
        return self.entries.popleft()

    def redirect(self, pc: int):
        self.entries.clear()
        self.in_flight = None
        self.fetch_pc = pc
        self.redirected = True

    def arrive(self) -> bool:
        """The word fetched last cycle joins the queue (unless a redirect dropped it);
        whether one did. At the end of the cycle, before ``fetch``."""
        if self.in_flight is None:
            return False
        self.entries.append(self.in_flight)
        self.in_flight = None
        return True

    def fetch(self, occupancy_at_start: int) -> bool:
        """One fetch attempt for this cycle; whether an instruction was fetched."""
        if self.redirected:
            self.redirected = False
            return False
        if occupancy_at_start >= self.depth or not 0 <= self.fetch_pc < len(self.program):
            return False
        self.in_flight = Fetched(self.fetch_pc, self.program.decoded[self.fetch_pc])
        self.fetch_pc += 1
        return True
