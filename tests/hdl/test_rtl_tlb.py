"""The Task Lookup Buffer RTL against ``hts.models.tlb``, cycle by cycle."""

import dataclasses
import random

import pytest
from rtl_sim import region_value, run

from hts.hdl.tlb import TaskLookupBuffer
from hts.models.tlb import TaskLookupBuffer as Model


def home_region(rng: random.Random) -> tuple[int, int]:
    return rng.randrange(0, 16), rng.choice([0, 1, 1, 2, 3])


def entry_value(entry) -> dict:
    return {"pid": entry.pid, "home": region_value(entry.home), "tm_base": entry.tm_base, "mask": entry.mask,
            "producer": entry.producer, "producer_done": int(entry.producer_done)}


def bits(items) -> int:
    return sum(1 << item for item in set(items))


# The default TLB simulates slowly (16 entries, each searched against 16 tracker ranges):
# one seed there, more on the small ones.
@pytest.mark.parametrize("preset,seed", [("default", 0), *((preset, seed) for preset in ("tiny", "small")
                                                           for seed in range(3))])
def test_tlb_matches_model(request, preset, seed):
    if preset == "small":    # small TM, so that room runs out and the pointer resets
        base = request.getfixturevalue("default_config")
        config = dataclasses.replace(base, hts=dataclasses.replace(base.hts, tlb_entries=4, tm_blocks=6))
    else:
        config = request.getfixturevalue(f"{preset}_config")
    hts, home_blocks = config.hts, config.memory.blocks
    dut, rng = TaskLookupBuffer(config), random.Random(seed)
    model = Model(hts.tlb_entries, hts.tm_blocks, home_blocks)
    tags, spec_bits = range(hts.tracker_entries), (1 << hts.spec_ids) - 1

    def physical(rng):
        # Tracker regions are physical: home, or TM just above it.
        base, blocks = home_region(rng)
        return (base + home_blocks if rng.random() < 0.3 else base), blocks

    async def bench(ctx):
        for cycle in range(120 if preset == "default" else 200):
            where = f"seed {seed}, cycle {cycle}"
            read, write, block = home_region(rng), home_region(rng), rng.randrange(0, 20)
            blocks = rng.choice([1, 2, 3])
            tracker = {tag: (physical(rng), physical(rng)) for tag in tags if rng.random() < 0.3}
            retargetable = {tag for tag in tags if rng.random() < 0.7}
            ctx.set(dut.read_region, region_value(read))
            ctx.set(dut.write_region, region_value(write))
            ctx.set(dut.branch_block, block)
            ctx.set(dut.alloc_blocks, blocks)
            ctx.set(dut.tracker_valid, bits(tracker))
            for tag, (reads, writes) in tracker.items():
                ctx.set(dut.tracker_entries[tag], {"pid": 0, "reads": region_value(reads),
                                                   "writes": region_value(writes)})
            ctx.set(dut.retargetable_tags, bits(retargetable))

            youngest = model.youngest_overlapping(read)
            assert ctx.get(dut.read_hit) == (youngest is not None), where
            if youngest is not None:
                assert ctx.get(dut.read_exact) == (youngest.home == read), where
                assert ctx.get(dut.read_tm_base) == youngest.tm_base, where
            assert ctx.get(dut.write_hit) == model.any_overlapping(write), where
            assert ctx.get(dut.branch_phys) == model.translate_block(block), where
            room = model.has_room(blocks)
            assert ctx.get(dut.has_room) == room, where
            assert ctx.get(dut.alloc_tm_base) == home_blocks + model.tm_next, where
            busy = [(tag, region) for tag, regions in tracker.items() for region in regions]
            copy = model.copyable([region for _, region in busy])
            retarget = model.retargetable(busy, retargetable)
            assert ctx.get(dut.copy_valid) == (copy is not None), where
            if copy is not None:
                assert ctx.get(dut.copy_index) == model.entries.index(copy), where
            assert ctx.get(dut.retarget_valid) == (retarget is not None), where
            if retarget is not None:
                assert ctx.get(dut.retarget_index) == model.entries.index(retarget), where

            allocate = room and rng.random() < 0.5
            pid, home, producer = rng.randrange(hts.processes), home_region(rng), rng.choice(tags)
            mask = rng.randrange(1, spec_bits + 1)
            broadcast = {tag for tag in tags if rng.random() < 0.3}
            confirm = rng.randrange(0, spec_bits + 1) if rng.random() < 0.3 else 0
            drop = rng.randrange(0, spec_bits + 1) & ~confirm if rng.random() < 0.1 else 0
            removed = [entry for entry in (copy, retarget) if entry is not None and rng.random() < 0.5]
            tm_idle = rng.random() < 0.5
            ctx.set(dut.alloc, allocate)
            ctx.set(dut.alloc_entry, {"pid": pid, "home": region_value((home[0], blocks)), "mask": mask,
                                      "producer": producer})
            ctx.set(dut.broadcast, bits(broadcast))
            ctx.set(dut.confirm, confirm)
            ctx.set(dut.drop, drop)
            ctx.set(dut.remove, bits(model.entries.index(entry) for entry in removed))
            ctx.set(dut.tm_idle, tm_idle)
            await ctx.tick()

            # The model's order: decode allocates during the cycle, the rest at its end.
            if allocate:
                model.allocate(cycle, pid, (home[0], blocks), mask, producer)
            for entry in model.entries:
                if entry.producer in broadcast:
                    entry.producer_done = True
                entry.mask &= ~confirm
            model.entries = [entry for entry in model.entries if not entry.mask & drop]
            for entry in removed:
                model.entries.remove(entry)
            if not model.entries and tm_idle:
                model.tm_next = 0
            valid = ctx.get(dut.valid)
            assert valid == (1 << len(model.entries)) - 1, where
            for index, entry in enumerate(model.entries):
                got = ctx.get(dut.entries[index])
                assert {name: (int(got[name]) if name != "home" else region_value((int(got.home.base),
                                                                                    int(got.home.blocks))))
                        for name in entry_value(entry)} == entry_value(entry), f"{where}, entry {index}"

    run(dut, bench)
