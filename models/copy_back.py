"""Copy-back engine: sends resolved TLB entries home, by retarget or by copy.

Each cycle, independently: the TLB's retarget offer (its choice of the cycle before), if
any, is retargeted (its producer writes home; the top level rewrites the ranges at the end
of the cycle), and
one copy at a time moves a resolved entry's TM copy home over ``transfer_cycles``
cycles, started when ``wanted`` (the top level's call, as in ``hdl/hts.py``). The cycle
in which a copy finishes starts none. RTL: ``hdl/copy_back.py``.
"""

from dataclasses import dataclass

from hts.config import SystemConfig

from .asr import Running
from .memory import Memory
from .memory_tracker import MemoryTracker, Region
from .tlb import CopyBack, TaskLookupBuffer, TLBEntry
from .window import DecodedTask

__all__ = ["CopyBackEngine", "CopyBackStep", "transfer_cycles", "busy_regions", "retarget_task"]


def transfer_cycles(config: SystemConfig, blocks: int) -> int:
    """Cycles to move ``blocks`` over a memory port (copy-back, an accelerator's write-back)."""
    words = blocks * config.memory.block_words
    return max(1, -(-words // config.hts.copyback_words_per_cycle))


def retarget_task(task: DecodedTask, entry: TLBEntry):
    """A retarget's effect on a task in flight: the entry's TM copy becomes its home region."""
    tm = (entry.tm_base, entry.home[1])
    task.reads, task.writes = (entry.home if region == tm else region for region in (task.reads, task.writes))


def busy_regions(tracker: MemoryTracker) -> list[tuple[int, Region]]:
    """(tag, region) of every access in flight."""
    return [(tag, region) for tag, entry in enumerate(tracker.entries) if entry is not None
            for region in (entry.reads, entry.writes)]


@dataclass(frozen=True)
class CopyBackStep:
    """What the engine did in one cycle; the TLB and the ranges change at the end of it."""
    retargeted: TLBEntry | None = None     # its producer writes home instead
    started: CopyBack | None = None
    finished: TLBEntry | None = None       # copied home: it leaves the TLB
    chosen: TLBEntry | None = None         # the TLB's retarget choice for the next cycle

    @property
    def progress(self) -> bool:
        return any(effect is not None for effect in (self.retargeted, self.started, self.finished, self.chosen))


class CopyBackEngine:
    def __init__(self, config: SystemConfig):
        self.config = config
        self.under_way: CopyBack | None = None

    def step(self, t: int, tlb: TaskLookupBuffer, tracker: MemoryTracker, memory: Memory,
             waiting: list[DecodedTask], running: list[Running], wanted: bool) -> CopyBackStep:
        """``waiting``: the tasks not dispatched yet; ``running``: those computing. A finishing
        copy writes ``memory`` now."""
        retargeted = self._retarget(t, tlb, tracker, waiting, running)
        effects = {"retargeted": retargeted, "chosen": tlb.retarget_candidate}
        if self.under_way is not None:
            if self.under_way.finishes != t:
                return CopyBackStep(**effects)
            entry = self.under_way.entry
            memory.write(entry.home[0], entry.home[1], memory.read(entry.tm_base, entry.home[1]))
            return CopyBackStep(**effects, finished=entry)
        if not wanted:
            return CopyBackStep(**effects)
        entry = tlb.copyable([region for _, region in busy_regions(tracker)])
        if entry is None:
            return CopyBackStep(**effects)
        self.under_way = CopyBack(entry, t, t + transfer_cycles(self.config, entry.home[1]))
        return CopyBackStep(**effects, started=self.under_way)

    def _retarget(self, t: int, tlb: TaskLookupBuffer, tracker: MemoryTracker,
                  waiting: list[DecodedTask], running: list[Running]) -> TLBEntry | None:
        """A resolved entry whose producer has not started writing it, to send home for free
        (the TLB's choice of the cycle before: ``TaskLookupBuffer.retarget_offer``).

        A producer can be retargeted until its accelerator starts writing back, which it
        does over the last ``transfer_cycles(output)`` cycles of its latency.
        """
        not_writing = {task.tag for task in waiting} | {
            run.task.tag for run in running if run.finishes - t > transfer_cycles(self.config, run.task.writes[1])}
        return tlb.retarget_offer(busy_regions(tracker), not_writing, t)

    def finish(self):
        """The end of the cycle in which the copy under way finished."""
        self.under_way = None
