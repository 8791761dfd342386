"""Task queue and fetch of one process: instructions read from program memory, in order.

Fetch reads one instruction per cycle at the fetch PC while the queue had room at the
start of the cycle. A redirect (jump, taken branch, loop back) flushes the queue and
moves the fetch PC; fetch resumes from the new PC in the next cycle.
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
        self.fetch_pc = 0
        self.redirected = False

    @property
    def exhausted(self) -> bool:
        """Nothing left to fetch or decode."""
        return not self.entries and self.fetch_pc >= len(self.program)

    def head(self) -> Fetched | None:
        return self.entries[0] if self.entries else None

    def pop(self) -> Fetched:
        return self.entries.popleft()

    def redirect(self, pc: int):
        self.entries.clear()
        self.fetch_pc = pc
        self.redirected = True

    def fetch(self, occupancy_at_start: int) -> bool:
        """One fetch attempt for this cycle; whether an instruction was fetched."""
        if self.redirected:
            self.redirected = False
            return False
        if occupancy_at_start >= self.depth or not 0 <= self.fetch_pc < len(self.program):
            return False
        self.entries.append(Fetched(self.fetch_pc, self.program.decoded[self.fetch_pc]))
        self.fetch_pc += 1
        return True
