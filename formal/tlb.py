"""Formal harness of the Task Lookup Buffer (``hts.hdl.tlb``): its age matrix and its picks."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Module, Signal

from hts.hdl.primitives import oldest, popcount, youngest
from hts.hdl.tlb import TaskLookupBuffer

from .harness import Harness, PropertyGroup, free_inputs, strict_total_order

__all__ = ["TlbHarness"]


class TlbHarness(Harness):
    """The TLB with decode, the CDB, the branch unit and the copy-back engine left free.

    Its searches (decode's read and branch look-ups: the youngest hit; the copy-back and
    retarget choices: the oldest candidate) pick with ``youngest`` and ``oldest`` of
    ``hts.hdl.primitives`` over valid slots and its ``older`` matrix. ``picks`` checks
    those picks over any set of valid slots, the hits of every search among them.
    """

    GROUPS = (PropertyGroup("age_order", "prove", 2), PropertyGroup("picks", "prove", 2))
    ASSUMPTIONS = ()

    def build(self, m: Module):
        tlb = m.submodules.tlb = TaskLookupBuffer(self.config)
        free_inputs(m, tlb)
        for name, holds in strict_total_order(tlb.valid, tlb.older).items():
            # The picks are one-hot only over an order: their induction needs it too.
            self.check(m, ("age_order", "picks"), name, holds)
        self.cover(m, "age_order", "full", tlb.valid.all())

        hits = Signal(self.config.hts.tlb_entries)
        m.d.comb += hits.eq(AnySeq(len(hits)) & tlb.valid)
        found = hits.any()
        youngest_hit, oldest_hit = Cat(*youngest(hits, tlb.older)), Cat(*oldest(hits, tlb.older))
        self.check(m, "picks", "youngest_hit_is_one", popcount(youngest_hit) == found)
        self.check(m, "picks", "oldest_candidate_is_one", popcount(oldest_hit) == found)
        self.cover(m, "picks", "pick_among_all_entries", tlb.valid.all() & hits.all())
