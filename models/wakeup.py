"""Wake-up: pending-producer counts and successor lists, walked one successor a cycle.

A task waiting for others keeps only a count of them; each producer keeps, in a list of
``hts.successor_slots`` slots indexed by its tag, the tags of the tasks waiting for it.
The enqueue stage registers a task with the producers each row of its tracker search
found, in two steps: the row's finds are *staged* at the end of its cycle, less the
producers released at that edge, and at the end of the next the task joins the staged
producers' lists and its count grows by as many (keeping the search's comparators and
the counts' adders in different cycles). A released producer (broadcast or squashed) has
its list walked: one successor a cycle, the walker reading a slot in one cycle and
decrementing that successor's count at the end of the next. A count reaching zero (and
staying zero: no staged join adds to it) wakes its task.

A tag stays unallocatable while it is *held*: its list not yet walked, or its count not
yet zero (a squashed task still named in a producer's list). So a slot never names a tag
that was reused, and no count underflows.

Walks go round robin over the released producers, starting after the last one walked.
"""

__all__ = ["WakeUp", "WAKE_DELAY"]

# Cycles from a producer's release to its first successor's wake: the walker reads the
# list's first slot the cycle after the release and decrements at the end of the next.
WAKE_DELAY = 2


class WakeUp:
    """The counts, the lists and the walker; ``end_of_cycle`` is one cycle of them."""

    def __init__(self, tags: int, slots: int):
        self.slots = slots
        self.pending = [0] * tags                          # producers a tag waits for
        self.successors: list[list[int]] = [[] for _ in range(tags)]
        self.to_walk: set[int] = set()                     # released, list not walked yet
        self.walking: int | None = None                    # the producer whose list is read
        self.position = 0                                  # its next slot
        self.reading: int | None = None                    # successor read last cycle
        self.last_walked = tags - 1
        self.staged: tuple[int, frozenset[int]] | None = None     # waiter, producers: joined next edge

    def successors_full(self, tracked) -> bool:
        """Decode's rule: a list of a ``tracked`` producer, with the staged append, has
        fewer than two free slots (the enqueue stage's task and decode's may each add one)."""
        staged = self.staged[1] if self.staged else frozenset()
        return any(len(self.successors[tag]) + (tag in staged) >= self.slots - 1 for tag in tracked)

    def waits(self, tag: int) -> bool:
        """``tag`` waits for a producer: its count is not zero, or it has staged producers."""
        return bool(self.pending[tag]) or self.staged is not None and self.staged[0] == tag

    def held(self) -> set[int]:
        """Tags that may not be allocated, though their tracker entry is free."""
        held = {tag for tag, count in enumerate(self.pending) if count} | self.to_walk
        return held if self.walking is None else held | {self.walking}

    def busy(self) -> bool:
        return (self.walking is not None or self.reading is not None or bool(self.to_walk)
                or self.staged is not None)

    def end_of_cycle(self, waiter: int | None, producers: set[int], released: set[int]) -> int | None:
        """The cycle's effects, landing at its end: the successor read last cycle loses one,
        the staged waiter joins its producers' lists (the caller checked their room),
        ``waiter`` and its ``producers`` less the ``released`` ones are staged, the next slot
        is read, and the ``released`` producers with successors wait for the walker.
        The tag whose count the decrement took from one to zero, if it stays zero."""
        woken = self._decrement()
        self._join_staged()
        if woken is not None and self.pending[woken]:
            woken = None
        staying = frozenset(producers - released)
        self.staged = (waiter, staying) if waiter is not None and staying else None
        self._read()
        self.to_walk |= {tag for tag in released if self.successors[tag]}
        return woken

    def _join_staged(self):
        if self.staged is None:
            return
        waiter, producers = self.staged
        for producer in sorted(producers):
            self.successors[producer].append(waiter)
        self.pending[waiter] += len(producers)

    def _decrement(self) -> int | None:
        successor, self.reading = self.reading, None
        if successor is None:
            return None
        self.pending[successor] -= 1
        assert self.pending[successor] >= 0, "a pending count underflowed"
        return None if self.pending[successor] else successor

    def _read(self):
        """Read the next slot of the list being walked, or of the next released producer."""
        if self.walking is None and self.to_walk:
            self.walking, self.position = self._next_producer(), 0
            self.to_walk.discard(self.walking)
        if self.walking is not None:
            successors = self.successors[self.walking]
            self.reading = successors[self.position]
            self.position += 1
            if self.position == len(successors):
                successors.clear()
                self.last_walked, self.walking = self.walking, None

    def _next_producer(self) -> int:
        tags = len(self.pending)
        return min(self.to_walk, key=lambda tag: (tag - self.last_walked - 1) % tags)
