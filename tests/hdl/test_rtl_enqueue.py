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

from hts.base.config import load_config, with_values
from hts.hdl.enqueue import Enqueue
from hts.models.copy_back import retarget_task
from hts.models.enqueue import EnqueueStage
from hts.models.memory_tracker import MemoryTracker, Search, TrackerEntry
from hts.models.tlb import TLBEntry
from hts.models.task import DecodedTask

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


# rows: a search of four rows of five lanes, the last one short.
CONFIGS = {"default": {}, "rows": {"hts.tracker_lanes": 5}}


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seed", range(8))
def test_enqueue_stage_matches_the_model(seed, name):
    rng = random.Random(seed)
    config = with_values(load_config("default"), CONFIGS[name])
    hts = config.hts
    dut = Enqueue(config)
    stage = EnqueueStage()
    tracker = MemoryTracker(hts.tracker_entries, hts.tracker_lanes)
    counts = {"appended": 0, "squashed": 0, "own tag left out": 0, "retargeted": 0}
    if hts.tracker_rows > 1:
        counts.update({"squashed mid-search": 0, "registered over rows": 0, "held retargeted": 0})

    async def bench(ctx):
        for cycle in range(400):
            where = f"seed {seed}, cycle {cycle}"
            held = stage.task
            # The tracker's row counter says whether the held task's row is its last.
            ctx.set(dut.search_last, held is not None and stage.search.row == tracker.rows - 1)
            # Decode starts no search while one goes on next cycle (the "scan" stall).
            busy = stage.searching_next_cycle(tracker)
            assert ctx.get(dut.searching_next) == busy, where
            arriving = random_task(rng, config, cycle) if rng.random() < 0.7 and not busy else None
            retarget = random_retarget(rng, arriving, hts.tracker_entries)
            if arriving is None and held is not None and held.reads[1] and held.reads[0] >= HOME \
                    and rng.random() < 0.3:
                # The task searching on reads the copy; another task produces it.
                producer = (held.tag + 1) % hts.tracker_entries
                retarget = TLBEntry(0, 0, (HOME - SPAN, held.reads[1]), held.reads[0], 0, producer)
            if retarget is not None and held is not None and retarget.producer == held.tag \
                    and held.writes != (retarget.tm_base, retarget.home[1]):
                retarget = None          # only the producer of a TM copy writes it
            squash = rng.getrandbits(hts.spec_ids) if rng.random() < 0.2 else 0
            confirm = rng.getrandbits(hts.spec_ids) & ~squash if rng.random() < 0.3 else 0
            broadcast = frozenset(tag for tag in range(hts.tracker_entries) if rng.random() < 0.1)
            ready = rng.random() < 0.5        # the wake-up's answer: the held task's count after the edge
            ctx.set(dut.ready, ready)
            ctx.set(dut.decoded.valid, arriving is not None)
            if arriving is not None:
                ctx.set(dut.decoded.task, task_value(arriving))
            ctx.set(dut.squash, squash)
            ctx.set(dut.confirm, confirm)
            drive_retarget(ctx, dut, retarget, dut.decoded.reads_copy, arriving and arriving.reads)

            # The tracker answers the held task's query for the row it compares now, the
            # broadcast tags aside.
            random_tracker(rng, tracker, held)
            query = ctx.get(dut.query_reads), ctx.get(dut.query_writes)
            regions = [(int(region.base), int(region.blocks)) for region in query]
            row = Search(row=stage.search.row if held is not None else 0)
            tracker.search_dependences(row, *regions, ignoring=broadcast)
            ctx.set(dut.depends, bits(row.found))
            ctx.set(dut.row_found, len(row.found - {held.tag}) if held is not None else 0)
            # The row holds the task's own entry, which its waits must leave out.
            counts["own tag left out"] += held is not None and held.tag in row.found

            assert ctx.get(dut.occupied) == (held is not None), where
            staying = None
            if held is not None and held.mask & squash:
                stage.remove()
                assert ctx.get(dut.squashed_tags) == 1 << held.tag and not ctx.get(dut.append), where
                assert not ctx.get(dut.register), where
                counts["squashed"] += 1
                if "squashed mid-search" in counts:
                    counts["squashed mid-search"] += stage.search.row > 0
            else:
                assert not ctx.get(dut.squashed_tags), where
                leaving = stage.step(tracker, broadcast)
                staying = stage.task
                # The task registers with what the row found, its own tag aside.
                if held is not None:
                    assert ctx.get(dut.register), where
                    assert ctx.get(dut.producers) == bits(stage.search.row_found), where
                    if "registered over rows" in counts:
                        counts["registered over rows"] += stage.search.row > 1 and stage.search.row_found != set()
                assert ctx.get(dut.append) == (leaving is not None), where
                if leaving is not None:
                    assert regions == [leaving.reads, leaving.writes], where
                    record = ctx.get(dut.append_task)
                    assert (record.tag, record.accel_class, record.mask) == \
                        (leaving.tag, leaving.class_index, leaving.mask), where
                    assert record.ready == ready, where
                    held_view = ctx.get(dut.held)
                    assert (held_view.pid, held_view.pc) == (leaving.pid, leaving.pc), where
                    assert ctx.get(dut.producers_found) == stage.registered, where
                    counts["appended"] += 1
            assert ctx.get(dut.queued_tags) == (1 << held.tag if held is not None else 0), where
            await ctx.tick()

            # End of cycle: a task staying keeps searching, less the released tags, with
            # the confirm and the retarget applied; the arriving task is held likewise.
            if staying is not None:
                staying.mask &= ~confirm
                if retarget is not None:
                    before = staying.reads, staying.writes
                    retarget_task(staying, retarget)
                    counts["held retargeted"] += before != (staying.reads, staying.writes)
            if arriving is not None:
                stage.hold(arriving)
                arriving.mask &= ~confirm
                if retarget is not None:
                    before = arriving.reads, arriving.writes
                    retarget_task(arriving, retarget)
                    counts["retargeted"] += before != (arriving.reads, arriving.writes)
        assert all(counts.values()), counts

    run(dut, bench)
