"""Memory tracker: the regions every in-flight task reads and writes, searched as ranges.

One entry per task from decode until its completion is broadcast on the CDB; the entry
index is the task's tag. A new task depends on every entry it overlaps: RAW (its input
meets an older output), WAR (its output meets an older input) and WAW (outputs meet).
Any overlap counts, not only equal bases.

A search compares one row of ``hts.tracker_lanes`` entries per cycle, row 0 first (tags
``0 .. lanes - 1``), and takes ``hts.tracker_rows`` cycles. What it found in an earlier
row and was released since (broadcast or squashed) drops out at the end of each cycle, as
from every waiting set; decode starts no search while one is under way, so no entry is
allocated during a search.
"""

from dataclasses import dataclass, field

__all__ = ["Region", "TrackerEntry", "MemoryTracker", "Search", "overlaps"]

Region = tuple[int, int]  # (base block, blocks)


def overlaps(a: Region, b: Region) -> bool:
    return a[1] > 0 and b[1] > 0 and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


@dataclass(frozen=True)
class TrackerEntry:
    pid: int
    reads: Region
    writes: Region


@dataclass
class Search:
    """A search under way: the rows compared so far and the tags found, less those released
    since; ``row_found``: what the row compared last found."""
    row: int = 0
    found: set[int] = field(default_factory=set)
    row_found: set[int] = field(default_factory=set)
    tag: int | None = None          # the searching task's

    def release(self, tags: set[int]):
        """End of cycle: released tags leave what was found."""
        self.found -= tags


class MemoryTracker:
    def __init__(self, entries: int, lanes: int | None = None):
        """``lanes``: entries compared per cycle (every entry when None)."""
        self.entries: list[TrackerEntry | None] = [None] * entries
        self.held: set[int] = set()     # free entries whose tag may not be allocated yet (wake-up)
        self.lanes = max(1, min(lanes or entries, entries))
        self.rows = max(1, -(-entries // self.lanes))

    def row_tags(self, row: int) -> range:
        return range(row * self.lanes, min(len(self.entries), (row + 1) * self.lanes))

    def search_dependences(self, search: Search, reads: Region, writes: Region, ignoring: frozenset[int]) -> bool:
        """Compare the next row for a new task's dependences; whether the search is complete."""
        return self._search(search, ignoring, lambda entry: (
            overlaps(reads, entry.writes) or overlaps(writes, entry.reads) or overlaps(writes, entry.writes)))

    def search_writers(self, search: Search, block: int, ignoring: frozenset[int]) -> bool:
        """Compare the next row for writers of ``block`` (a memory branch); whether the search is complete."""
        return self._search(search, ignoring, lambda entry: overlaps((block, 1), entry.writes))

    def _search(self, search: Search, ignoring: frozenset[int], meets) -> bool:
        found = {tag for tag in self.row_tags(search.row)
                 if self.entries[tag] is not None and tag not in ignoring and meets(self.entries[tag])}
        search.row_found = found
        search.found |= found
        search.row += 1
        return search.row == self.rows

    def occupancy(self) -> int:
        return sum(entry is not None for entry in self.entries)

    def allocatable(self) -> int:
        return sum(entry is None and tag not in self.held for tag, entry in enumerate(self.entries))

    def free_tag(self) -> int:
        """Lowest free tag not held; the caller has checked that one is free."""
        return next(tag for tag, entry in enumerate(self.entries) if entry is None and tag not in self.held)

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
