"""The enqueue stage RTL against ``hts.models.enqueue``, cycle by cycle.

Each cycle the testbench may hand the stage a decoded task, squash or confirm
speculation IDs and retarget a TLB entry. The tracker is the model's, filled at random
around the held task's own entry (which the search must leave out): the testbench
answers the stage's query with the model tracker's search, as the tracker RTL would
(its own test checks that search). Retargets reach the held task through the model's
own rewrite of a task in flight, ``hts.models.copy_back.retarget_task``.
"""

import random

import pytest
from rtl_sim import drive_retarget, region_value, run

from hts.base.config import load_config
from hts.hdl.enqueue import Enqueue
from hts.models.copy_back import retarget_task
from hts.models.enqueue import EnqueueStage
from hts.models.memory_tracker import MemoryTracker, TrackerEntry
from hts.models.tlb import TLBEntry
from hts.models.window import DecodedTask

pytestmark = pytest.mark.rtl

HOME = 64          # a small home memory: TM starts above it
SPAN = 12          # regions fall in [HOME - SPAN, HOME + SPAN): overlaps and exact matches are common


def random_region(rng: random.Random, top: int = HOME + SPAN) -> tuple[int, int]:
    blocks = rng.choice([0, 1, 1, 2, 3])
    return rng.randrange(HOME - SPAN, top - blocks), blocks


def random_task(rng: random.Random, config, seq: int) -> DecodedTask:
    """Writes in home memory: a task writes TM only as the producer of a TLB entry (below)."""
    hts = config.hts
    return DecodedTask(seq, rng.randrange(hts.tracker_entries), rng.randrange(hts.processes),
                       rng.randrange(hts.program_words), rng.randrange(16), 0,
                       rng.randrange(len(config.accelerators)), random_region(rng), random_region(rng, HOME),
                       rng.getrandbits(60), mask=rng.getrandbits(hts.spec_ids))


def task_value(task: DecodedTask) -> dict:
    return {"tag": task.tag, "pid": task.pid, "pc": task.pc, "task_id": task.task_id,
            "accel_class": task.class_index, "reads": region_value(task.reads), "writes": region_value(task.writes),
            "metadata": task.metadata, "mask": task.mask}


def random_tracker(rng: random.Random, tracker: MemoryTracker, held: DecodedTask | None):
    """Random in-flight tasks, and the held task's own entry, which decode allocated."""
    for tag in range(len(tracker.entries)):
        tracker.entries[tag] = (TrackerEntry(0, random_region(rng), random_region(rng))
                                if rng.random() < 0.6 else None)
    if held is not None:
        tracker.entries[held.tag] = TrackerEntry(held.pid, held.reads, held.writes)


def random_retarget(rng: random.Random, arriving: DecodedTask | None, tags: int) -> TLBEntry | None:
    """Often one that rewrites the arriving task's ranges: its reads as a reader of the TM
    copy, or its writes as the copy's producer (whose writes are the copy, as in the system)."""
    if rng.random() < 0.5:
        return None
    blocks = rng.choice([1, 2])
    tm, producer = rng.randrange(HOME, HOME + SPAN - blocks), rng.randrange(tags)
    if arriving is not None:
        if producer == arriving.tag:
            producer = (producer + 1) % tags
        if rng.random() < 0.3 and arriving.reads[1] and arriving.reads[0] >= HOME:   # a TM copy
            tm, blocks = arriving.reads
        elif rng.random() < 0.3:
            blocks = arriving.writes[1] or 1
            tm, producer = rng.randrange(HOME, HOME + SPAN - blocks), arriving.tag
            arriving.writes = (tm, blocks)
    return TLBEntry(0, 0, (rng.randrange(HOME - SPAN, HOME - blocks), blocks), tm, 0, producer)


def bits(tags) -> int:
    return sum(1 << tag for tag in tags)


@pytest.mark.parametrize("seed", range(8))
def test_enqueue_stage_matches_the_model(seed):
    rng = random.Random(seed)
    config = load_config("default")
    hts = config.hts
    dut = Enqueue(config)
    stage = EnqueueStage()
    tracker = MemoryTracker(hts.tracker_entries)
    counts = {"appended": 0, "squashed": 0, "own tag left out": 0, "retargeted": 0}

    async def bench(ctx):
        for cycle in range(400):
            where = f"seed {seed}, cycle {cycle}"
            held = stage.task
            arriving = random_task(rng, config, cycle) if rng.random() < 0.7 else None
            retarget = random_retarget(rng, arriving, hts.tracker_entries)
            squash = rng.getrandbits(hts.spec_ids) if rng.random() < 0.2 else 0
            confirm = rng.getrandbits(hts.spec_ids) & ~squash if rng.random() < 0.3 else 0
            broadcast = frozenset(tag for tag in range(hts.tracker_entries) if rng.random() < 0.1)
            ctx.set(dut.decoded.valid, arriving is not None)
            if arriving is not None:
                ctx.set(dut.decoded.task, task_value(arriving))
            ctx.set(dut.squash, squash)
            ctx.set(dut.confirm, confirm)
            drive_retarget(ctx, dut, retarget, dut.decoded.reads_copy, arriving and arriving.reads)

            # The tracker answers the held task's query, the broadcast tags aside.
            random_tracker(rng, tracker, held)
            query = ctx.get(dut.query_reads), ctx.get(dut.query_writes)
            regions = [(int(region.base), int(region.blocks)) for region in query]
            ctx.set(dut.depends, bits(tracker.dependences(*regions, ignoring=broadcast)))

            assert ctx.get(dut.occupied) == (held is not None), where
            if held is not None and held.mask & squash:
                stage.remove()
                assert ctx.get(dut.squashed_tags) == 1 << held.tag and not ctx.get(dut.append), where
                counts["squashed"] += 1
            else:
                assert not ctx.get(dut.squashed_tags), where
                leaving = stage.step(tracker, broadcast)
                assert ctx.get(dut.append) == (leaving is not None), where
                if leaving is not None:
                    assert regions == [leaving.reads, leaving.writes], where
                    record = ctx.get(dut.append_task)
                    assert (record.tag, record.accel_class, record.mask) == \
                        (leaving.tag, leaving.class_index, leaving.mask), where
                    assert record.waits == bits(leaving.waits_for), where
                    held_view = ctx.get(dut.held)
                    assert (held_view.pid, held_view.pc, held_view.waits) == \
                        (leaving.pid, leaving.pc, bits(leaving.waits_for)), where
                    counts["appended"] += 1
                    counts["own tag left out"] += leaving.tag not in broadcast and bool(
                        tracker.dependences(leaving.reads, leaving.writes, frozenset()) & {leaving.tag})
            assert ctx.get(dut.queued_tags) == (1 << held.tag if held is not None else 0), where
            await ctx.tick()

            # End of cycle: the arriving task is held, with the confirm and the retarget applied.
            if arriving is not None:
                stage.hold(arriving)
                arriving.mask &= ~confirm
                if retarget is not None:
                    before = arriving.reads, arriving.writes
                    retarget_task(arriving, retarget)
                    counts["retargeted"] += before != (arriving.reads, arriving.writes)
        assert all(counts.values()), counts

    run(dut, bench)
