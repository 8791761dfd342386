"""Formal harness of the memory tracker (``hts.hdl.memory_tracker``): its tags and its search."""

from amaranth.hdl import Cat, Module, Mux, Signal

from hts.hdl.memory_tracker import MemoryTracker
from hts.hdl.primitives import overlaps

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["MemoryTrackerHarness"]


class MemoryTrackerHarness(Harness):
    """The tracker with decode, the CDB, the squash logic, the copy-back engine and the
    TLB left free. Its tags are checked against ``in_flight``, the tags allocated and not
    yet released as the harness counts them from ``alloc``, ``free_tag`` and ``release``.
    Its search against a compare of every entry of the query's row with the query, written
    per tag as the specification (no lanes, no multiplexers)."""

    # The tags' base case runs until every tag can be in flight, so that a broken
    # allocation rule shows as a counterexample from reset, not only as a failed induction.
    GROUPS = (PropertyGroup("tags", "prove", lambda config: config.hts.tracker_entries + 2),
              PropertyGroup("search", "prove", 2))
    ASSUMPTIONS = ("alloc_needs_free_tag", "release_only_in_flight")

    def build(self, m: Module):
        tracker = m.submodules.tracker = MemoryTracker(self.config)
        free_inputs(m, tracker)
        count = self.config.hts.tracker_entries
        allocated = Signal(count)
        m.d.comb += allocated.eq(Cat(*(tracker.alloc & (tracker.free_tag == tag) for tag in range(count))))
        in_flight = Signal(count)
        m.d.sync += in_flight.eq(in_flight & ~tracker.release | allocated)

        # Decode allocates a tag only when the tracker has a free one (step 8).
        self.assume(m, "alloc_needs_free_tag", ~tracker.alloc | tracker.has_free)
        # Only tags in flight are released: the CDB broadcasts the tags of tasks it
        # completes and the squash logic the tags of the tasks it removes, all in flight.
        self.assume(m, "release_only_in_flight", (tracker.release & ~in_flight) == 0)

        self.check(m, "tags", "valid_is_in_flight", tracker.valid == in_flight)
        self.check(m, "tags", "never_allocated_twice", (allocated & in_flight) == 0)
        # The wake-up's held tags (a free input) are not free to allocate.
        taken = in_flight | tracker.held
        lowest_free = Cat(*(~taken[tag] & taken[:tag].all() if tag else ~taken[0] for tag in range(count)))
        self.check(m, "tags", "free_tag_is_lowest_free",
                   (tracker.has_free == ~taken.all())
                   & (~tracker.has_free | lowest_free.bit_select(tracker.free_tag, 1)))
        self.cover(m, "tags", "full_then_released", tracker.valid.all() & tracker.release.any())
        self._search(m, tracker)
        if count > 1:   # one tag cannot be freed and taken in the same cycle: the next is free at t + 1
            self.cover(m, "tags", "released_and_allocated_together", tracker.release.any() & tracker.alloc)

    def _search(self, m: Module, tracker: MemoryTracker):
        hts = self.config.hts
        lanes, count = hts.search_lanes, hts.tracker_entries
        expected = Cat(*(
            (tracker.search_row == tag // lanes) & tracker.valid[tag] & ~tracker.ignoring[tag]
            & (overlaps(tracker.query_reads, entry.writes)
               | (overlaps(tracker.query_writes, entry.reads) | overlaps(tracker.query_writes, entry.writes))
               & ~tracker.query_home)
            for tag, entry in enumerate(tracker.entries)))
        self.check(m, "search", "finds_exactly_the_rows_meetings", tracker.depends == expected)
        self.cover(m, "search", "found_in_the_last_row", tracker.depends[count - 1])
        # The row counter: 0 in the cycle after a hand-over, one more each cycle to the last.
        rows = hts.tracker_rows
        counted = Signal(range(rows + 1))
        m.d.sync += counted.eq(Mux(tracker.search_start, 0, Mux(counted >= rows - 1, rows, counted + 1)))
        started = Signal()
        m.d.sync += started.eq(started | tracker.search_start)
        in_search = started & (counted < rows)
        self.check(m, "search", "count_in_range", counted <= rows)
        self.check(m, "search", "one_row_a_cycle", ~in_search | (tracker.search_row == counted))
        self.check(m, "search", "last_row_is_the_last", ~in_search | (tracker.search_last == (counted == rows - 1)))
