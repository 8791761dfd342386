"""Reservation station of one accelerator class: tasks waiting for their dependences.

Entries are kept in age order; the station offers its oldest task whose dependences
have all been broadcast (as of the start of the cycle) to the dispatch arbiter.
"""

from .window import DecodedTask

__all__ = ["ReservationStation"]


class ReservationStation:
    def __init__(self, entries: int):
        self.capacity = entries
        self.tasks: list[DecodedTask] = []

    def oldest_ready(self) -> DecodedTask | None:
        return next((task for task in self.tasks if not task.waits_for), None)

    def remove(self, task: DecodedTask):
        self.tasks.remove(task)
