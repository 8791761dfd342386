"""Common data bus arbiter: completions granted in ticket order, broadcast the cycle after.

RTL of ``hts.models.cdb``: a pending bit per instance and an age matrix over instances
(docs/microarchitecture.md, "Completion").
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import instance_numbering
from .mutation import mutable
from .primitives import fewer_than, index_set

__all__ = ["CommonDataBus"]


class CommonDataBus(wiring.Component):
    """Ticket arbiter over every accelerator instance (flat, class-major numbering).

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    finished, tags : In
        From the shells: instances whose task is done (one ticket each), and their tags.
    abort, squashed : In
        Tickets dropped at the edge unless granted; instances the squash hits, granted or not.
    grant, pending : Out
        The ``cdb_width`` oldest tickets, this cycle's included; tickets not yet granted.
    broadcast_tags, broadcast_instances : Out, registered
        Last cycle's grants: their tags (less the squash's), their instances (to the ASR).
    """

    def __init__(self, config: SystemConfig):
        self._count = count = len(instance_numbering(config))
        self._width = config.hts.cdb_width
        self._tags = config.hts.tracker_entries
        super().__init__({
            "finished": In(count),
            "abort": In(count),
            "squashed": In(count),
            "tags": In(data.ArrayLayout(config.widths.tag, count)),
            "grant": Out(count),
            "pending": Out(count),
            "broadcast_tags": Out(self._tags),
            "broadcast_instances": Out(count),
        })

    def elaborate(self, platform):
        m = Module()
        count = self._count
        # No reset: a row is read only while its ticket is pending.
        ahead_of = Signal(data.ArrayLayout(count, count), reset_less=True)
        taking = self.finished & ~self.pending
        holding = self.pending | taking
        staying = holding & ~self.grant & ~self.abort

        for index in range(count):
            lower = mutable("cdb_priority_inverted", (1 << index) - 1, (1 << count) - (1 << (index + 1)))
            ahead = Mux(self.pending[index], ahead_of[index], self.pending | (taking & lower))
            # "None ahead" (a NOR) for a width of 1: a population count maps to carry chains
            # that run at half the clock.
            width = mutable("cdb_width_plus_one", self._width, self._width + 1)
            m.d.comb += self.grant[index].eq(holding[index] & fewer_than(ahead, width))
            # Tickets leave but never overtake one another: keep the row to those staying.
            m.d.sync += ahead_of[index].eq(ahead & staying)
        m.d.sync += [
            self.pending.eq(staying),
            self.broadcast_instances.eq(self.grant),
            self.broadcast_tags.eq(index_set(self.grant & ~self.squashed, list(self.tags), self._tags)),
        ]
        return m
