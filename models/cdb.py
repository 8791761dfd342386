"""Common data bus and its arbiter: completions broadcast in ticket order.

An instance that finishes takes a ticket; tickets taken in the same cycle are ordered by
(class, instance). Each cycle the arbiter grants the ``hts.cdb_width`` oldest tickets,
the finishing cycle's included, so an uncontended completion is broadcast in the cycle
the accelerator finishes.
"""

from collections import deque

from .asr import Running

__all__ = ["CommonDataBus"]


class CommonDataBus:
    def __init__(self, width: int):
        self.width = width
        self.tickets: deque[Running] = deque()

    def take_tickets(self, finished: list[Running]):
        self.tickets.extend(sorted(finished, key=lambda run: (run.task.class_index, run.instance)))

    def grant(self) -> list[Running]:
        return [self.tickets.popleft() for _ in range(min(self.width, len(self.tickets)))]
