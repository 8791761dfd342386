"""Common data bus arbiter: completions granted in ticket order, ``hts.cdb_width`` a cycle,
and broadcast the cycle after.

RTL of ``hts.models.cdb``; see docs/microarchitecture.md ("One cycle", step 2). An
instance whose task finishes takes a ticket; tickets taken in the same cycle are ordered
by (class, instance), i.e. by flat instance index (``hts.hdl.asr``). Each cycle the
``cdb_width`` oldest tickets are granted, this cycle's new tickets included, so an
uncontended completion is granted in the cycle its accelerator finishes. The grant is
registered: the granted tags and instances are broadcast (released) the next cycle, so
no wake-up waits on this cycle's pick.

An instance holds at most one ticket (it stays busy until granted or aborted), so the
ticket queue is a pending bit per instance plus an age matrix over instances instead of
a FIFO: the rank of a ticket is the number of tickets ahead of it, and the tickets of
rank below ``cdb_width`` are granted.
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

    Inputs (this cycle):

    - ``finished`` (in, from the accelerator shells): one bit per flat instance whose
      task is done. A set bit takes a ticket unless the instance already holds one, so
      both a one-cycle pulse in the finishing cycle and the shell's ``done`` level (held
      until the grant) take exactly one ticket, in the finishing cycle;
    - ``abort`` (in, from the squash logic): one bit per flat instance whose ticket is
      dropped at the clock edge. The squash resolves after the grant (the model's
      ``_squash`` follows ``_complete``), so a ticket granted this cycle is granted
      whatever its abort bit; a ticket not granted is dropped and never granted. Bits of
      instances without a ticket (still running, or idle) are ignored;
    - ``squashed`` (in, from the squash logic): one bit per flat instance whose task this
      cycle's squash hits, granted or not. The squash releases the tag of a granted one
      itself, so the broadcast leaves it out;
    - ``tags`` (in, from the accelerator shells): the tag each instance holds.

    Output (combinational, on the tickets registered at the start of the cycle and this
    cycle's ``finished``):

    - ``grant`` (out, to the shells' ``granted``, the squash's abort decision and the
      trace): one bit per flat instance, the ``cdb_width`` oldest tickets (fewer when
      fewer are held).

    Outputs (registered: this cycle's grants, broadcast the next cycle):

    - ``broadcast_tags`` (out, to the top level's released set and the tracker's
      ``ignoring``): one bit per tag, the tags granted last cycle that no squash released;
    - ``broadcast_instances`` (out, to the ASR's ``release``): one bit per flat instance
      granted last cycle.

    State:

    - ``pending`` (out): one bit per flat instance holding a ticket not yet granted at
      the start of the cycle;
    - the age matrix (private): row ``i`` has bit ``j`` set when ticket ``j`` is ahead of
      ticket ``i``; a row is kept to the pending tickets, and written when its ticket is
      taken (younger than every pending ticket, behind the same-cycle tickets of lower
      index).
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
        # A row is read only while its ticket is pending: no reset (record_register, hdl/primitives.py).
        ahead_of = Signal(data.ArrayLayout(count, count), reset_less=True)
        taking = self.finished & ~self.pending
        holding = self.pending | taking
        staying = holding & ~self.grant & ~self.abort

        for index in range(count):
            lower = mutable("cdb_priority_inverted", (1 << index) - 1, (1 << count) - (1 << (index + 1)))
            ahead = Mux(self.pending[index], ahead_of[index], self.pending | (taking & lower))
            # "None ahead" (a NOR) for a width of 1: a population count maps to carry chains
            # that take fewer LUT4 sites but run at half the clock (docs/results.md, "Blocks").
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
