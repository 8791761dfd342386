"""Formal harness of the Task Lookup Buffer (``hts.hdl.tlb``): its age order, its picks,
and its copy-back and retarget offers."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Module, Signal

from hts.hdl.primitives import oldest, popcount, youngest
from hts.hdl.tlb import TaskLookupBuffer

from .harness import Harness, PropertyGroup, free_inputs, strict_total_order

__all__ = ["TlbHarness"]


class TlbHarness(Harness):
    """The TLB with decode, the CDB, the branch unit, the memory tracker and the copy-back
    engine left free.

    Its searches (decode's read and branch look-ups: the youngest hit; the copy-back and
    retarget choices: the oldest candidate) pick by distance from the ring's tail
    (``youngest_of``, ``oldest_of``). ``picks`` checks those picks over any set of valid
    slots, the hits of every search among them, against ``youngest`` and ``oldest`` of
    ``hts.hdl.primitives`` over the age order the ring implies (``older``), which
    ``age_order`` checks is a strict total order.

    ``copy_back`` checks the offers against the tracker's ``touches`` and
    ``tracker_valid``, which are free: whatever the tracker reports, an offered home has
    no in-flight access (a retarget's: none but its own producer's, from its choice a cycle
    before the offer, with the assumption that the chosen home gains none). The tracker fills a
    slot's ``touches`` column only the cycle after the slot's allocation, so a copy
    must never be offered for a slot allocated the cycle before either.

    ``squash`` checks ``drop`` (the branch unit's ``squash``): after it no entry is left
    under a dropped ID, the entry allocated in the drop cycle included, and every other
    entry not removed by the copy-back engine stays.
    """

    # The copy-back base case spans reset, an allocation, the broadcast of its producer,
    # a retarget's choice and its offer, so that an offer the rules forbid fails as a
    # counterexample from reset.
    # The squash's base case spans reset, an allocation, its drop and the cycle after.
    GROUPS = (PropertyGroup("age_order", "prove", 2), PropertyGroup("picks", "prove", 2),
              PropertyGroup("copy_back", "prove", 5), PropertyGroup("squash", "prove", 4))
    ASSUMPTIONS = ("alloc_only_with_room", "new_producer_not_released", "retarget_choice_gains_no_access",
                   "young_producer_searching")

    def build(self, m: Module):
        tlb = m.submodules.tlb = TaskLookupBuffer(self.config)
        # Decode's head regions are free here, so the simulation-only check of the relations
        # the TLB keeps for them (against a direct compare, hdl/tlb.py) is not asked for.
        free_inputs(m, tlb, wired=[tlb.lookup_checks])
        m.d.comb += tlb.lookup_checks.eq(0)
        for name, holds in strict_total_order(tlb.valid, tlb.older).items():
            # The picks (the copy-back offers among them) are one-hot only over an order:
            # their inductions need it too.
            self.check(m, ("age_order", "picks", "copy_back"), name, holds)
        self.cover(m, "age_order", "full", tlb.valid.all())

        hits = Signal(self.config.hts.tlb_entries)
        m.d.comb += hits.eq(AnySeq(len(hits)) & tlb.valid)
        found = hits.any()
        youngest_hit, oldest_hit = Cat(*youngest(hits, tlb.older)), Cat(*oldest(hits, tlb.older))
        self.check(m, "picks", "youngest_hit_is_one", popcount(youngest_hit) == found)
        self.check(m, "picks", "oldest_candidate_is_one", popcount(oldest_hit) == found)
        self.check(m, "picks", "ring_picks_the_youngest", tlb.youngest_of(hits) == youngest_hit)
        self.check(m, "picks", "ring_picks_the_oldest", tlb.oldest_of(hits) == oldest_hit)
        self.cover(m, "picks", "pick_among_all_entries", tlb.valid.all() & hits.all())
        self._copy_back(m, tlb)
        self._squash(m, tlb)

    def _squash(self, m: Module, tlb):
        hits = Cat(*(valid & (entry.mask & tlb.drop).any() for valid, entry in zip(tlb.valid, tlb.entries)))
        was_drop = Signal.like(tlb.drop)
        spared = Signal.like(tlb.valid)      # valid, not under a dropped ID, not removed
        m.d.sync += [was_drop.eq(tlb.drop), spared.eq(tlb.valid & ~hits & ~tlb.remove)]
        # Both zero after reset: the first cycle checked compares with no drop.
        self.check(m, "squash", "no_entry_left_under_a_dropped_id",
                   Cat(*(~valid | ((entry.mask & was_drop) == 0) for valid, entry in zip(tlb.valid, tlb.entries))).all())
        self.check(m, "squash", "drop_spares_the_other_entries", (spared & ~tlb.valid) == 0)
        self.cover(m, "squash", "drop_hits_an_entry", hits.any())
        if self.config.hts.tlb_entries > 1:   # one slot cannot hold an entry hit and one spared
            self.cover(m, "squash", "drop_hits_one_and_spares_another", hits.any() & (tlb.valid & ~hits).any())

    def _copy_back(self, m: Module, tlb):
        count = self.config.hts.tlb_entries
        # Decode allocates only with ``has_room`` (its TLB stall, step 8).
        self.assume(m, "alloc_only_with_room", ~tlb.alloc | tlb.has_room)
        # A new entry's producer is the tag decode allocates in the same cycle, free in the
        # tracker; the tags released (broadcast, squashed, aborted) are all in flight.
        self.assume(m, "new_producer_not_released", ~tlb.alloc | ~tlb.broadcast.bit_select(tlb.alloc_entry.producer, 1))
        # A slot stays young while its producer searches the tracker, from the enqueue
        # stage: until the search ends the producer is neither done nor released.
        young_released = Cat(*(tlb._young[slot] & tlb.broadcast.bit_select(entry.producer, 1)
                               for slot, entry in enumerate(tlb.entries)))
        self.assume(m, "young_producer_searching", ~tlb.home_search_continues | ~young_released.any())

        def in_flight_accesses(index):
            """The tags in flight whose reads or writes touch the home of slot ``index``."""
            return Cat(*(row.bit_select(index, 1) for row in tlb.touches)) & tlb.tracker_valid

        # The slot chosen for the next cycle's retarget gains no access in between: decode
        # never touches a held home, and the one retarget that lands in between is of an
        # entry that does not overlap it (the top level asserts this in simulation).
        accesses = [in_flight_accesses(slot) for slot in range(count)]
        accessed_before = [Signal.like(access, name=f"accessed_before_{slot}") for slot, access in enumerate(accesses)]
        m.d.sync += [before.eq(access) for before, access in zip(accessed_before, accesses)]
        for slot, (access, before) in enumerate(zip(accesses, accessed_before)):
            self.assume(m, "retarget_choice_gains_no_access", ~tlb._retarget_choice[slot] | ((access & ~before) == 0))

        copy_accesses = in_flight_accesses(tlb.copy_index)
        retarget_accesses = in_flight_accesses(tlb.retarget_index)
        producer = tlb.retarget_entry.producer
        self.check(m, "copy_back", "copy_offer_is_valid",
                   ~tlb.copy_valid | tlb.valid.bit_select(tlb.copy_index, 1))
        self.check(m, "copy_back", "copy_offer_untouched", ~tlb.copy_valid | (copy_accesses == 0))
        self.check(m, "copy_back", "young_entry_not_done",
                   Cat(*(~(young & valid) | ~entry.producer_done
                         for young, valid, entry in zip(tlb._young, tlb.valid, tlb.entries))).all())
        self.check(m, "copy_back", "copy_offer_not_allocated_last_cycle",
                   ~tlb.copy_valid | ~tlb._young.bit_select(tlb.copy_index, 1))
        self.check(m, "copy_back", "retarget_offer_is_valid",
                   ~tlb.retarget_valid | tlb.valid.bit_select(tlb.retarget_index, 1))
        self.check(m, "copy_back", "retarget_offer_touched_only_by_its_producer",
                   ~tlb.retarget_valid | ((retarget_accesses & ~(1 << producer)) == 0))
        self.check(m, "copy_back", "retarget_offer_not_allocated_last_cycle",
                   ~tlb.retarget_valid | ~tlb._young.bit_select(tlb.retarget_index, 1))

        self.cover(m, "copy_back", "copy_offered_with_a_tag_in_flight", tlb.copy_valid & tlb.tracker_valid.any())
        self.cover(m, "copy_back", "retarget_offered_while_its_producer_touches_it",
                   tlb.retarget_valid & retarget_accesses.any())
        if count > 1:   # a passed-over entry needs a second one
            touched = Cat(*(in_flight_accesses(slot).any() for slot in range(count))) & tlb.valid
            self.cover(m, "copy_back", "copy_passes_over_an_older_touched_entry",
                       tlb.copy_valid & (touched & tlb.older[tlb.copy_index]).any())
