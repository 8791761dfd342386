"""The reservation station RTL against ``hts.models.reservation_station`` as models/hts.py drives it."""

import random
from collections import Counter

import pytest
from configs import config_named
from queue_model import (CONFIGS, VARIANTS, ModelSurroundings, TaskSource, assert_station_contents, doomed_tags,
                         drive_end_of_cycle, record_fields, tags_of, task_fields, task_record)
from rtl_sim import run

from hts.hdl.reservation_station import ReservationStation

pytestmark = pytest.mark.rtl

CYCLES = 300


@pytest.mark.parametrize("preset", CONFIGS)
@pytest.mark.parametrize("seed", range(3))
def test_station_matches_model(preset, seed):
    config = config_named(preset, VARIANTS)
    hts, width = config.hts, config.hts.dispatch_width
    dut, rng = ReservationStation(config), random.Random(seed)
    model = ModelSurroundings(config)
    class_index = seed % len(config.accelerators)
    station, source = model.stations[class_index], TaskSource(config, rng)
    seen = Counter()                   # what the stimulus exercised, so the test cannot pass idle

    async def bench(ctx):
        next_squash = 0
        for cycle in range(CYCLES):
            where = f"{preset}, seed {seed}, cycle {cycle}"
            room = station.capacity - len(station.tasks)
            # Fill faster than the arbiter takes for a while, then slower, so the station
            # both fills and empties.
            filling, taking = (0.8, 0.3) if cycle // 40 % 2 else (0.3, 0.7)
            free = source.free_tags(station.tasks)
            count = rng.randrange(min(width, room, len(free)) + 1) if rng.random() < filling else 0
            ports = sorted(rng.sample(range(width), count))     # the window's positions of this class
            inserted = [source.task(tag, station.tasks, class_index) for tag in rng.sample(free, count)]
            take = rng.random() < taking
            # The branch unit registers its squash: the queue hears of it a cycle ahead.
            squash, next_squash = next_squash, source.spec_ids() if rng.random() < 0.1 else 0
            confirm = source.spec_ids() & ~squash if rng.random() < 0.1 else 0

            # The model, in the order of HTSModel.step: squash, dispatch, issue, end of cycle.
            squashed = model.squash(squash)
            offer = station.first_ready()
            offered = offer and task_fields(offer)
            # Readiness order, not age: an older task woken later waits behind this one.
            passes_older = offer is not None and offer is not next(task for task in station.tasks if task.ready)
            if take and offer is not None:
                station.remove(offer)
            for task in inserted:
                station.arrive(task)
            woken = model.woken_tag(rng)

            ctx.set(dut.insert_valid, sum(1 << port for port in ports))
            ctx.set(dut.insert_task, [task_record(inserted[ports.index(port)]) if port in ports else {}
                                      for port in range(width)])
            ctx.set(dut.take, take)
            drive_end_of_cycle(ctx, dut, next_squash, confirm, woken)
            assert ctx.get(dut.room) == room, where
            assert doomed_tags(ctx, dut) == tags_of(squashed), where
            assert ctx.get(dut.offer_valid) == (offer is not None), where
            if offer is not None:
                assert record_fields(ctx.get(dut.offer_task)) == offered, where

            woken_here = any(task.tag == woken and not task.ready for task in station.tasks)
            model.end_of_cycle(woken, confirm)
            await ctx.tick()
            assert_station_contents(ctx, dut, station, where)
            seen.update(offered=offer is not None, taken=take and offer is not None, squashed=len(squashed),
                        woken=woken_here, passes_older=passes_older,
                        full=not room, several_inserted=count > 1, gap_inserted=ports != list(range(count)))

    run(dut, bench)
    # A single port cannot insert several tasks or leave a gap.
    exercised = ["offered", "taken", "squashed", "full", "woken"] + (["passes_older"] if hts.rs_entries > 1 else [])
    exercised += ["several_inserted", "gap_inserted"] if width > 1 else []
    assert all(seen[what] for what in exercised), seen
