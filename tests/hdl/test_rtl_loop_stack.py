"""The loop stack RTL against ``hts.models.loop_stack``, checkpoints included, cycle by cycle."""

import dataclasses
import random

import pytest
from configs import preset
from rtl_sim import assert_caught, run

from hts.hdl.interfaces import loop_frame_layout
from hts.hdl.loop_stack import LoopStack
from hts.models.loop_stack import LoopFrame, LoopStack as Model

pytestmark = pytest.mark.rtl

CYCLES = 400


def random_frame(rng: random.Random, config) -> LoopFrame:
    trip_count_bits = loop_frame_layout(config)["remaining"].width
    return LoopFrame(body_start=rng.randrange(config.hts.program_words), counter=rng.randrange(config.hts.gprs),
                     remaining=rng.choice([0, 1, rng.randrange(1 << trip_count_bits), (1 << trip_count_bits) - 1]))


def legal_actions(model: Model, snapshots: dict) -> list[str]:
    """What decode or the branch unit may do to the stack this cycle (one thing at most;
    a checkpoint comes on top, drawn apart)."""
    actions = ["idle"]
    if len(model.frames) < model.depth:
        actions += ["push"] * 3
    if model.frames:
        actions += ["replace", "pop", "pop"]
    if snapshots:
        actions.append("restore")
    return actions


@pytest.mark.parametrize("name", ["default", "tiny"])
@pytest.mark.parametrize("seed", range(3))
def test_loop_stack_matches_model(name, seed):
    config = preset(name)
    slots = config.hts.spec_ids
    dut, model, rng = LoopStack(config), Model(config.hts.loop_depth), random.Random(seed)
    snapshots: dict[int, tuple[LoopFrame, ...]] = {}

    async def bench(ctx):
        for cycle in range(CYCLES):
            where = f"seed {seed}, cycle {cycle}"
            assert ctx.get(dut.depth) == len(model.frames), where
            assert ctx.get(dut.empty) == (not model.frames), where
            if model.frames:
                top = ctx.get(dut.top)
                assert LoopFrame(top.body_start, top.counter, top.remaining) == model.top(), where

            action = rng.choice(legal_actions(model, snapshots))
            # Decode copies the stack into a free ID's slot in most cycles, whatever else
            # happens; the copy is the stack at the start of the cycle.
            checkpoint = rng.random() < 0.7
            frame, slot = random_frame(rng, config), rng.randrange(slots)
            restore_slot = rng.choice(list(snapshots)) if snapshots else 0
            for port in ("push", "replace", "pop"):
                ctx.set(getattr(dut, port), action == port)
            ctx.set(dut.frame, dataclasses.asdict(frame))
            ctx.set(dut.checkpoint_en, checkpoint)
            ctx.set(dut.checkpoint_slot, slot)
            ctx.set(dut.restore_en, action == "restore")
            ctx.set(dut.restore_slot, restore_slot)
            await ctx.tick()
            restored = snapshots.get(restore_slot)        # the slot as at the start of the cycle
            if checkpoint:
                snapshots[slot] = model.snapshot()
            if action == "push":
                model.push(frame)
            elif action == "replace":
                model.replace_top(frame)
            elif action == "pop":
                model.pop()
            elif action == "restore":
                model.restore(restored)

    run(dut, bench)


@pytest.mark.parametrize("misuse", [("push", "pop"), ("restore_en", "push"), ("pop",), ("replace",)])
def test_misuse_is_caught(tiny_config, misuse):
    """Two operations in one cycle, or popping or replacing on an empty stack."""
    assert_caught(LoopStack(tiny_config), misuse, "loop stack")


def test_overflow_is_caught(tiny_config):
    dut = LoopStack(tiny_config)

    async def bench(ctx):
        ctx.set(dut.push, 1)
        for _ in range(tiny_config.hts.loop_depth + 1):
            await ctx.tick()

    with pytest.raises(AssertionError, match="overflow"):
        run(dut, bench)
