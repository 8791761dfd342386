"""Reservation station of one accelerator class: tasks waiting for their dependences.

Entries are kept in age order, and the ready ones also in the order they became ready
in the station (arriving ready, or woken while here; in one cycle the arrivals first, in
issue order, then a task woken). The station offers the first of those to the dispatch
arbiter: a task whose wake-up came late does not pass one that was ready before it.
"""

from .window import DecodedTask

__all__ = ["ReservationStation"]


class ReservationStation:
    def __init__(self, entries: int):
        self.capacity = entries
        self.tasks: list[DecodedTask] = []
        self.ready: list[DecodedTask] = []

    def arrive(self, task: DecodedTask):
        self.tasks.append(task)
        if task.ready:
            self.ready.append(task)

    def wake(self, task: DecodedTask):
        task.ready = True
        self.ready.append(task)

    def first_ready(self) -> DecodedTask | None:
        return self.ready[0] if self.ready else None

    def remove(self, task: DecodedTask):
        self.tasks.remove(task)
        if task in self.ready:
            self.ready.remove(task)
