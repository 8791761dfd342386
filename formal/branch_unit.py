"""Formal harness of the branch unit (``hts.hdl.branch_unit``): its squash and the IDs it frees."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Module, Signal

from hts.hdl.branch_unit import BranchUnit
from hts.hdl.interfaces import BranchKind
from hts.hdl.primitives import index_set, search_row

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["BranchUnitHarness"]


class BranchUnitHarness(Harness):
    """The branch unit with decode, the tracker, the CDB, the memory and the copy-back
    engine left free.

    A misprediction in cycle *t* is the ``squash`` of *t + 1*; in that cycle every slot
    whose mask holds a squashed ID is removed (the mispredicted slot itself went at the
    edge of *t*), and the IDs go back to decode's pool through ``freed_ids``. The harness
    keeps that pool as decode does (``in_use``: IDs allocated and not yet freed) and
    proves that after a squash no slot is left under, or with, a squashed ID, that an ID
    is in use exactly while its slot holds a branch or it is being squashed, and that no
    ID is freed twice.
    """

    # Only memory branches are speculated, and one resolves ``timing.memory_latency + 1``
    # cycles after the last row of its search (23 on tiny and small; the compare is
    # registered), ``tracker_rows`` cycles after its decode. The base
    # case spans reset, two nested speculated branches, the misprediction of the older, its
    # squash and the cycle after, so that a squash sparing a slot fails as a counterexample
    # from reset; the covers two cycles further.
    GROUPS = (PropertyGroup("squash", "prove", lambda config: config.timing.memory_latency + 5 + config.hts.tracker_rows,
                            cover_depth=lambda config: config.timing.memory_latency + 7 + config.hts.tracker_rows),)
    ASSUMPTIONS = ("alloc_takes_a_free_id", "stalled_process_decodes_no_branch", "rr_never_speculated",
                   "alloc_mask_not_squashed", "alloc_in_range", "memory_branch_waits_for_the_search")

    def build(self, m: Module):
        unit = m.submodules.branch_unit = BranchUnit(self.config)
        # The unit checks its allocations and retargets with its own assertions, at every
        # edge, the reset cycle's included, where the harness's assumptions do not apply:
        # so decode allocates nothing in that cycle, and retargets are tied off (a retarget
        # moves a slot's block, which the squash does not read; that no read under way is
        # retargeted rests on the copy-back engine, not modelled here).
        free_inputs(m, unit, wired=(unit.retarget, unit.search_last))
        # Assigned after the free value of ``alloc``: the later assignment wins for the bit.
        m.d.comb += [unit.alloc.valid.eq(AnySeq(1) & self._running), unit.retarget.eq(0)]
        spec_ids, processes = self.config.hts.spec_ids, self.config.hts.processes
        new = unit.alloc
        taking = new.valid & new.speculated
        # Decode's pool (hdl/decode.py ``free_ids``), complemented: freed IDs return at the edge.
        in_use = Signal(spec_ids)
        allocated = index_set([taking], [new.spec_id], spec_ids)
        m.d.sync += in_use.eq((in_use | allocated) & ~unit.freed_ids)

        # Decode speculates only with a free ID (lowest_set(free_ids)).
        self.assume(m, "alloc_takes_a_free_id", ~taking | ~in_use.bit_select(new.spec_id, 1))
        # A blocked process (unspeculated branch pending) and one being restored decode
        # nothing (Stall.BRANCH in hdl/decode.py).
        stalled = Cat(*(unit.blocked[pid] | unit.restore[pid].valid for pid in range(processes)))
        self.assume(m, "stalled_process_decodes_no_branch", ~new.valid | ~stalled.bit_select(new.pid, 1))
        # Decode speculates memory branches only (``speculate`` needs ``memory``).
        self.assume(m, "rr_never_speculated", ~taking | (new.kind != BranchKind.RR))
        # A process's mask holds only its own pending IDs, and the process whose ID is
        # squashed now is being restored and decodes nothing.
        self.assume(m, "alloc_mask_not_squashed", ~new.valid | ((new.mask & unit.squash) == 0))
        # Decode numbers processes and IDs below their counts (tiny's one-bit fields could
        # hold one more).
        self.assume(m, "alloc_in_range", ~new.valid | ((new.pid < processes) & (~taking | (new.spec_id < spec_ids))))
        # The tracker's row counter, restarted by each memory branch handed over; decode
        # hands none over while a search goes on (Stall.SCAN).
        searching = new.valid & (new.kind != BranchKind.RR)
        _, last = search_row(m, searching, self.config.hts.tracker_rows, "tracker_row")
        m.d.comb += unit.search_last.eq(last)
        self.assume(m, "memory_branch_waits_for_the_search", ~searching | ~unit.searching_next)

        was_squash = Signal(spec_ids)
        m.d.sync += was_squash.eq(unit.squash)
        # Zero after reset: the first cycle checked compares with no squash.
        left = Cat(*(valid & ((entry.mask & was_squash).any() | (was_squash[slot] if slot < spec_ids else 0))
                     for slot, (valid, entry) in enumerate(zip(unit.valid, unit.entries))))
        self.check(m, "squash", "no_slot_left_under_a_squashed_id", ~left.any())
        self.check(m, "squash", "ids_in_use_are_held_or_squashed", in_use == (unit.valid[:spec_ids] | unit.squash))
        self.check(m, "squash", "no_id_freed_twice", (unit.freed_ids & ~in_use) == 0)

        removed = Cat(*(valid & (entry.mask & unit.squash).any() for valid, entry in zip(unit.valid, unit.entries)))
        self.cover(m, "squash", "squash_removes_a_younger_branch", removed.any())
        if spec_ids > 1:   # a nested branch needs a second ID
            self.cover(m, "squash", "squash_removes_a_nested_speculated_branch", removed[:spec_ids].any())
