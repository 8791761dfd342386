"""The wake-up RTL against ``hts.models.wakeup``, cycle by cycle.

The testbench plays the rest of the scheduler: it allocates tags the wake-up does not
hold, lets one task at a time search the tracker a row a cycle and register with the
live producers of the row whose lists have room (decode's rule), and releases live tags
at random, waiters mid-search and producers with lists alike (broadcasts and squashes
look the same here). Every cycle the counts, lists' lengths, held tags, the woken tag
and the waiter's readiness must equal the model's.
"""

import random

import pytest
from rtl_sim import run

from hts.base.config import load_config, with_values
from hts.hdl.wakeup import WakeUp
from hts.models.wakeup import WakeUp as WakeUpModel

pytestmark = pytest.mark.rtl

# default: two rows of eight lanes; odd: three rows of five lanes, the last short, and
# lists of three slots, so that lists fill.
CONFIGS = {"default": {}, "odd": {"hts.tracker_lanes": 5, "hts.successor_slots": 3}}


def bits(tags) -> int:
    return sum(1 << tag for tag in tags)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seed", range(6))
def test_wakeup_matches_the_model(seed, name):
    rng = random.Random(seed)
    config = with_values(load_config("default"), CONFIGS[name])
    hts = config.hts
    tags, lanes, rows, slots = hts.tracker_entries, hts.search_lanes, hts.tracker_rows, hts.successor_slots
    dut = WakeUp(config)
    model = WakeUpModel(tags, slots)
    live: set[int] = set()
    search = None                      # [waiter, row]
    counts = {"woken": 0, "walked a squashed waiter": 0, "ready at enqueue": 0, "waiting at enqueue": 0,
              "held by a count": 0}
    # Short lists fill (and decode's rule then holds searches back); long ones queue walks.
    counts["list full" if slots < 4 else "walks queued"] = 0

    async def bench(ctx):
        nonlocal search
        for cycle in range(600):
            where = f"seed {seed}, cycle {cycle}"
            held = model.held()
            assert ctx.get(dut.held) == bits(held), where
            for tag in range(tags):
                assert ctx.get(dut.pending[tag]) == model.pending[tag], (where, tag)
                assert ctx.get(dut.length[tag]) == len(model.successors[tag]), (where, tag)
            ctx.set(dut.tracked, bits(live))
            full = model.successors_full(live)
            assert ctx.get(dut.successors_full) == full, where
            if "list full" in counts:
                counts["list full"] += full
            counts["held by a count"] += any(model.pending[tag] and tag not in live for tag in range(tags))
            if "walks queued" in counts:
                counts["walks queued"] += len(model.to_walk) + (model.walking is not None) > 1

            # A search starts when none goes on and no list is (nearly) full, on a tag not held.
            free = [tag for tag in range(tags) if tag not in live and tag not in held]
            if search is None and free and not full and rng.random() < 0.6:
                waiter = rng.choice(free)
                live.add(waiter)
                search = [waiter, 0]
            producers = set()
            if search is not None:
                waiter, row = search
                in_row = range(row * lanes, min(tags, (row + 1) * lanes))
                producers = {tag for tag in in_row if tag in live and tag != waiter and rng.random() < 0.5
                             and len(model.successors[tag]) < slots}
            ctx.set(dut.register, search is not None)
            ctx.set(dut.waiter, search[0] if search else 0)
            ctx.set(dut.search_row, search[1] if search else 0)
            ctx.set(dut.producers, bits(producers))
            # Now and then a squash-like burst releases many tags in one cycle.
            rate = 0.5 if rng.random() < 0.04 else 0.08
            released = {tag for tag in live if rng.random() < rate}
            ctx.set(dut.release, bits(released))
            assert ctx.get(dut.row_found) == len(producers), where

            woken = model.end_of_cycle(search[0] if search and producers else None, producers, released)
            assert (ctx.get(dut.woken.valid), ctx.get(dut.woken.tag) if woken is not None else None) == \
                (woken is not None, woken), where
            if woken is not None:
                counts["woken"] += woken in live
                counts["walked a squashed waiter"] += woken not in live
            if search is not None:
                waiter, row = search
                if row == rows - 1 and waiter not in released:
                    ready = not model.pending[waiter]
                    assert ctx.get(dut.waiter_ready) == ready, where
                    counts["ready at enqueue" if ready else "waiting at enqueue"] += 1
                search = None if row == rows - 1 or waiter in released else [waiter, row + 1]
            live.difference_update(released)
            await ctx.tick()
        assert all(counts.values()), counts

    run(dut, bench)
