"""Decode state: what the front end keeps for each process.

The decode stage itself (``HTSModel._decode`` in ``models/hts.py``, where it meets the
tracker, TLB and window) decodes one instruction per cycle for one process, picked round
robin. Control instructions execute there, in program order, on the state below:
``mov``/``add``/``mul`` in one cycle, ``jump`` and a loop back by redirecting fetch,
``lbeg`` with zero iterations by discarding the body one instruction per cycle, and
``if`` by handing it to the branch unit. An unspeculated branch stops its process until
it resolves; a speculated one leaves a checkpoint and the process goes on.
"""

from dataclasses import dataclass, field

from hts.assembler import Program
from hts.config import SystemConfig
from hts.errors import Location

from .branch_unit import PendingBranch
from .control import Fault
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
    mispredicted: PendingBranch | None = None   # resolved taken last cycle: it squashes this cycle
    spec_mask: int = 0               # speculation IDs of its unresolved speculated branches
    skip_depth: int = 0              # > 0 while discarding a zero-iteration loop body
    resume_at: int = 0               # first cycle it may decode again after a branch
    done_at: int | None = None
    fault: Fault | None = None       # it stopped there: it decodes nothing more, and ends once drained
    stall: dict[str, int] = field(default_factory=dict)

    @classmethod
    def create(cls, pid: int, program: Program, config: SystemConfig) -> "ProcessContext":
        return cls(pid, program, TaskQueue(program, config.hts.queue_depth), GPRBank(config.hts.gprs),
                   LoopStack(config.hts.loop_depth))

    def location(self, pc: int) -> Location:
        return self.program.location(pc)

    @property
    def blocked(self) -> bool:
        """Waiting on a branch it did not speculate."""
        return any(branch.spec_id is None for branch in self.branches)

    @property
    def drained(self) -> bool:
        if self.fault is not None:
            return True
        return self.queue.exhausted and not self.branches and self.mispredicted is None and self.skip_depth == 0

    def count_stall(self, reason: str, cycles: int):
        self.stall[reason] = self.stall.get(reason, 0) + cycles
