"""The memory tracker RTL against ``hts.models.memory_tracker``, cycle by cycle.

Retargets are checked against the model tracker's ``retarget`` (its part of the top
level's rewrite, ``HTSModel._apply_retarget``), applied at the end of the cycle after the cycle's allocation and releases, as
``HTSModel.step`` orders them.

``touches`` is checked against every valid tag's ranges and the homes of a set of TLB
slots that the test evolves at random (slots allocated, also in the cycle of a tracker
allocation or a retarget, and freed), as the system keeps them: homes in home memory,
retargeted ranges in TM, and a new task touching none of the homes the TLB holds (which
decode guarantees, and the whole scheduler asserts). Free slots show random homes, which
the tracker must not use. A slot's column is checked from the cycle after its allocation
(the TLB offers no young slot for a retarget).

The pc, task ID and metadata of every tag (the model's tracker has none, decode's task
has them) must be what the tag was allocated with, whatever was written to free tags
since: the pc in ``entries``, the rest read back through every record port, a random
valid tag each.
"""

import random
from collections import Counter

import pytest
from configs import config_named
from rtl_sim import drive_retarget, region_value, run

from hts.hdl.memory_tracker import MemoryTracker
from hts.models.memory_tracker import MemoryTracker as Model, Search, TrackerEntry, overlaps
from hts.models.tlb import TLBEntry

pytestmark = pytest.mark.rtl


# A small address space across the top of home memory and the bottom of TM, so that
# partial overlaps, touching ends and empty regions all occur often.
SPAN = 16


def home_region(rng: random.Random, home_blocks: int, blocks: int | None = None) -> tuple[int, int]:
    blocks = rng.choice([0, 1, 1, 2, 3, 8]) if blocks is None else blocks
    return rng.randrange(home_blocks - SPAN, home_blocks - blocks + 1), blocks


def random_region(rng: random.Random, home_blocks: int) -> tuple[int, int]:
    """A physical region: home, or TM."""
    base, blocks = home_region(rng, home_blocks)
    return (base + SPAN, blocks) if rng.random() < 0.3 else (base, blocks)


def touches(entry: TrackerEntry, home: tuple[int, int]) -> bool:
    return overlaps(entry.reads, home) or overlaps(entry.writes, home)


def random_retarget(rng: random.Random, entries: list, released: set[int], new_entry,
                    home_blocks: int) -> TLBEntry | None:
    """A retarget that keeps the model's invariants, or None.

    Its producer is in flight and not released this cycle (a retargeted producer has not
    finished, and a squashed one would have a non-zero mask), and it alone writes the TM
    region: the regions it writes are the TM copy, which only it produces. The home it
    writes instead is in home memory.
    """
    writers = [entry.writes for entry in entries if entry is not None]
    if new_entry is not None:
        writers.append(new_entry.writes)
    producers = [tag for tag, entry in enumerate(entries) if entry is not None and tag not in released
                 and entry.writes[1] and entry.writes[0] >= home_blocks and writers.count(entry.writes) == 1]
    if not producers:
        return None
    producer = rng.choice(producers)
    tm = entries[producer].writes
    return TLBEntry(seq=0, pid=0, home=home_region(rng, home_blocks, tm[1]), tm_base=tm[0], mask=0,
                    producer=producer)


def one_row_search(model: Model, branch: bool, block: int, reads, writes, ignoring, row: int = 0) -> set[int]:
    """What row ``row`` of a search finds: a memory branch's writers of ``block``, or a task's dependences."""
    search = Search(row=row)
    if branch:
        model.search_writers(search, block, frozenset(ignoring))
    else:
        model.search_dependences(search, reads, writes, frozenset(ignoring))
    return search.found


# Searches of one row, each cycle's query compared with every entry (the rows have their
# own test below): the default with sixteen lanes; uneven: fewer TLB slots than tags, so
# that the rows and columns of ``touches`` differ.
ONE_ROW = {"one_row": ("default", {"hts.tracker_lanes": 16}),
           "uneven": ("default", {"hts.tracker_entries": 6, "hts.tlb_entries": 4})}


