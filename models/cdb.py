"""Common data bus and its arbiter: completions granted in ticket order, broadcast a cycle later.

An instance that finishes takes a ticket; tickets taken in the same cycle are ordered by
(class, instance). Each cycle the arbiter grants the ``hts.cdb_width`` oldest tickets,
the finishing cycle's included, so an uncontended completion is granted in the cycle
the accelerator finishes. A granted task is broadcast the next cycle: its tag and its
instance are released at the end of that cycle (docs/microarchitecture.md, "One
cycle"). A squash in the grant's cycle releases the tag of a granted task it hits
itself, so the broadcast leaves that tag out.
"""

from collections import deque

from .asr import Running

__all__ = ["CommonDataBus"]


class CommonDataBus:
    def __init__(self, width: int):
        self.width = width
        self.tickets: deque[Running] = deque()
        self.broadcasting: list[Running] = []        # granted last cycle: broadcast now
        self.broadcast_tags: frozenset[int] = frozenset()   # their tags, less the squashed
        self._granted: list[Running] = []            # granted now: broadcast next cycle
        self._squashed: set[int] = set()             # tags of this cycle's grants a squash released

    def take_tickets(self, finished: list[Running]):
        self.tickets.extend(sorted(finished, key=lambda run: (run.task.class_index, run.instance)))

    def grant(self) -> list[Running]:
        self._granted = [self.tickets.popleft() for _ in range(min(self.width, len(self.tickets)))]
        return self._granted

    def squash_granted(self, spec_bit: int) -> list[int]:
        """A squash now: the tags of the tasks granted now under ``spec_bit``, which leave
        with the squash's at the end of this cycle and are not broadcast."""
        tags = [run.task.tag for run in self._granted if run.task.mask & spec_bit]
        self._squashed.update(tags)
        return tags

    def advance(self):
        """End of the cycle: this cycle's grants are broadcast in the next."""
        self.broadcasting = self._granted
        self.broadcast_tags = frozenset(run.task.tag for run in self._granted if run.task.tag not in self._squashed)
        self._granted, self._squashed = [], set()
