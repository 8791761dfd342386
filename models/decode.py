"""Decode: one instruction per cycle, from the task queue of one process at a time.

Processes take turns (round robin from the one after the last decoded) among those whose
head can be decoded this cycle. Control instructions execute here, in program order,
on the process's GPRs and loop stack: ``mov``/``add``/``mul`` in one cycle, ``jump`` and
a loop back by redirecting fetch, ``lbeg`` with zero iterations by discarding
instructions up to the matching ``lend`` one per cycle, and ``if`` by handing it to the
branch unit (the process decodes nothing more until it resolves). A task reads its GPRs
(K bit 0), is checked against the memory tracker, takes a tracker entry and enters the
dispatch window; it needs room in both as of the start of the cycle.
"""

from dataclasses import dataclass, field

from hts.assembler import Program
from hts.config import SystemConfig
from hts.errors import Location

from .branch_unit import PendingBranch
from .gpr import GPRBank
from .loop_stack import LoopStack
from .task_queue import TaskQueue

__all__ = ["ProcessContext"]


@dataclass
class ProcessContext:
    """Everything the front end keeps per process."""
    pid: int
    program: Program
    queue: TaskQueue
    gprs: GPRBank
    loops: LoopStack
    branches: list[PendingBranch] = field(default_factory=list)   # unresolved, oldest first
    spec_mask: int = 0               # speculation IDs of its unresolved speculated branches
    skip_depth: int = 0              # > 0 while discarding a zero-iteration loop body
    resume_at: int = 0               # first cycle it may decode again after a branch
    done_at: int | None = None
    stall: dict[str, int] = field(default_factory=dict)

    @classmethod
    def create(cls, pid: int, program: Program, config: SystemConfig) -> "ProcessContext":
        return cls(pid, program, TaskQueue(program, config.hts.queue_depth), GPRBank(config.hts.gprs),
                   LoopStack(config.hts.loop_depth))

    def location(self, pc: int) -> Location:
        return Location(self.program.source, self.program.lines[pc])

    @property
    def blocked(self) -> bool:
        """Waiting on a branch it did not speculate."""
        return any(branch.spec_id is None for branch in self.branches)

    @property
    def drained(self) -> bool:
        return self.queue.exhausted and not self.branches and self.skip_depth == 0

    def count_stall(self, reason: str, cycles: int):
        self.stall[reason] = self.stall.get(reason, 0) + cycles