@pytest.mark.parametrize("preset", ["one_row", "tiny", "uneven"])
@pytest.mark.parametrize("seed", range(3))
def test_tracker_matches_model(preset, seed):
    config = config_named(preset, ONE_ROW)
    assert config.hts.tracker_rows == 1
    count, slots, home_blocks = config.hts.tracker_entries, config.hts.tlb_entries, config.memory.blocks
    dut, rng = MemoryTracker(config), random.Random(seed)
    model = Model(count)
    tlb_homes: list = [None] * slots   # TLB slot -> its home, None when free
    records: dict[int, dict] = {}      # tag -> pc, task ID and metadata it was allocated with
    record_rng = random.Random(f"records {seed}")   # apart, so that the rest of the stimulus stays as it was
    held_rng = random.Random(f"held {seed}")         # likewise
    seen = Counter()                   # what the stimulus exercised, so the test cannot pass idle

    async def bench(ctx):
        new_home = None                # the home of the TLB slot allocated last cycle
        for cycle in range(400):
            reads, writes = random_region(rng, home_blocks), random_region(rng, home_blocks)
            valid = [tag for tag, entry in enumerate(model.entries) if entry is not None]
            ignoring = {tag for tag in valid if rng.random() < 0.2}
            # One search port: a task's regions, or a memory branch's block as the top
            # level puts it (a one-block read, no write), whose answer is its writers. In
            # the cycle after a TLB allocation the task that made it searches, with the
            # new home as its write query: its RAW dependences, and the slot's column.
            branch = rng.random() < 0.3 and new_home is None
            block = rng.randrange(home_blocks - SPAN, home_blocks + SPAN)
            query = ((block, 1), (0, 0)) if branch else (reads, new_home or writes)
            ctx.set(dut.query_reads, region_value(query[0]))
            ctx.set(dut.query_writes, region_value(query[1]))
            ctx.set(dut.query_home, new_home is not None)
            ctx.set(dut.ignoring, sum(1 << tag for tag in ignoring))

            where = f"seed {seed}, cycle {cycle}"
            expected = one_row_search(model, branch, block, reads, (0, 0) if new_home else writes, ignoring)
            assert ctx.get(dut.depends) == sum(1 << tag for tag in expected), where
            seen["branch writers found"] += branch and bool(expected)
            # The wake-up holds some free tags: a list still to walk, a squashed task's count.
            model.held = {tag for tag, entry in enumerate(model.entries) if entry is None and held_rng.random() < (0.3 if count > 1 else 0.05)}
            ctx.set(dut.held, sum(1 << tag for tag in model.held))
            has_free = model.allocatable() > 0
            assert ctx.get(dut.has_free) == has_free, where
            if has_free:
                assert ctx.get(dut.free_tag) == model.free_tag(), where
            seen["a free tag held"] += bool(model.held)
            for port in dut.record_reads:
                tag = record_rng.choice(valid) if valid else 0
                ctx.set(port.tag, tag)
                if valid:
                    got = ctx.get(port.record)
                    assert (got.task_id, got.metadata) == (records[tag]["task_id"], records[tag]["metadata"]), \
                        f"{where}, tag {tag}"
                    seen["record read"] += 1

            allocate = has_free and rng.random() < 0.6
            released = {tag for tag in valid if rng.random() < 0.25}
            # Half the new tasks read exactly what an older one writes: readers of a TM copy.
            outputs = [model.entries[tag].writes for tag in valid if model.entries[tag].writes[1]]
            new_reads = rng.choice(outputs) if outputs and rng.random() < 0.5 else reads
            entry = TrackerEntry(rng.randrange(config.hts.processes), new_reads, writes)
            # As decode guarantees, a new task touches no home the TLB holds.
            allocate &= not any(home is not None and touches(entry, home) for home in tlb_homes)
            retarget = random_retarget(rng, model.entries, released, entry if allocate else None, home_blocks) \
                if rng.random() < 0.3 else None
            if allocate and retarget is not None and new_reads == (retarget.tm_base, retarget.home[1]):
                # Nor does it after a retarget moves its reads home (the retargeted entry was
                # the youngest over that home, and nothing older overlaps a retargeted one).
                allocate = not any(home is not None and overlaps(retarget.home, home) for home in tlb_homes)
            seen["new tag"] += allocate
            ctx.set(dut.alloc, allocate)
            record = {name: record_rng.getrandbits(len(getattr(dut.alloc_entry, name)))
                      for name in ("pc", "task_id", "metadata")}
            ctx.set(dut.alloc_entry, {"pid": entry.pid, "reads": region_value(new_reads),
                                      "writes": region_value(writes), **record})
            ctx.set(dut.release, sum(1 << tag for tag in released))
            drive_retarget(ctx, dut, retarget, dut.alloc_reads_copy, new_reads)
            # The TLB: a new entry in a free slot, some entries leaving (at the same edge).
            free_slots = [slot for slot, home in enumerate(tlb_homes) if home is None]
            tlb_alloc = bool(free_slots) and rng.random() < 0.4
            tlb_slot, tlb_home = rng.choice(free_slots) if tlb_alloc else 0, home_region(rng, home_blocks)
            leaving = [slot for slot, home in enumerate(tlb_homes) if home is not None and rng.random() < 0.3]
            ctx.set(dut.tlb_homes, [region_value(home if home is not None else random_region(rng, home_blocks))
                                    for home in tlb_homes])
            ctx.set(dut.tlb_alloc, tlb_alloc)
            ctx.set(dut.tlb_alloc_slot, tlb_slot)
            await ctx.tick()
            new_home = tlb_home if tlb_alloc else None
            for slot in leaving:
                tlb_homes[slot] = None
            if tlb_alloc:
                tlb_homes[tlb_slot] = tlb_home
                seen["TLB entry with a new tag"] += allocate
                seen["TLB entry with a retarget"] += retarget is not None
            if allocate:
                tag = model.free_tag()
                model.allocate(tag, entry)
                records[tag] = record
            for tag in released:
                model.free(tag)
            if retarget is not None:
                tm = (retarget.tm_base, retarget.home[1])
                seen["readers"] += sum(e is not None and e.reads == tm for e in model.entries)
                seen["new reader"] += allocate and new_reads == tm
                seen["producers"] += 1
                model.retarget(tm, retarget.home)
            assert ctx.get(dut.valid) == sum(1 << t for t, e in enumerate(model.entries) if e is not None), where
            entries = ctx.get(dut.entries)
            for tag, expected_entry in enumerate(model.entries):
                if expected_entry is not None:
                    got = entries[tag]
                    assert TrackerEntry(got.pid, (got.reads.base, got.reads.blocks),
                                        (got.writes.base, got.writes.blocks)) == expected_entry, f"{where}, tag {tag}"
                    assert got.pc == records[tag]["pc"], f"{where}, tag {tag}"
            rows = ctx.get(dut.touches)
            settled = [slot for slot, home in enumerate(tlb_homes) if home is not None and not (tlb_alloc and slot == tlb_slot)]
            for tag, tracked in enumerate(model.entries):
                if tracked is not None:
                    row = {slot for slot in settled if rows[tag] >> slot & 1}
                    assert row == {slot for slot in settled if touches(tracked, tlb_homes[slot])}, f"{where}, tag {tag}"
            if retarget is not None:
                seen["retarget home touches a slot"] += any(home is not None and overlaps(retarget.home, home)
                                                            for home in tlb_homes)

    run(dut, bench)
    # With a single tag, no reader shares the tracker with the producer of its TM copy.
    exercised = ["producers", "new tag", "record read", "TLB entry with a new tag", "TLB entry with a retarget",
                 "retarget home touches a slot", "branch writers found", "a free tag held"] + (
        ["readers", "new reader"] if count > 1 else [])
    assert all(seen[what] for what in exercised), f"seed {seed}: stimulus missed a case: {seen}"


