"""Ready lists: per accelerator class, its ready tasks in the order they became ready.

A task leaving the enqueue stage waits in the tracker (the queued set, ``models/hts.py``)
and joins its class's list as it becomes ready: at the edge of the cycle it leaves the
enqueue stage if it waits for nothing, else at the edge of the cycle the wake-up reaches
it. In one edge the woken task comes first, then the one leaving the enqueue stage (whose
readiness the RTL learns late in the cycle: it joins its ring from a register at the next
edge, offered meanwhile when its list is otherwise empty). Dispatch reads each list's
head at the start of the cycle.

A squash does not search the lists. A squashed task's entry stays, dead, and its tag is
held (not reallocated) while it is listed; dispatch drops a dead head in a cycle of its
own. RTL: ``hdl/ready_lists.py``, each list a ring of tags in two banks of distributed RAM.
"""

from collections import deque

from .task import DecodedTask

__all__ = ["ReadyLists", "ring_entries"]


def ring_entries(tags: int) -> int:
    """Slots of each class's ring: room for every tag, in two banks of equal depth."""
    return tags + tags % 2


class ReadyLists:
    def __init__(self, classes: int, tags: int):
        self.ring = ring_entries(tags)
        self.lists: list[deque[DecodedTask]] = [deque() for _ in range(classes)]
        self.popped = [0] * classes        # entries ever dropped or taken: the head's ring slot
        self.dropped = 0                    # dead heads ever dropped

    def append(self, task: DecodedTask):
        """``task`` became ready (end of cycle)."""
        entries = self.lists[task.class_index]
        assert len(entries) < self.ring, "a ready list overflows: a tag is listed twice"
        entries.append(task)

    def head(self, class_index: int) -> DecodedTask | None:
        entries = self.lists[class_index]
        return entries[0] if entries else None

    def live_heads(self) -> list[tuple[int, DecodedTask]]:
        """(class, head) of each list whose head is live, in class order. A dead head is
        dropped (counted in ``dropped``): its list offers nothing this cycle."""
        heads = []
        for index, entries in enumerate(self.lists):
            if entries and entries[0].squashed:
                self.pop(index)
                self.dropped += 1
            elif entries:
                heads.append((index, entries[0]))
        return heads

    def pop(self, class_index: int) -> DecodedTask:
        self.popped[class_index] += 1
        return self.lists[class_index].popleft()

    def held(self) -> set[int]:
        """The tags listed: none is reallocated before its entry leaves (a live one is in flight anyway)."""
        return {task.tag for entries in self.lists for task in entries}

    def wraps(self, class_index: int) -> bool:
        """Whether the class's entries run across the end of its ring."""
        entries = self.lists[class_index]
        return bool(entries) and self.popped[class_index] % self.ring + len(entries) > self.ring
