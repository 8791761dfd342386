"""The GPR bank RTL against ``hts.models.gpr``, checkpoints included, cycle by cycle."""

import random

import pytest
from rtl_sim import assert_caught, run

from hts.hdl.gpr import READ_PORTS, GPRBank
from hts.isa import REGISTER_BITS
from hts.models.gpr import GPRBank as Model

CYCLES = 400


@pytest.mark.parametrize("preset", ["default", "tiny"])
@pytest.mark.parametrize("seed", range(3))
def test_gpr_bank_matches_model(request, preset, seed):
    config = request.getfixturevalue(f"{preset}_config")
    count, slots = config.hts.gprs, config.hts.spec_ids
    dut, model, rng = GPRBank(config), Model(count), random.Random(seed)
    snapshots: dict[int, tuple[int, ...]] = {}      # slot -> what the model's branch keeps

    async def bench(ctx):
        for cycle in range(CYCLES):
            where = f"seed {seed}, cycle {cycle}"
            assert list(ctx.get(dut.values)) == model.values, where
            indices = [rng.randrange(count) for _ in range(READ_PORTS)]
            ctx.set(dut.read_index, indices)
            assert list(ctx.get(dut.read_value)) == [model[index] for index in indices], where

            # One of: decode writes a register, the branch unit restores (the process
            # decodes nothing), or idle; and apart from that, in most cycles, decode copies
            # the bank (as at the start of the cycle) into a free ID's slot.
            action = rng.choices(["write", "restore", "idle"], [6, 2 if snapshots else 0, 1])[0]
            checkpoint = rng.random() < 0.7
            index, value, slot = rng.randrange(count), rng.getrandbits(REGISTER_BITS), rng.randrange(slots)
            restore_slot = rng.choice(list(snapshots)) if snapshots else 0
            ctx.set(dut.write_en, action == "write")
            ctx.set(dut.write_index, index)
            ctx.set(dut.write_value, value)
            ctx.set(dut.checkpoint_en, checkpoint)
            ctx.set(dut.checkpoint_slot, slot)
            ctx.set(dut.restore_en, action == "restore")
            ctx.set(dut.restore_slot, restore_slot)
            await ctx.tick()
            restored = snapshots.get(restore_slot)        # the slot as at the start of the cycle
            if checkpoint:
                snapshots[slot] = model.snapshot()
            if action == "write":
                model[index] = value
            elif action == "restore":
                model.restore(restored)

    run(dut, bench)


def test_a_restore_with_a_write_is_caught(tiny_config):
    assert_caught(GPRBank(tiny_config), ("restore_en", "write_en"), "GPR")