@pytest.mark.parametrize("lanes", [1, 3, 4])
@pytest.mark.parametrize("seed", range(2))
def test_a_search_compares_one_row_of_lanes_a_cycle(lanes, seed):
    """Ten tags in rows of ``lanes`` (the last row short with 3 and 4 lanes): a search handed
    over at an edge compares row 0 the next cycle, then one more row a cycle; in each cycle
    only the tags of that row can be found, exactly those the model's row finds."""
    config = config_named("rows", {"rows": ("default", {"hts.tracker_entries": 10, "hts.tracker_lanes": lanes})})
    home_blocks, rows = config.memory.blocks, config.hts.tracker_rows
    dut, rng, model = MemoryTracker(config), random.Random(seed), Model(10, lanes)
    seen = Counter()

    async def bench(ctx):
        row = None                        # the row of the search under way, None when none is
        for cycle in range(300):
            if row is not None:
                assert (ctx.get(dut.search_row), ctx.get(dut.search_last)) == (row, row == rows - 1), \
                    f"seed {seed}, cycle {cycle}"
            reads, writes = random_region(rng, home_blocks), random_region(rng, home_blocks)
            valid = [tag for tag, entry in enumerate(model.entries) if entry is not None]
            ignoring = {tag for tag in valid if rng.random() < 0.2}
            branch = rng.random() < 0.3
            block = rng.randrange(home_blocks - SPAN, home_blocks + SPAN)
            query = ((block, 1), (0, 0)) if branch else (reads, writes)
            ctx.set(dut.query_reads, region_value(query[0]))
            ctx.set(dut.query_writes, region_value(query[1]))
            ctx.set(dut.ignoring, sum(1 << tag for tag in ignoring))
            if row is not None:
                expected = one_row_search(model, branch, block, reads, writes, ignoring, row)
                assert ctx.get(dut.depends) == sum(1 << tag for tag in expected), f"seed {seed}, cycle {cycle}"
                seen["found in a later row"] += any(tag >= lanes for tag in expected)
            # Decode hands a search over only in the last row of the one under way, or
            # when none is (the counter goes on past the last row, unread).
            start = (row is None or row == rows - 1) and rng.random() < 0.7
            ctx.set(dut.search_start, start)

            # Mostly full, so that later rows hold entries to find.
            allocate = None in model.entries and rng.random() < 0.8
            released = {tag for tag in valid if rng.random() < 0.1}
            if allocate:
                new_tag = model.free_tag()
                entry = TrackerEntry(0, random_region(rng, home_blocks), random_region(rng, home_blocks))
                ctx.set(dut.alloc_entry, {"pid": 0, "reads": region_value(entry.reads),
                                          "writes": region_value(entry.writes), "pc": 0, "task_id": 0, "metadata": 0})
            ctx.set(dut.alloc, allocate)
            ctx.set(dut.release, sum(1 << tag for tag in released))
            await ctx.tick()
            for tag in released:
                model.free(tag)
            if allocate:
                model.allocate(new_tag, entry)
            row = 0 if start else None if row is None or row == rows - 1 else row + 1
        assert seen["found in a later row"] > 20, seen

    run(dut, bench)
