"""The accelerator status register RTL against ``hts.models.asr``, cycle by cycle."""

import random
from types import SimpleNamespace

import pytest
from configs import preset
from rtl_sim import run

from hts.hdl.asr import AcceleratorStatus
from hts.hdl.interfaces import flat_instance, instance_numbering
from hts.models.asr import AcceleratorStatus as Model

pytestmark = pytest.mark.rtl


def running(class_index: int, instance: int) -> SimpleNamespace:
    # The model's ASR reads only these fields of a Running.
    return SimpleNamespace(task=SimpleNamespace(class_index=class_index), instance=instance)


def test_flat_numbering_is_class_major(default_config):
    numbering = instance_numbering(default_config)
    assert numbering == sorted(numbering)
    assert [flat_instance(default_config, c, i) for c, i in numbering] == list(range(len(numbering)))


@pytest.mark.parametrize("name", ["default", "tiny"])
@pytest.mark.parametrize("seed", range(3))
def test_asr_matches_model(name, seed):
    config = preset(name)
    counts = [acc.count for acc in config.accelerators]
    dut, model, rng = AcceleratorStatus(config), Model(counts), random.Random(seed)
    numbering = instance_numbering(config)

    async def bench(ctx):
        for cycle in range(300):
            where = f"seed {seed}, cycle {cycle}"
            # Phases of light and heavy load, so that classes both fill up and drain.
            if cycle % 50 == 0:
                occupy_rate, release_rate = rng.choice([(0.2, 0.5), (0.6, 0.1), (0.4, 0.3)])
            occupy = []
            for class_index in range(len(counts)):
                free = model.free_instance(class_index)
                assert ctx.get(dut.has_free[class_index]) == (free is not None), where
                if free is not None:
                    assert ctx.get(dut.free_instance[class_index]) == free, where
                    if rng.random() < occupy_rate:
                        # The dispatch arbiter takes the lowest free instance; any free one must work.
                        slots = model.busy[class_index]
                        chosen = free if rng.random() < 0.7 else rng.choice(
                            [i for i, slot in enumerate(slots) if slot is None])
                        occupy.append((class_index, chosen))
            busy = [(c, i) for c, i in numbering if model.busy[c][i] is not None]
            released = [(c, i) for c, i in busy if rng.random() < release_rate]
            for class_index in range(len(counts)):
                chosen = [i for c, i in occupy if c == class_index]
                ctx.set(dut.occupy[class_index], {"valid": bool(chosen), "instance": chosen[0] if chosen else 0})
            ctx.set(dut.release, sum(1 << flat_instance(config, c, i) for c, i in released))
            await ctx.tick()
            for class_index, instance in occupy:
                model.occupy(running(class_index, instance))
            for class_index, instance in released:
                model.release(class_index, instance)
            expected = sum(1 << flat for flat, (c, i) in enumerate(numbering) if model.busy[c][i] is not None)
            assert ctx.get(dut.busy) == expected, where

    run(dut, bench)
