"""Memory tracker: the regions every in-flight task reads and writes, searched as ranges.

One entry per task from decode until its completion is broadcast on the CDB; the entry
index is the task's tag. A new task depends on every entry it overlaps: RAW (its input
meets an older output), WAR (its output meets an older input) and WAW (outputs meet).
Any overlap counts, not only equal bases. In hardware each entry holds two range
comparators per direction; the search is one CAM look-up.
"""

from dataclasses import dataclass

__all__ = ["Region", "TrackerEntry", "MemoryTracker", "overlaps"]

Region = tuple[int, int]  # (base block, blocks)


def overlaps(a: Region, b: Region) -> bool:
    return a[1] > 0 and b[1] > 0 and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


@dataclass(frozen=True)
class TrackerEntry:
    pid: int
    reads: Region
    writes: Region


class MemoryTracker:
    def __init__(self, entries: int):
        self.entries: list[TrackerEntry | None] = [None] * entries

    def occupancy(self) -> int:
        return sum(entry is not None for entry in self.entries)

    def dependences(self, reads: Region, writes: Region, ignoring: frozenset[int]) -> frozenset[int]:
        """Tags of in-flight tasks a new task must wait for (``ignoring`` those completing now)."""
        return frozenset(
            tag for tag, entry in enumerate(self.entries)
            if entry is not None and tag not in ignoring and (
                overlaps(reads, entry.writes) or overlaps(writes, entry.reads) or overlaps(writes, entry.writes)))

    def writers_of(self, block: int, ignoring: frozenset[int]) -> frozenset[int]:
        """Tags of in-flight tasks that write ``block`` (a bus-read branch waits for them)."""
        return frozenset(tag for tag, entry in enumerate(self.entries)
                         if entry is not None and tag not in ignoring and overlaps((block, 1), entry.writes))

    def free_tag(self) -> int:
        """Lowest free tag; the caller has checked that one is free."""
        return self.entries.index(None)

    def allocate(self, tag: int, entry: TrackerEntry):
        self.entries[tag] = entry

    def free(self, tag: int):
        self.entries[tag] = None

    def holds_pid(self, pid: int) -> bool:
        return any(entry is not None and entry.pid == pid for entry in self.entries)

    def retarget(self, tm: Region, home: Region):
        """Accesses to the TM copy ``tm`` go to ``home``: its producer now writes there."""
        for tag, tracked in enumerate(self.entries):
            if tracked is not None:
                self.entries[tag] = TrackerEntry(tracked.pid, home if tracked.reads == tm else tracked.reads,
                                                 home if tracked.writes == tm else tracked.writes)
