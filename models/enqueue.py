"""Enqueue: the second decode stage, between decode and the queued tasks.

Decode (the first stage) plans a task against the TLB, allocates its tag and tracker
entry, and leaves it in this stage's one-entry register. From the next cycle this stage
searches the memory tracker for the task's dependences, a row a cycle, and queues the
task in the cycle of its last row. Splitting the two associative searches (TLB in
decode, tracker here) over two cycles keeps each cycle of the RTL to one search
(docs/microarchitecture.md).

While the task sits here it is in flight like any queued task: a squash removes it, a
confirm clears its mask, a retarget rewrites its ranges (``models/hts.py``).
"""

from .memory_tracker import MemoryTracker, Search
from .task import DecodedTask

__all__ = ["EnqueueStage"]


class EnqueueStage:
    """The register between decode and the queued tasks, and the tracker search made from it."""

    def __init__(self):
        self.task: DecodedTask | None = None
        self.search = Search()
        self.registered = 0      # producers found so far: what the task registered with

    def hold(self, task: DecodedTask):
        """Decode leaves ``task`` here at the end of the cycle (the stage is free: decode checked)."""
        assert self.task is None
        self.task, self.search, self.registered = task, Search(tag=task.tag), 0

    def remove(self) -> DecodedTask | None:
        task, self.task = self.task, None
        return task

    def step(self, tracker: MemoryTracker, broadcast: frozenset[int]) -> DecodedTask | None:
        """The task leaving the stage this cycle, queued, with the tags it waits for, or None.

        The tracker holds every task decoded before this one, and this one (decode
        allocated its entry when it left it here), but none decoded after it: the search
        leaves out the task's own tag and the tags being broadcast now. What the row found
        is ``search.row_found``: the producers the task registers with in this cycle.
        """
        self.search.row_found = set()
        if self.task is None:
            return None
        tracker.search_dependences(self.search, self.task.reads, self.task.writes, ignoring=broadcast | {self.task.tag})
        self.registered += len(self.search.row_found)
        if self.search.row < tracker.rows:
            return None
        task = self.remove()
        task.waits_for = set(self.search.found)     # its own set: the search is the stage's
        return task

    def searching_next_cycle(self, tracker: MemoryTracker) -> bool:
        """At the start of a cycle: the search will still be under way in the next one."""
        return self.task is not None and self.search.row < tracker.rows - 1
