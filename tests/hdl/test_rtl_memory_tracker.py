"""The memory tracker RTL against ``hts.models.memory_tracker``, cycle by cycle."""

import random

import pytest
from rtl_sim import region_value, run

from hts.hdl.memory_tracker import MemoryTracker
from hts.models.memory_tracker import MemoryTracker as Model, TrackerEntry


def random_region(rng: random.Random) -> tuple[int, int]:
    # A small address space, so that partial overlaps, touching ends and empty regions
    # all occur often.
    return rng.randrange(0, 24), rng.choice([0, 1, 1, 2, 3, 8])


@pytest.mark.parametrize("preset", ["default", "tiny"])
@pytest.mark.parametrize("seed", range(3))
def test_tracker_matches_model(request, preset, seed):
    config = request.getfixturevalue(f"{preset}_config")
    count = config.hts.tracker_entries
    dut, model, rng = MemoryTracker(config), Model(count), random.Random(seed)
    ages: dict[int, int] = {}          # tag -> decode order, for the age matrix

    async def bench(ctx):
        for cycle in range(400):
            reads, writes = random_region(rng), random_region(rng)
            valid = [tag for tag, entry in enumerate(model.entries) if entry is not None]
            ignoring = {tag for tag in valid if rng.random() < 0.2}
            block = rng.randrange(0, 24)
            ctx.set(dut.query_reads, region_value(reads))
            ctx.set(dut.query_writes, region_value(writes))
            ctx.set(dut.ignoring, sum(1 << tag for tag in ignoring))
            ctx.set(dut.branch_block, block)

            where = f"seed {seed}, cycle {cycle}"
            expected = model.dependences(reads, writes, frozenset(ignoring))
            assert ctx.get(dut.depends) == sum(1 << tag for tag in expected), where
            assert ctx.get(dut.writers) == sum(1 << t for t in model.writers_of(block, frozenset(ignoring))), where
            has_free = None in model.entries
            assert ctx.get(dut.has_free) == has_free, where
            if has_free:
                assert ctx.get(dut.free_tag) == model.free_tag(), where
            older = ctx.get(dut.older)
            for j in valid:
                row = {i for i in valid if older[j] >> i & 1}
                assert row == {i for i in valid if ages[i] < ages[j]}, where

            allocate = has_free and rng.random() < 0.6
            released = {tag for tag in valid if rng.random() < 0.25}
            entry = TrackerEntry(rng.randrange(config.hts.processes), reads, writes)
            ctx.set(dut.alloc, allocate)
            ctx.set(dut.alloc_entry, {"pid": entry.pid, "reads": region_value(reads),
                                      "writes": region_value(writes)})
            ctx.set(dut.release, sum(1 << tag for tag in released))
            await ctx.tick()
            if allocate:
                tag = model.free_tag()
                model.allocate(tag, entry)
                ages[tag] = cycle
            for tag in released:
                model.free(tag)
            assert ctx.get(dut.valid) == sum(1 << t for t, e in enumerate(model.entries) if e is not None), where

    run(dut, bench)
