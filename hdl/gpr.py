"""General-purpose register bank of one process, with speculation checkpoints.

RTL of ``hts.models.gpr``. Decode reads and writes the bank in the cycle it executes a
control instruction; a speculated memory branch checkpoints the whole bank into the slot
of its speculation ID, and its misprediction restores it (models/hts.py,
``_decode_branch`` and ``_squash``).
"""

from amaranth.hdl import Assert, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.config import SystemConfig, bits_for
from hts.isa import REGISTER_BITS

from .mutation import mutable
from .primitives import mux_tree

__all__ = ["GPRBank", "READ_PORTS", "COUNTER_PORT"]

# Decode reads R[A], R[B], R[C] of the next queue head a cycle ahead (ports 0-2), and
# the counter of the loop top for ``lend`` (port 3).
READ_PORTS = 4
COUNTER_PORT = 3


class GPRBank(wiring.Component):
    """``hts.gprs`` registers of ``REGISTER_BITS`` bits and ``hts.spec_ids`` snapshots.

    Read ports (combinational, on the values registered at the start of the cycle):

    - ``read_index`` (in, from decode): ``READ_PORTS`` register indices;
    - ``read_value`` (out, to decode): the registers they name.

    Updates (land at the clock edge):

    - ``write_en``, ``write_index``, ``write_value`` (in, from decode): ``mov``, ``add``,
      ``mul``, ``lbeg`` (counter := 0) and ``lend`` (counter + 1);
    - ``checkpoint_en``, ``checkpoint_slot`` (in, from decode): copy the bank as it is at
      the start of the cycle into a slot, whatever else lands. Decode copies into the
      slot of the lowest free speculation ID in every cycle that has one, so that no
      enable waits for its stall decision; a speculated ``if`` decoded in the cycle
      takes that ID, and its checkpoint is the bank it was decoded with (it writes no
      register). Slots of free IDs are never read;
    - ``restore_en``, ``restore_slot`` (in, from the branch unit on a misprediction):
      the bank takes the slot's values. The process does not decode in the cycle of its
      squash (it resumes at t + 1), so a write then is an error (asserted).

    State read by other blocks:

    - ``values`` (out): every register (the CPU reads them back at the end of a run).
    """

    def __init__(self, config: SystemConfig):
        self._slots = config.hts.spec_ids
        bank = data.ArrayLayout(REGISTER_BITS, config.hts.gprs)
        index = config.widths.gpr_index
        slot = bits_for(config.hts.spec_ids)
        super().__init__({
            "read_index": In(data.ArrayLayout(index, READ_PORTS)),
            "read_value": Out(data.ArrayLayout(REGISTER_BITS, READ_PORTS)),
            "write_en": In(1),
            "write_index": In(index),
            "write_value": In(REGISTER_BITS),
            "checkpoint_en": In(1),
            "checkpoint_slot": In(slot),
            "restore_en": In(1),
            "restore_slot": In(slot),
            "values": Out(bank),
        })
        self._bank = bank

    def elaborate(self, platform):
        m = Module()
        for port in range(READ_PORTS):
            m.d.comb += self.read_value[port].eq(mux_tree(self.values, self.read_index[port]))

        # Checked at the edge, where the operations land.
        m.d.sync += [
            Assert(~(self.restore_en & self.write_en), "GPR restore together with a write"),
        ]
        # A snapshot is read only by the restore of the checkpoint that wrote it: no reset
        # (record_register, hdl/primitives.py), neither at rst nor at a process start.
        snapshots = Signal(data.ArrayLayout(self._bank, self._slots), reset_less=True)
        with m.If(self.checkpoint_en):
            m.d.sync += snapshots[self.checkpoint_slot].eq(self.values)
        # Never together with a write (asserted above); were it, the squashed path's write
        # would be the one to drop.
        with m.If(mutable("gpr_restore_lost", self.restore_en, 0)):
            m.d.sync += self.values.eq(snapshots[self.restore_slot])
        with m.Elif(self.write_en):
            m.d.sync += self.values[self.write_index].eq(self.write_value)
        return m
