"""General-purpose register bank of one process, with speculation checkpoints.

RTL of ``hts.models.gpr``: values in distributed RAM, and a map of which RAM holds each
register, which checkpoints copy (docs/microarchitecture.md, "Decode's cycle").
"""

from amaranth.hdl import Assert, Cat, MemoryData, Module, ResetSignal, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for
from hts.isa import REGISTER_BITS

from .mutation import mutable
from .primitives import lowest_set, mux_tree, record_ram, select

__all__ = ["GPRBank", "READ_PORTS", "COUNTER_PORT", "OPERANDS"]

# Decode reads R[A], R[B], R[C] of the next queue head a cycle ahead (ports 0-2), and
# the counter of the loop top for ``lend`` (port 3).
READ_PORTS = 4
COUNTER_PORT = 3
OPERANDS = 3

# Code 0 of a register's map: it holds zero, in no RAM (a process starts from here).
ZERO = 0


class GPRBank(wiring.Component):
    """``hts.gprs`` registers of ``REGISTER_BITS`` bits and ``hts.spec_ids`` checkpoints.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    read_index, read_value : In, Out
        ``READ_PORTS`` reads: the next head's A, B, C and ``lend``'s counter.
    write_en, write_index, write_value : In
        A register written at the edge, into a RAM no live checkpoint names for it.
    checkpoint_en, checkpoint_slot, live : In
        Copy the map into a slot; the slots a restore may still read.
    restore_en, restore_slot : In
        The map comes back from a live slot (never with a write).
    expect_en, expect_index, expect_value : In
        Simulation only: an assertion on three registers, dropped with its ports in synthesis.
    """

    def __init__(self, config: SystemConfig):
        hts = config.hts
        self._slots = hts.spec_ids
        self._count = hts.gprs
        self._rams = [MemoryData(shape=REGISTER_BITS, depth=max(2, hts.gprs), init=[])
                      for _ in range(hts.spec_ids + 1)]
        self._map = data.ArrayLayout(bits_for(len(self._rams) + 1), hts.gprs)
        self._codes = Signal(self._map, name="codes")
        index = config.widths.gpr_index
        slot = bits_for(hts.spec_ids)
        super().__init__({
            "read_index": In(data.ArrayLayout(index, READ_PORTS)),
            "read_value": Out(data.ArrayLayout(REGISTER_BITS, READ_PORTS)),
            "write_en": In(1),
            "write_index": In(index),
            "write_value": In(REGISTER_BITS),
            "checkpoint_en": In(1),
            "checkpoint_slot": In(slot),
            "live": In(hts.spec_ids),
            "restore_en": In(1),
            "restore_slot": In(slot),
            "expect_en": In(1),
            "expect_index": In(data.ArrayLayout(index, OPERANDS)),
            "expect_value": In(data.ArrayLayout(REGISTER_BITS, OPERANDS)),
        })

    def elaborate(self, platform):
        m = Module()
        codes = self._codes
        # No reset, at rst or a start: a snapshot is read only by a live checkpoint's restore.
        snapshots = Signal(data.ArrayLayout(self._map, self._slots), reset_less=True)
        target = self._write_target(m, snapshots)
        writes = [self.write_en & (target == ram + 1) for ram in range(len(self._rams))]
        indices = [*self.read_index, *self.expect_index]
        words = [record_ram(m, f"ram{ram}", REGISTER_BITS, contents.depth, self.write_index, write,
                            self.write_value, indices, contents=contents)
                 for ram, (contents, write) in enumerate(zip(self._rams, writes))]
        values = [self._read(codes, index, [ram_words[port] for ram_words in words])
                  for port, index in enumerate(indices)]
        m.d.comb += self.read_value.eq(Cat(*values[:READ_PORTS]))

        # Checked at the edge, where the operations land; a reset cycle lands none of them.
        m.d.sync += [
            Assert(ResetSignal() | ~(self.restore_en & self.write_en), "GPR restore together with a write"),
            Assert(ResetSignal() | ~self.restore_en | self.live.bit_select(self.restore_slot, 1),
                   "GPR restore of a free slot"),
            Assert(ResetSignal() | ~self.expect_en | (Cat(*values[READ_PORTS:]) == self.expect_value.as_value()),
                   "operands read ahead are stale"),
        ]
        with m.If(self.checkpoint_en):
            m.d.sync += snapshots[self.checkpoint_slot].eq(codes)
        # Never together with a write (asserted above); were it, the squashed path's write
        # would be the one to drop.
        with m.If(mutable("gpr_restore_lost", self.restore_en, 0)):
            m.d.sync += codes.eq(snapshots[self.restore_slot])
        with m.Elif(self.write_en):
            m.d.sync += codes[self.write_index].eq(target)
        return m

    def _write_target(self, m: Module, snapshots):
        """The code of the RAM a write goes to: the lowest no live checkpoint, nor this cycle's, names."""
        index = self.write_index
        claims = [(mutable("gpr_write_over_checkpoint", self.live[slot], 0), mux_tree(snapshots[slot], index))
                  for slot in range(self._slots)]
        claims.append((self.checkpoint_en, mux_tree(self._codes, index)))
        taken = Cat(*(Cat(*(enabled & (code == ram + 1) for enabled, code in claims)).any()
                      for ram in range(len(self._rams))))
        target = Signal(range(len(self._rams) + 1), name="write_target")
        m.d.comb += target.eq(lowest_set(~taken) + 1)
        return target

    @staticmethod
    def _read(codes, index, ram_words):
        """The register ``index`` names: the word of the RAM its code names, zero for :data:`ZERO`."""
        code = mux_tree(codes, index)
        return select([code == ram + 1 for ram in range(len(ram_words))], ram_words)

    def peek(self, ctx) -> list[int]:
        """The registers, as a testbench's simulation context reads them now."""
        codes = ctx.get(self._codes)
        return [0 if codes[index] == ZERO else ctx.get(self._rams[codes[index] - 1][index])
                for index in range(self._count)]
