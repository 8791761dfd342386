"""Accelerator status register: which instance of each class is busy, and with what.

An instance is busy from the cycle a task is dispatched to it until the cycle its
completion is broadcast on the CDB (the ASR learns of completion from the CDB).
"""

from dataclasses import dataclass

from .task import DecodedTask

__all__ = ["Running", "AcceleratorStatus"]


@dataclass
class Running:
    task: DecodedTask
    instance: int
    started: int           # the accelerator's first cycle: the cycle after the grant (``START_DELAY``)
    finishes: int          # when the scheduler learns it is done (takes its CDB ticket)
    computing: int         # cycles the accelerator computes (utilization counts these)


class AcceleratorStatus:
    def __init__(self, counts: list[int]):
        self.busy: list[list[Running | None]] = [[None] * count for count in counts]

    def free_instance(self, class_index: int) -> int | None:
        return next((i for i, slot in enumerate(self.busy[class_index]) if slot is None), None)

    def occupy(self, run: Running):
        self.busy[run.task.class_index][run.instance] = run

    def release(self, class_index: int, instance: int):
        self.busy[class_index][instance] = None

    def running(self):
        for slots in self.busy:
            yield from (run for run in slots if run is not None)
