"""Formal harness of the common data bus arbiter (``hts.hdl.cdb``)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data

from hts.hdl.asr import instance_numbering
from hts.hdl.cdb import CommonDataBus
from hts.hdl.primitives import popcount

from .harness import Harness, PropertyGroup, elaborated_with, free_inputs, strict_total_order

__all__ = ["CdbHarness"]


class CdbHarness(Harness):
    """The CDB with the accelerator shells and the squash logic left free.

    ``ahead`` is the ticket order as docs/microarchitecture.md states it (step 2): a
    ticket is behind every ticket held when it is taken and behind the tickets taken in
    the same cycle by lower (class, instance), i.e. lower flat index; tickets then leave
    (granted or aborted) but never overtake one another. The grants are checked against
    it. No assumption: any ``finished`` and ``abort`` bits are legal inputs.
    """

    GROUPS = (PropertyGroup("grants", "prove", 2),)
    ASSUMPTIONS = ()

    def build(self, m: Module):
        count, width = len(instance_numbering(self.config)), self.config.hts.cdb_width
        cdb = CommonDataBus(self.config)
        m.submodules.cdb, ahead_of = elaborated_with(cdb, "ahead_of")
        free_inputs(m, cdb)
        taking = cdb.finished & ~cdb.pending
        holding = cdb.pending | taking
        staying = holding & ~cdb.grant & ~cdb.abort
        ahead = Signal(data.ArrayLayout(count, count))
        now_ahead = [Mux(cdb.pending[i], ahead[i], cdb.pending | (taking & ((1 << i) - 1))) & holding
                     for i in range(count)]
        for i in range(count):
            m.d.sync += ahead[i].eq(now_ahead[i] & staying)

        # The block's matrix is ``ahead`` on the pending tickets (``ahead_of`` is a view's
        # raw bits: row i is bits [i * count, (i + 1) * count)). Without this, an
        # induction may start from a matrix that disagrees with the order.
        self.check(m, "grants", "matrix_is_the_ticket_order",
                   Cat(*(~cdb.pending[i] | ((ahead_of[i * count:(i + 1) * count] ^ ahead[i]) & cdb.pending == 0)
                         for i in range(count))).all())
        for name, holds in strict_total_order(cdb.pending, ahead).items():
            self.check(m, "grants", f"ticket_order_{name}", holds)
        granted = popcount(cdb.grant)
        self.check(m, "grants", "grants_only_tickets", (cdb.grant & ~holding) == 0)
        self.check(m, "grants", "at_most_cdb_width", granted <= width)
        self.check(m, "grants", "grants_as_many_as_it_may", granted == Mux(popcount(holding) < width,
                                                                           popcount(holding), width))
        self.check(m, "grants", "grants_the_oldest",
                   Cat(*(~cdb.grant[i] | (now_ahead[i] & ~cdb.grant == 0) for i in range(count))).all())
        self.cover(m, "grants", "full_width_with_a_ticket_waiting", (granted == width) & (holding & ~cdb.grant).any())
        self.cover(m, "grants", "an_older_ticket_beats_a_lower_index",
                   Cat(*(cdb.grant[j] & holding[i] & ~cdb.grant[i] for i in range(count) for j in range(i + 1, count)
                         )).any())
