"""Task queue and fetch of one process: instructions read from program memory, in order.

Fetch reads one instruction per cycle at the fetch PC while the queue, counting the head
and the word in flight, had room at the start of the cycle. A fetched word is in flight
for a cycle and joins the queue behind the head at the end of the next. The head is a
register of its own, loaded at the end of a cycle from the front of the queue behind it
(when the head was decoded, or there was none), never from the word arriving then; so a
word decodes three cycles after its fetch at the earliest. A redirect (jump, taken
branch, loop back) flushes the head, the queue and the word in flight and moves the
fetch PC; fetch resumes from the new PC in the next cycle.
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
        self.current: Fetched | None = None      # the head
        self.entries: deque[Fetched] = deque()   # queued behind the head
        self.in_flight: Fetched | None = None
        self.fetch_pc = 0
        self.redirected = False

    @property
    def exhausted(self) -> bool:
        """Nothing left to fetch or decode."""
        return self.current is None and not self.entries and self.in_flight is None and \
            self.fetch_pc >= len(self.program)

    @property
    def occupancy(self) -> int:
        """The head, the entries behind it and the word in flight: what fetch's room test counts."""
        return (self.current is not None) + len(self.entries) + (self.in_flight is not None)

    def head(self) -> Fetched | None:
        return self.current

    def pop(self) -> Fetched:
        popped, self.current = self.current, None
        return popped

    def redirect(self, pc: int):
        self.current = None
        self.entries.clear()
        self.in_flight = None
        self.fetch_pc = pc
        self.redirected = True

    def advance(self) -> bool:
        """End of the cycle, before ``fetch``: the front of the queue becomes the head if
        there is none (it was decoded, or there was none), then the word fetched last
        cycle joins the queue (unless a redirect dropped it). Whether anything moved."""
        moved = False
        if self.current is None and self.entries:
            self.current, moved = self.entries.popleft(), True
        if self.in_flight is not None:
            self.entries.append(self.in_flight)
            self.in_flight, moved = None, True
        return moved

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
