"""The GPR bank RTL against ``hts.models.gpr``, checkpoints included, cycle by cycle."""

import random

import pytest
from rtl_sim import assert_caught, run

from hts.base.config import load_config
from hts.hdl.gpr import OPERANDS, READ_PORTS, GPRBank
from hts.isa import REGISTER_BITS
from hts.models.gpr import GPRBank as Model

pytestmark = pytest.mark.rtl

CYCLES = 400


@pytest.mark.parametrize("preset", ["default", "tiny", "large"])
@pytest.mark.parametrize("seed", range(3))
def test_gpr_bank_matches_model(preset, seed):
    config = load_config(preset)                    # large: 9 RAMs of 32 registers
    count, slots = config.hts.gprs, config.hts.spec_ids
    dut, model, rng = GPRBank(config), Model(count), random.Random(seed)
    snapshots: dict[int, tuple[int, ...]] = {}      # slot -> what the model's branch keeps
    live: set[int] = set()                          # slots a restore may read (decode's taken IDs)
    seen = {"restore": 0, "checkpoint taken with a write": 0, "all slots live": 0}

    async def bench(ctx):
        for cycle in range(CYCLES):
            where = f"seed {seed}, cycle {cycle}"
            assert dut.peek(ctx) == model.values, where
            indices = [rng.randrange(count) for _ in range(READ_PORTS)]
            ctx.set(dut.read_index, indices)
            assert list(ctx.get(dut.read_value)) == [model[index] for index in indices], where
            expected = [rng.randrange(count) for _ in range(OPERANDS)]
            ctx.set(dut.expect_en, 1)
            ctx.set(dut.expect_index, expected)
            ctx.set(dut.expect_value, [model[index] for index in expected])

            # One of: decode writes a register, the branch unit restores a live slot (the
            # process decodes nothing), or idle. Apart from that, in most cycles with a
            # free slot, decode copies the bank (as at the start of the cycle) into one,
            # and often takes it: the slot turns live, even beside a write, which the
            # bank allows. Live slots are freed at random (confirmed branches).
            action = rng.choices(["write", "restore", "idle"], [6, 1 if live else 0, 1])[0]
            free = sorted(set(range(slots)) - live)
            checkpoint = bool(free) and rng.random() < 0.7
            slot = rng.choice(free) if free else 0
            index, value = rng.randrange(count), rng.getrandbits(REGISTER_BITS)
            restore_slot = rng.choice(sorted(live)) if live else 0
            ctx.set(dut.live, sum(1 << taken for taken in live))
            ctx.set(dut.write_en, action == "write")
            ctx.set(dut.write_index, index)
            ctx.set(dut.write_value, value)
            ctx.set(dut.checkpoint_en, checkpoint)
            ctx.set(dut.checkpoint_slot, slot)
            ctx.set(dut.restore_en, action == "restore")
            ctx.set(dut.restore_slot, restore_slot)
            await ctx.tick()
            restored = snapshots.get(restore_slot)        # the slot as at the start of the cycle
            seen["all slots live"] += len(live) == slots
            live.difference_update({taken for taken in live if rng.random() < 0.03})
            if checkpoint:
                snapshots[slot] = model.snapshot()
                if rng.random() < 0.5:
                    live.add(slot)
                    seen["checkpoint taken with a write"] += action == "write"
            if action == "restore":
                model.restore(restored)
                live.discard(restore_slot)
                seen["restore"] += 1
            elif action == "write":
                model[index] = value

    run(dut, bench)
    assert all(seen.values()), f"seed {seed}: stimulus missed a case: {seen}"


def test_a_restore_with_a_write_is_caught(tiny_config):
    assert_caught(GPRBank(tiny_config), ("restore_en", "write_en", "live"), "GPR restore together with a write")


def test_a_restore_of_a_free_slot_is_caught(tiny_config):
    assert_caught(GPRBank(tiny_config), ("restore_en",), "GPR restore of a free slot")


def test_a_stale_operand_is_caught(tiny_config):
    """The registers start at zero; expecting 1 in register 0 trips decode's check."""
    dut = GPRBank(tiny_config)

    async def bench(ctx):
        ctx.set(dut.expect_en, 1)
        ctx.set(dut.expect_value, [1, 0, 0])
        await ctx.tick()

    with pytest.raises(AssertionError, match="operands read ahead are stale"):
        run(dut, bench)
