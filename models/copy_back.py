"""Copy-back engine: sends resolved TLB entries home, by retarget or by copy.

Each cycle, independently: the TLB's retarget offer (its choice of the cycle before), if
any, is retargeted (its producer writes home; the top level rewrites the ranges at the end
of the cycle), and
one copy at a time moves a resolved entry's TM copy home over ``transfer_cycles``
cycles, started when ``wanted`` (the top level's call, as in ``hdl/hts.py``). The cycle
in which a copy finishes starts none. RTL: ``hdl/copy_back.py``.
"""

from dataclasses import dataclass

from hts.base.config import SystemConfig

from .asr import Running
from .memory import Memory
from .memory_tracker import MemoryTracker, Region
from .tlb import CopyBack, TaskLookupBuffer, TLBEntry
from .task import DecodedTask

__all__ = ["CopyBackEngine", "CopyBackStep", "transfer_cycles", "busy_regions", "retargeted", "retarget_task"]


def transfer_cycles(config: SystemConfig, blocks: int) -> int:
    """Cycles to move ``blocks`` over a memory port (copy-back, an accelerator's write-back)."""
    words = blocks * config.memory.block_words
    return max(1, -(-words // config.hts.copyback_words_per_cycle))


def retargeted(region, entry: TLBEntry | None):
    """``region`` after ``entry``'s retarget (if any): the TM copy becomes its home region."""
    return entry.home if entry is not None and region == (entry.tm_base, entry.home[1]) else region


def retarget_task(task: DecodedTask, entry: TLBEntry):
    """A retarget's effect on a task in flight."""
    task.reads, task.writes = retargeted(task.reads, entry), retargeted(task.writes, entry)


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
    retargetable: frozenset[int] = frozenset()   # producers retargetable next cycle (the RTL's
                                                 # ``retargetable_tags``, registered by the TLB)

    @property
    def progress(self) -> bool:
        return any(effect is not None for effect in (self.retargeted, self.started, self.finished, self.chosen))


class CopyBackEngine:
    def __init__(self, config: SystemConfig):
        self.config = config
        self.under_way: CopyBack | None = None
        # (cycle, the producers retargetable in the cycle after it), noted by ``step``.
        self._retargetable: tuple[int, frozenset[int]] | None = None

    def retarget(self, t: int, tlb: TaskLookupBuffer, tracker: MemoryTracker,
                 waiting: list[DecodedTask], running: list[Running]) -> TLBEntry | None:
        """This cycle's retarget and the TLB's choice of the next (``retarget_offer``), from
        the state at the start of the cycle: a retarget applies from the start of its cycle,
        so a producer granted on the CDB in it writes home.

        A producer is retargetable if at the end of the cycle before it was waiting (from
        the enqueue stage to dispatch), or computing without having started to write back,
        which it does over the last ``transfer_cycles(output)`` cycles of its latency. The
        hardware registers the test a cycle ahead, per TLB entry, so that neither the
        choice nor the retarget waits on the accelerators' write-back.
        ``waiting`` and ``running`` are the tasks at the start of the cycle.
        """
        tags = self._retargetable_now(t, waiting, running)
        return tlb.retarget_offer(busy_regions(tracker), tags, t)

    def step(self, t: int, tlb: TaskLookupBuffer, tracker: MemoryTracker, memory: Memory,
             waiting: list[DecodedTask], running: list[Running], wanted: bool,
             retargeted: TLBEntry | None = None) -> CopyBackStep:
        """After this cycle's squash and completions (``waiting``: the tasks not dispatched
        yet; ``running``: those computing): notes the producers retargetable next cycle, and
        starts or finishes a copy; a finishing copy writes ``memory`` now. ``retargeted`` is
        this cycle's retarget (:meth:`retarget`)."""
        next_tags = self._not_writing(t, waiting, running)
        self._retargetable = (t, next_tags)
        effects = {"retargeted": retargeted, "chosen": tlb.retarget_candidate, "retargetable": next_tags}
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

    def _retargetable_now(self, t: int, waiting: list[DecodedTask], running: list[Running]) -> frozenset[int]:
        if self._retargetable is not None and self._retargetable[0] == t - 1:
            return self._retargetable[1]
        # The cycle before was skipped: nothing changed in it, so its end is this start.
        return self._not_writing(t - 1, waiting, running)

    def _not_writing(self, t: int, waiting: list[DecodedTask], running: list[Running]) -> frozenset[int]:
        """The tasks waiting, and those granted that have not started writing back at ``t``:
        in their first cycle, or before the last ``transfer_cycles`` of their latency."""
        return frozenset({task.tag for task in waiting} | {
            run.task.tag for run in running
            if t <= run.started or run.finishes - t > transfer_cycles(self.config, run.task.writes[1])})

    def finish(self):
        """The end of the cycle in which the copy under way finished."""
        self.under_way = None
