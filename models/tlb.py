"""Task Lookup Buffer and transactional memory (TM): where speculative outputs live.

A task decoded under unresolved speculated branches (a non-zero speculation mask) does
not write home memory: decode gives its output a fresh TM region and records the
mapping home region -> TM region here, tagged with the task's mask. Later tasks are
remapped by the youngest entry their input overlaps: when that entry maps exactly the
region they read, they read the TM copy; any other overlap must wait until the entry is
copied back. The rule keeps one invariant: the current value of a block is in the
youngest entry that covers it, or in home memory if none does.

A mispredicted branch drops the entries under its speculation ID: nothing needs erasing,
as the TM space is simply never read again. A resolved entry stays until the copy-back
engine writes it home: when speculative work waits for TLB or TM room, when a task
conflicts with it, or when its process reaches the end of its program. An entry resolved
before its producer starts writing its output needs no copy at all: the engine retargets
the producer (and the readers remapped to it) to the home region instead. TM space is
allocated upwards from the bottom and reclaimed only when the TLB is empty and nothing in
flight still reads TM (a bump allocator: no fragmentation, trivial in hardware). Entries
take their slots in ring order, so that the youngest or oldest of a set of slots is the
nearest behind or ahead of the tail, with no age order kept between slots.
"""

from dataclasses import dataclass

from .memory_tracker import Region, overlaps

__all__ = ["TLBEntry", "TaskLookupBuffer", "CopyBack"]


@dataclass
class TLBEntry:
    seq: int               # age: decode order of the producing task
    pid: int
    home: Region           # region the program names
    tm_base: int           # physical block where the TM copy starts
    mask: int              # speculation IDs the producer is under; 0 once all resolved
    producer: int          # producer's tracker tag, valid while not producer_done
    producer_done: bool = False
    allocated_at: int | None = None   # cycle of decode (the RTL's look-ups need a cycle to settle)
    slot: int = 0          # where it sits in the ring of slots


@dataclass
class CopyBack:
    entry: TLBEntry
    started: int
    finishes: int


class TaskLookupBuffer:
    def __init__(self, entries: int, tm_blocks: int, home_blocks: int, search_rows: int = 1):
        """``search_rows``: cycles of a tracker search, which registers the relations of a new home."""
        self.capacity = entries
        self.search_rows = search_rows
        self.tm_blocks = tm_blocks
        self.home_blocks = home_blocks
        self.entries: list[TLBEntry] = []        # oldest first
        self.tm_next = 0                          # bump allocator, in TM blocks
        self.retarget_candidate: TLBEntry | None = None   # chosen last cycle, retargeted this one
        # The slot the next entry takes. Entries take the slots in ring order, so that a slot's
        # age is its distance behind the tail and no order between slots need be kept.
        self.tail = 0

    def youngest_overlapping(self, region: Region) -> TLBEntry | None:
        return next((e for e in reversed(self.entries) if overlaps(e.home, region)), None)

    def any_overlapping(self, region: Region) -> bool:
        return any(overlaps(e.home, region) for e in self.entries)

    def youngest_of(self, pid: int, region: Region) -> TLBEntry | None:
        """The youngest of process ``pid``'s own entries overlapping ``region``."""
        return next((e for e in reversed(self.entries) if e.pid == pid and overlaps(e.home, region)), None)

    def translate_block(self, block: int, pid: int) -> int:
        """Physical block holding process ``pid``'s current value of home ``block``: its own
        speculative copies count, another process's do not."""
        entry = self.youngest_of(pid, (block, 1))
        return block if entry is None else entry.tm_base + block - entry.home[0]

    def has_room(self, blocks: int) -> bool:
        """The tail's slot is free (a free slot elsewhere waits for the tail) and TM has room."""
        return all(entry.slot != self.tail for entry in self.entries) and self.tm_next + blocks <= self.tm_blocks

    def allocate(self, seq: int, pid: int, home: Region, mask: int, producer: int, cycle: int) -> int:
        tm_base = self.home_blocks + self.tm_next
        self.tm_next += home[1]
        self.entries.append(TLBEntry(seq, pid, home, tm_base, mask, producer, allocated_at=cycle, slot=self.tail))
        self.tail = (self.tail + 1) % self.capacity
        return tm_base

    def retarget_offer(self, busy: list[tuple[int, Region]], retargetable_tags: set[int],
                       cycle: int) -> TLBEntry | None:
        """This cycle's retarget, and the choice of the next one.

        The retarget is the entry chosen in the cycle before (the hardware holds the choice
        in a register, so that it does not stand in series with the rewrite of every range),
        if it is still held and unproduced and its producer is in ``retargetable_tags``
        (those retargetable this cycle, ``CopyBackEngine.retarget``). The next choice is
        made now, among the other entries, by :meth:`retargetable`.
        """
        chosen = self.retarget_candidate
        held = chosen is not None and any(entry is chosen for entry in self.entries)
        offer = chosen if held and not chosen.producer_done and chosen.producer in retargetable_tags else None
        self.retarget_candidate = self.retargetable(busy, retargetable_tags, cycle, passed_over=chosen)
        return offer

    def retargetable(self, busy: list[tuple[int, Region]], retargetable_tags: set[int],
                     cycle: int, passed_over: TLBEntry | None = None) -> TLBEntry | None:
        """Oldest resolved entry whose producer can still be told to write home instead,
        other than ``passed_over`` (the one retargeted or refused this cycle).

        The producer must be retargetable (``retargetable_tags``), no older entry
        may overlap it, and no other in-flight task may read or write its home blocks:
        ``busy`` holds (tag, region) of every in-flight access, the producer's own included.
        An entry is not offered until its producer's tracker search has ended: the hardware
        registers which in-flight accesses touch a new home during that search, a row of
        tracker entries a cycle from the cycle after the allocation.
        """
        for index, entry in enumerate(self.entries):
            if entry is passed_over or entry.mask or entry.producer_done or entry.producer not in retargetable_tags:
                continue
            if cycle - entry.allocated_at <= self.search_rows:
                continue
            if any(overlaps(older.home, entry.home) for older in self.entries[:index]):
                continue
            if any(tag != entry.producer and overlaps(region, entry.home) for tag, region in busy):
                continue
            return entry
        return None

    def copyable(self, busy_home: list[Region]) -> TLBEntry | None:
        """Oldest entry that may be written home now.

        It must be resolved and produced, no older entry may overlap it (the older one goes
        home first), and no in-flight task may read or write the home blocks it overwrites.
        """
        for index, entry in enumerate(self.entries):
            if entry.mask or not entry.producer_done:
                continue
            if any(overlaps(older.home, entry.home) for older in self.entries[:index]):
                continue
            if any(overlaps(region, entry.home) for region in busy_home):
                continue
            return entry
        return None
