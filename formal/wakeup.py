"""Formal harness of the wake-up (``hts.hdl.wakeup.WakeUp``): counts, lists and the walker."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Module, Mux, Signal

from hts.hdl.primitives import index_set
from hts.hdl.wakeup import WakeUp

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["WakeUpHarness"]


class WakeUpHarness(Harness):
    """The wake-up with the tracker, decode and the enqueue stage played by the harness.

    The harness keeps the tracker's valid tags (``tracked``). A search starts, when decode
    would start one (none under way, no list nearly full), on a tag neither tracked nor
    held, which the tracker then holds; it lasts ``tracker_rows`` cycles, a row a cycle, and
    each row's producers are tracked tags of that row other than the waiter. Releases name
    tracked tags (a broadcast or a squash); a squash may end the search.
    """

    # Bounded: the counts equal what the lists hold only through the lists' RAM contents,
    # which an induction would have to be told. Twelve cycles fill a list of the small
    # system and walk it; one tag (tiny) has no dependences to walk.
    GROUPS = (PropertyGroup("walk", "bmc", 12, cover_depth=12, runs_on=lambda config: config.hts.tracker_entries > 1),)
    ASSUMPTIONS = ("starts_as_decode_would", "producers_of_the_row", "releases_tracked_tags")

    def build(self, m: Module):
        config = self.config
        hts = config.hts
        tags, lanes, rows = hts.tracker_entries, hts.search_lanes, hts.tracker_rows
        wakeup = m.submodules.wakeup = WakeUp(config)
        free_inputs(m, wakeup, wired=[wakeup.tracked, wakeup.register, wakeup.waiter, wakeup.search_row])
        start, new_tag = Signal(), Signal.like(wakeup.waiter)
        m.d.comb += [start.eq(AnySeq(1)), new_tag.eq(AnySeq(len(new_tag)))]
        tracked, searching = Signal(tags), Signal()
        waiter, row = Signal.like(wakeup.waiter), Signal(range(max(rows, 2)))
        squashed_now = searching & (wakeup.release.bit_select(waiter, 1))
        last_row = row == rows - 1
        allocated = Mux(start, index_set([1], [new_tag], tags), 0)
        m.d.sync += [
            tracked.eq(tracked & ~wakeup.release | allocated),
            searching.eq(start | searching & ~last_row & ~squashed_now),
            row.eq(Mux(start, 0, row + 1)),
            waiter.eq(Mux(start, new_tag, waiter)),
        ]
        # As the enqueue stage does, a waiter squashed now registers nothing.
        m.d.comb += [wakeup.tracked.eq(tracked), wakeup.register.eq(searching & ~squashed_now),
                     wakeup.waiter.eq(waiter), wakeup.search_row.eq(row)]
        self.assume(m, "starts_as_decode_would",
                    ~start | (~searching | last_row | squashed_now) & ~wakeup.successors_full & (new_tag < tags)
                    & ~(tracked | wakeup.held).bit_select(new_tag, 1))
        in_row = Cat(*(row == tag // lanes for tag in range(tags)))
        self.assume(m, "producers_of_the_row",
                    (wakeup.producers & ~(Mux(searching, tracked & in_row, 0) & ~(1 << waiter))) == 0)
        self.assume(m, "releases_tracked_tags", (wakeup.release & ~tracked) == 0)

        pending = wakeup.pending
        self.check(m, "walk", "no_count_underflows",
                   ~wakeup.reading_valid | (Cat(*pending).word_select(wakeup.reading, len(pending[0])) != 0))
        self.check(m, "walk", "no_list_overflows",
                   Cat(*(length <= hts.successor_slots for length in wakeup.length)).all())
        walked = wakeup.to_walk | wakeup.held & ~Cat(*(count != 0 for count in pending))
        self.check(m, "walk", "only_released_lists_are_walked", (walked & tracked) == 0)
        self.check(m, "walk", "a_walk_reads_a_list_slot", ~wakeup.reading_valid | (wakeup.reading < tags))
        # A joined list is still the producer's: its tag was not released since it was found.
        joining = Cat(*(wakeup.staged_lanes[tag % lanes] & (wakeup.staged_row == tag // lanes) for tag in range(tags)))
        self.check(m, "walk", "joins_only_tracked_lists", (joining & ~tracked) == 0)
        # A woken count is zero after the edge (a waiter joining more lists at it is not woken).
        was_woken, woken_tag = Signal(), Signal.like(wakeup.woken.tag)
        m.d.sync += [was_woken.eq(wakeup.woken.valid), woken_tag.eq(wakeup.woken.tag)]
        self.check(m, "walk", "a_woken_count_is_zero",
                   ~was_woken | (Cat(*pending).word_select(woken_tag, len(pending[0])) == 0))
        self.check(m, "walk", "held_is_what_is_in_use",
                   wakeup.held == (Cat(*(count != 0 for count in pending)) | wakeup.to_walk | wakeup.walking))
        self.cover(m, "walk", "a_list_fills", wakeup.successors_full)
        self.cover(m, "walk", "two_lists_wait", Cat(*(wakeup.to_walk[i] & wakeup.to_walk[j]
                                                     for i in range(tags) for j in range(i))).any())
        self.cover(m, "walk", "a_task_is_woken", wakeup.woken.valid & tracked.bit_select(wakeup.woken.tag, 1))
        self.cover(m, "walk", "a_squashed_task_is_woken", wakeup.woken.valid
                   & ~tracked.bit_select(wakeup.woken.tag, 1))

