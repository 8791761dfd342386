"""Formal harness of the GPR bank (``hts.hdl.gpr``): its RAMs and map read as a bank of
flip-flops with whole-bank snapshots would, the bank the model keeps."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data

from hts.hdl.gpr import GPRBank, READ_PORTS
from hts.isa import REGISTER_BITS

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["GprHarness"]


class GprHarness(Harness):
    """The bank with decode and the branch unit left free, beside a reference bank of
    flip-flops that copies all its registers into a slot at a checkpoint and takes them
    back at a restore (``hts.models.gpr``, and this block before it moved to RAM).

    The free inputs keep decode's contract: a checkpoint goes into a slot (one of
    ``spec_ids``) no restore may read; a slot turns live only in the cycle after a
    checkpoint into it, and any live slot may be freed; a restore reads a live slot and
    comes with no write; decode's operand check names what the registers hold. ``reads``
    checks every read port against the reference in every cycle, from reset, to a bounded
    depth: the RAMs' contents are not visible to an induction.
    """

    GROUPS = (PropertyGroup("reads", "bmc", 6, cover_depth=6),)
    ASSUMPTIONS = ("checkpoint_into_free_slot", "live_after_checkpoint", "restore_from_live_slot",
                   "restore_without_write", "expected_operands_held", "two_bit_values")

    def build(self, m: Module):
        hts = self.config.hts
        bank = m.submodules.bank = GPRBank(self.config)
        free_inputs(m, bank)
        values = Signal(data.ArrayLayout(REGISTER_BITS, hts.gprs))
        snapshots = Signal(data.ArrayLayout(values.shape(), hts.spec_ids))
        self._reference(m, bank, values, snapshots)

        slot_live = bank.live.bit_select(bank.checkpoint_slot, 1)
        self.assume(m, "checkpoint_into_free_slot",
                    ~bank.checkpoint_en | (bank.checkpoint_slot < hts.spec_ids) & ~slot_live)
        was_live, was_taken = Signal.like(bank.live), Signal.like(bank.live)
        m.d.sync += [was_live.eq(bank.live),
                     was_taken.eq(Cat(*(bank.checkpoint_en & (bank.checkpoint_slot == slot)
                                        for slot in range(hts.spec_ids))))]
        self.assume(m, "live_after_checkpoint", (bank.live & ~(was_live | was_taken)) == 0)
        self.assume(m, "restore_from_live_slot", ~bank.restore_en | bank.live.bit_select(bank.restore_slot, 1))
        self.assume(m, "restore_without_write", ~(bank.restore_en & bank.write_en))
        # The bank moves words whole, so what it does to two bits it does to 32; the
        # solver is spared the rest.
        self.assume(m, "two_bit_values", bank.write_value[2:] == 0)
        self.assume(m, "expected_operands_held", ~bank.expect_en | (Cat(*(
            values[index] for index in bank.expect_index)) == bank.expect_value.as_value()))

        self.check(m, "reads", "every_port_reads_its_register", Cat(*(
            bank.read_value[port] == values[bank.read_index[port]] for port in range(READ_PORTS))).all())
        self.cover(m, "reads", "restore_undoes_a_write",
                   bank.restore_en & (snapshots[bank.restore_slot].as_value() != values.as_value()))
        self.cover(m, "reads", "every_slot_live", bank.live.all())

    @staticmethod
    def _reference(m: Module, bank, values, snapshots):
        """The bank as flip-flops: zero after reset, a checkpoint copies every register."""
        with m.If(bank.checkpoint_en):
            m.d.sync += snapshots[bank.checkpoint_slot].eq(values)
        with m.If(bank.restore_en):
            m.d.sync += values.eq(snapshots[bank.restore_slot])
        with m.Elif(bank.write_en):
            m.d.sync += values[bank.write_index].eq(bank.write_value)
