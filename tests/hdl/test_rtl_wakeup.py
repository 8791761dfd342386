"""The wake-up RTL against ``hts.models.wakeup``, cycle by cycle.

The testbench plays the rest of the scheduler: it allocates tags the wake-up does not
hold, lets one task at a time search the tracker a row a cycle and register with the
live producers of the row whose lists have room (decode's rule), and releases live tags
at random, waiters mid-search, producers just found and producers as the waiter joins
their lists alike (broadcasts and squashes look the same here). Every cycle the counts,
lists' lengths, staged registration, held tags, the woken tag and the waiter's readiness
must equal the model's.
"""

import random

import pytest
from rtl_sim import run

from hts.base.config import load_config, with_values
from hts.hdl.wakeup import WakeUp
from hts.models.wakeup import WakeUp as WakeUpModel

pytestmark = pytest.mark.rtl

# default: two rows of eight lanes; odd: four rows of five lanes, the last short, and
# lists of three slots, so that lists fill.
CONFIGS = {"default": {}, "odd": {"hts.tracker_lanes": 5, "hts.successor_slots": 3}}


def bits(tags) -> int:
    return sum(1 << tag for tag in tags)


class Lockstep:
    """The RTL and the model side by side; ``cycle`` drives one cycle of both and compares."""

    def __init__(self, ctx, dut, model, config):
        self.ctx, self.dut, self.model = ctx, dut, model
        self.lanes, self.rows = config.hts.search_lanes, config.hts.tracker_rows
        self.ready = None          # the waiter's readiness in its last row, last cycle

    def staged(self) -> tuple[int | None, frozenset[int]]:
        return self.model.staged or (None, frozenset())

    def check_state(self, where):
        ctx, dut, model = self.ctx, self.dut, self.model
        assert ctx.get(dut.held) == bits(model.held()), where
        for tag, count in enumerate(model.pending):
            assert ctx.get(dut.pending[tag]) == count, (where, tag)
            assert ctx.get(dut.length[tag]) == len(model.successors[tag]), (where, tag)
        waiter, staged = self.staged()
        assert ctx.get(dut.staged_lanes) == sum(1 << (tag % self.lanes) for tag in staged), where
        if staged:
            assert ctx.get(dut.staged_waiter) == waiter, where

    async def cycle(self, where, live, search, producers, released) -> int | None:
        """One cycle with the search ``[waiter, row]`` (or None) finding ``producers``; the
        tag woken; asserts the waiter's readiness when its last row is searched."""
        ctx, dut, model = self.ctx, self.dut, self.model
        ctx.set(dut.tracked, bits(live))
        assert ctx.get(dut.successors_full) == model.successors_full(live), where
        ctx.set(dut.register, search is not None)
        ctx.set(dut.waiter, search[0] if search else 0)
        ctx.set(dut.search_row, search[1] if search else 0)
        ctx.set(dut.producers, bits(producers))
        ctx.set(dut.release, bits(released))
        assert ctx.get(dut.row_found) == len(producers), where
        woken = model.end_of_cycle(search[0] if search else None, producers, released)
        assert (ctx.get(dut.woken.valid), ctx.get(dut.woken.tag) if woken is not None else None) == \
            (woken is not None, woken), where
        self.ready = None
        if search is not None and search[1] == self.rows - 1 and search[0] not in released:
            self.ready = not model.waits(search[0])
            assert ctx.get(dut.waiter_ready) == self.ready, where
        await ctx.tick()
        return woken


def bench_for(config):
    hts = config.hts
    dut = WakeUp(config)
    return dut, WakeUpModel(hts.tracker_entries, hts.successor_slots)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seed", range(6))
def test_wakeup_matches_the_model(seed, name):
    rng = random.Random(seed)
    config = with_values(load_config("default"), CONFIGS[name])
    hts = config.hts
    tags, lanes, rows, slots = hts.tracker_entries, hts.search_lanes, hts.tracker_rows, hts.successor_slots
    dut, model = bench_for(config)
    live: set[int] = set()
    search = None                      # [waiter, row]
    counts = {"woken": 0, "walked a squashed waiter": 0, "ready at enqueue": 0, "waiting at enqueue": 0,
              "held by a count": 0, "found and released": 0, "joined as released": 0}
    # Short lists fill (and decode's rule then holds searches back); long ones queue walks.
    counts["list full" if slots < 4 else "walks queued"] = 0

    async def bench(ctx):
        nonlocal search
        both = Lockstep(ctx, dut, model, config)
        for cycle in range(600):
            where = f"seed {seed}, cycle {cycle}"
            both.check_state(where)
            held = model.held()
            full = model.successors_full(live)
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
            _, staged = both.staged()
            producers = set()
            if search is not None:
                waiter, row = search
                in_row = range(row * lanes, min(tags, (row + 1) * lanes))
                producers = {tag for tag in in_row if tag in live and tag != waiter and rng.random() < 0.5
                             and len(model.successors[tag]) + (tag in staged) < slots}
            # Now and then a squash-like burst releases many tags in one cycle; a producer
            # released as the waiter joins its list is walked with the waiter in it.
            rate = 0.5 if rng.random() < 0.04 else 0.08
            released = {tag for tag in live if rng.random() < rate}
            released |= {tag for tag in staged if tag in live and rng.random() < 0.3}
            counts["found and released"] += bool(producers & released)
            counts["joined as released"] += bool(staged & released)
            # As the enqueue stage does, a waiter squashed now registers nothing.
            registering = search if search is not None and search[0] not in released else None

            woken = await both.cycle(where, live, registering, producers if registering else set(), released)
            if woken is not None:
                counts["woken"] += woken in live
                counts["walked a squashed waiter"] += woken not in live
            if both.ready is not None:
                counts["ready at enqueue" if both.ready else "waiting at enqueue"] += 1
            if search is not None:
                waiter, row = search
                search = None if row == rows - 1 or waiter in released else [waiter, row + 1]
            live.difference_update(released)
        assert all(counts.values()), counts

    run(dut, bench)


def test_a_waiter_woken_as_it_joins_again_stays_asleep():
    """A task searching four rows finds P in row 1 and Q in row 3. P is released as the task
    joins its list, so the walker decrements the task's count to zero at the very edge its
    row-3 registration joins Q's list: it is not woken, and waits for Q."""
    config = with_values(load_config("default"), {"hts.tracker_lanes": 4})
    assert config.hts.tracker_rows == 4
    dut, model = bench_for(config)
    waiter, p, q = 0, 5, 13
    live = {waiter, p, q}
    # Per cycle: the search row and what it finds, the tags released at the edge.
    script = [(0, set(), set()), (1, {p}, set()), (2, set(), {p}), (3, {q}, set()), (None, set(), set()),
              (None, set(), {q}), (None, set(), set()), (None, set(), set())]

    async def bench(ctx):
        both = Lockstep(ctx, dut, model, config)
        wakes = []
        for cycle, (row, producers, released) in enumerate(script):
            both.check_state(f"cycle {cycle}")
            if cycle == 4:
                assert model.reading == waiter and model.pending[waiter] == 1 and model.staged == (waiter, {q})
            search = None if row is None else [waiter, row]
            wakes.append(await both.cycle(f"cycle {cycle}", live, search, producers, released))
            if cycle == 3:
                assert both.ready is False
            live.difference_update(released)
        assert wakes == [None] * 7 + [waiter]

    run(dut, bench)
