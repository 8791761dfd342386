"""Formal harness of the common data bus arbiter (``hts.hdl.cdb``)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data

from hts.hdl.cdb import CommonDataBus
from hts.hdl.interfaces import instance_numbering
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

    ``latency`` bounds the wait: a ticket is granted at most ``(instances - 1) //
    cdb_width`` cycles after it is taken, unless it is aborted first. Aborts need no
    assumption: they only take tickets away. The induction relates each ticket's wait to
    its rank (the tickets ahead of it), which falls by ``cdb_width`` every cycle it waits.
    """

    # The latency's base case reaches a matrix written from the first tickets, so that a
    # block ordering them otherwise fails from reset. Its induction closes in seconds with
    # six tickets (small); with tiny's ten, neither it nor a bounded check long enough to
    # wait out the bound finished in five minutes, so it runs up to six instances.
    GROUPS = (PropertyGroup("grants", "prove", 2),
              PropertyGroup("latency", "prove", 3, runs_on=lambda config: len(instance_numbering(config)) <= 6))
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
        self.check(m, ("grants", "latency"), "matrix_is_the_ticket_order",
                   Cat(*(~cdb.pending[i] | ((ahead_of[i * count:(i + 1) * count] ^ ahead[i]) & cdb.pending == 0)
                         for i in range(count))).all())
        for name, holds in strict_total_order(cdb.pending, ahead).items():
            self.check(m, ("grants", "latency"), f"ticket_order_{name}", holds)
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
        self._latency(m, cdb, holding, staying, ahead)

    def _latency(self, m: Module, cdb, holding, staying, ahead):
        """The ``latency`` group: every ticket granted within the bound."""
        count, width = len(instance_numbering(self.config)), self.config.hts.cdb_width
        bound = (count - 1) // width   # the other tickets, ``width`` of them granted a cycle
        # Cycles each ticket has waited: 0 in the cycle it is taken.
        waited = [Signal(range(bound + 2), name=f"waited_{i}") for i in range(count)]
        waiting = [Mux(cdb.pending[i], waited[i], 0) for i in range(count)]
        for i in range(count):
            m.d.sync += waited[i].eq(Mux(staying[i], waiting[i] + 1, 0))
            self.check(m, "latency", f"ticket_{i}_rank_falls_as_it_waits",
                       ~cdb.pending[i] | (popcount(ahead[i]) + width * waited[i] <= count - 1))
            self.check(m, "latency", f"ticket_{i}_granted_within_{bound}_cycles",
                       ~holding[i] | (waiting[i] < bound) | cdb.grant[i])
        self.cover(m, "latency", f"a_ticket_granted_after_{bound}_cycles",
                   Cat(*(cdb.grant[i] & (waiting[i] == bound) for i in range(count))).any())
