"""Dispatch: the class lists' heads go to free accelerator instances, lowest class first.

Each class offers the head of its ready list when it has a free instance; the offers of
the ``dispatch_width`` lowest-numbered classes are granted. A dead head (its task
squashed) is dropped instead, in a cycle of its own. A granted task holds its instance
from the grant and starts the cycle after (``START_DELAY``), when the shell has its
regions. RTL: ``hdl/ready_lists.py`` (the lists) and ``hdl/dispatch.py`` (the arbiter).
"""

from hts.assembler import Program

from .asr import AcceleratorStatus, Running
from .ready_lists import ReadyLists
from .task import DecodedTask
from .timing import DeviceTiming

__all__ = ["Dispatch", "START_DELAY", "squash_queued"]

# Cycles from a dispatch grant to the accelerator's first cycle: the grant is registered,
# and the shell reads the task's regions by the registered tag (docs/microarchitecture.md,
# "Dispatch: the grant's cycle and the start cycle").
START_DELAY = 1


def squash_queued(queued: list[DecodedTask], bits: int) -> list[DecodedTask]:
    """Remove every queued task under a speculation ID of ``bits``, marking it squashed (a
    listed one stays in its list, dead); the tasks removed."""
    squashed = [task for task in queued if task.mask & bits]
    for task in squashed:
        task.squashed = True
        queued.remove(task)
    return squashed


class Dispatch:
    def __init__(self, width: int, classes: list, timing: DeviceTiming, interrupt_latency: int = 0,
                 start_delay: int = START_DELAY):
        """``interrupt_latency``: the software runtime learns of a completion that much later,
        and the instance waits idle meanwhile (0 for the hardware scheduler).
        ``start_delay``: cycles from a grant to the task's start (0 for the runtime, which
        starts a task as it dispatches it)."""
        self.width, self.classes, self.timing = width, classes, timing
        self.interrupt_latency, self.start_delay = interrupt_latency, start_delay

    def dispatch(self, t: int, lists: ReadyLists, asr: AcceleratorStatus, programs: list[Program]) -> list[Running]:
        """Grant the offers of the lowest-numbered classes free instances; the runs granted, in class order."""
        started = []
        for index, task, instance in self._offers(lists, asr)[: self.width]:
            latency = self.timing.cycles(self.classes[index], programs[task.pid].decoded[task.pc])
            start = t + self.start_delay
            run = Running(task, instance, start, start + latency + self.interrupt_latency, computing=latency)
            lists.pop(index)
            asr.occupy(run)
            started.append(run)
        return started

    @staticmethod
    def _offers(lists: ReadyLists, asr: AcceleratorStatus) -> list[tuple]:
        """(class, task, instance) of every class whose head is live and has a free instance,
        in class order. Dead heads are dropped."""
        return [(index, task, instance) for index, task in lists.live_heads()
                if (instance := asr.free_instance(index)) is not None]
