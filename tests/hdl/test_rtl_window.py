"""The dispatch window RTL against ``hts.models.window`` as models/hts.py drives it, cycle by cycle."""

import random
from collections import Counter

import pytest
from configs import config_named
from queue_model import (CONFIGS, VARIANTS, ModelSurroundings, TaskSource, assert_contents,
                         doomed_tags, drive_end_of_cycle, record_fields, tags_of, task_fields, task_record)
from rtl_sim import run

from hts.hdl.window import DispatchWindow

pytestmark = pytest.mark.rtl

CYCLES = 300


@pytest.mark.parametrize("preset", CONFIGS)
@pytest.mark.parametrize("seed", range(3))
def test_window_matches_model(preset, seed):
    config = config_named(preset, VARIANTS)
    hts = config.hts
    dut, rng = DispatchWindow(config), random.Random(seed)
    model = ModelSurroundings(config)
    window, source = model.window, TaskSource(config, rng)
    seen = Counter()                   # what the stimulus exercised, so the test cannot pass idle

    async def bench(ctx):
        next_squash = 0
        for cycle in range(CYCLES):
            where = f"{preset}, seed {seed}, cycle {cycle}"
            room = window.capacity - len(window.tasks)
            # Stations clogged for a while, then draining, so the window both fills and empties.
            clogged = 0.9 if cycle // 40 % 2 else 0.3
            station_room = [0 if rng.random() < clogged else rng.randrange(1, hts.rs_entries + 1)
                            for _ in config.accelerators]
            # The branch unit registers its squash: the queue hears of it a cycle ahead. Rarer
            # while clogged, so that a system of few speculation IDs still fills the window.
            squash_rate = 0.03 if clogged > 0.5 else 0.1
            squash, next_squash = next_squash, source.spec_ids() if rng.random() < squash_rate else 0
            confirm = source.spec_ids() & ~squash if rng.random() < 0.1 else 0
            free = source.free_tags(window.tasks)
            appended = source.task(rng.choice(free), window.tasks) if room and free and rng.random() < 0.6 else None
            arriving = [appended] if appended else []
            start = {task.tag: task_fields(task) for task in window.tasks}

            # The model, in the order of HTSModel.step: squash, issue, decode, end of cycle.
            squashed = model.squash(squash)
            waiting = [task.tag for task in window.tasks]
            moved = model.dispatch.issue(window, model.stations, list(station_room))
            issued = [task.tag for task in moved]
            for station in model.stations:        # not under test: issued tasks leave the picture
                station.tasks.clear()
            window.tasks.extend(arriving)
            woken = model.woken_tag(rng)

            ctx.set(dut.station_room, station_room)
            ctx.set(dut.append, appended is not None)
            if appended is not None:
                ctx.set(dut.append_task, task_record(appended))
            drive_end_of_cycle(ctx, dut, next_squash, confirm, woken)
            assert ctx.get(dut.room) == room, where
            assert doomed_tags(ctx, dut) == tags_of(squashed), where
            assert ctx.get(dut.issue_valid) == (1 << len(issued)) - 1, where
            assert list(ctx.get(dut.issue_to)) == [1 << task.class_index for task in moved] + [0] * (
                hts.dispatch_width - len(moved)), where
            issue_task = ctx.get(dut.issue_task)
            for position, task in enumerate(moved):
                assert record_fields(issue_task[position]) == start[task.tag], f"{where}, issue {position}"

            model.end_of_cycle(woken, confirm, appended)
            await ctx.tick()
            assert_contents(ctx, dut, window.tasks, where)
            left = [position for position, tag in enumerate(waiting) if tag not in issued]
            seen.update(issued=len(issued), squashed=len(squashed), full=not room,
                        woken=woken in [task.tag for task in window.tasks],
                        several_issued=len(issued) > 1,
                        passed_older=any(waiting.index(tag) > min(left) for tag in issued) if left else False)

    run(dut, bench)
    # A younger task passes an older one whose station is full (there is no younger one in
    # a one-entry window); several ways issue together.
    exercised = ("issued", "squashed", "full", "woken") + (
        ("passed_older",) if hts.window > 1 else ()) + (
        ("several_issued",) if hts.dispatch_width > 1 else ())
    assert all(seen[what] for what in exercised), seen
