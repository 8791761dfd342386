"""The Task Lookup Buffer RTL against ``hts.models.tlb``, cycle by cycle.

The model keeps its entries in a list, oldest first; the RTL keeps them in a ring of slots
taken in order at the tail. The look-ups are of each process's queue head, whose relations
to the homes the RTL compares a cycle ahead: every cycle the test offers each process's
head at the next edge (the same, or one of two new queries) and looks up with the head of
one process. After every edge the valid slots, sorted by the age order the ring implies
(``older``), must hold the model's entries in order; that also maps each slot to its model
entry, by which the slot indices the RTL offers (copy, retarget, the new entry's slot) are
checked and the removals are driven. The memory tracker's ``touches`` are computed here
from random tracker regions and the slots' homes; the bits of free slots and of tags not
in flight are random, as the TLB must ignore them.
"""

import random
from collections import Counter

import pytest
from configs import config_named
from rtl_sim import region_value, run

from hts.hdl.interfaces import HeadSource
from hts.hdl.tlb import TaskLookupBuffer
from hts.models.memory_tracker import overlaps
from hts.models.tlb import TaskLookupBuffer as Model

pytestmark = pytest.mark.rtl


def home_region(rng: random.Random) -> tuple[int, int]:
    return rng.randrange(0, 16), rng.choice([0, 1, 1, 2, 3])


def entry_value(entry) -> dict:
    return {"pid": entry.pid, "home": region_value(entry.home), "tm_base": entry.tm_base, "mask": entry.mask,
            "producer": entry.producer, "producer_done": int(entry.producer_done)}


def got_value(got) -> dict:
    return {"pid": got.pid, "home": region_value((got.home.base, got.home.blocks)), "tm_base": got.tm_base,
            "mask": got.mask, "producer": got.producer, "producer_done": got.producer_done}


def bits(items) -> int:
    return sum(1 << item for item in set(items))


def slots_by_age(ctx, dut, where: str) -> list[int]:
    """The valid slots, oldest first, after checking that the age order (``older``) is total."""
    valid, older = ctx.get(dut.valid), ctx.get(dut.older)
    slots = [slot for slot in range(len(dut.valid)) if valid >> slot & 1]
    for a in slots:
        for b in slots:
            if a < b:
                assert (older[a] >> b & 1) != (older[b] >> a & 1), f"{where}: slots {a}, {b} unordered"
    rank = {slot: bin(older[slot] & valid).count("1") for slot in slots}
    assert sorted(rank.values()) == list(range(len(slots))), f"{where}: ages not a total order: {rank}"
    return sorted(slots, key=rank.get)


@pytest.mark.parametrize("preset", ["default", "tiny", "small"])
@pytest.mark.parametrize("seed", range(3))
def test_tlb_matches_model(preset, seed):
    # small: a small TM, so that room runs out and the pointer resets; processes share it.
    config = config_named(preset, {"small": ("default", {"hts.tlb_entries": 4, "hts.tm_blocks": 6,
                                                         "hts.processes": 2})})
    hts, home_blocks = config.hts, config.memory.blocks
    dut, rng = TaskLookupBuffer(config), random.Random(seed)
    steer = random.Random(-seed)       # its own stream, so that steering leaves the rest of the stimulus alone
    model = Model(hts.tlb_entries, hts.tm_blocks, home_blocks)
    tags, slots, spec_bits = range(hts.tracker_entries), range(hts.tlb_entries), (1 << hts.spec_ids) - 1

    def physical(rng):
        # Tracker regions are physical: home, or TM just above it.
        base, blocks = home_region(rng)
        return (base + home_blocks if rng.random() < 0.3 else base), blocks

    def touches(reads, writes, held) -> int:
        """A tracker row: the slots whose home ``reads`` or ``writes`` overlap; free slots at random."""
        return sum(1 << slot for slot in slots if (overlaps(reads, held[slot].home) or overlaps(writes, held[slot].home)
                                                  if slot in held else rng.random() < 0.5))

    seen = Counter()                    # what the stimulus exercised, so the test cannot pass idle
    held = {}                           # slot -> the model entry in it, from the last edge

    def query(steered=None) -> tuple:
        """A head's (input, output, branch block): often a block some entry holds, now and
        then one of the entry chosen to retarget."""
        read, write, block = home_region(rng), home_region(rng), rng.randrange(0, 20)
        if held and rng.random() < 0.5:
            base, length = (steered or rng.choice(list(held.values()))).home
            block = base + rng.randrange(length)
        return read, write, block

    def offer_heads(ctx, heads, steered):
        """Each process's head at the next edge: the same, or a new query (the steered one,
        looked up next, is new). Returns the heads and the next look-up's pid."""
        next_pid = rng.randrange(hts.processes) if steered is None else steered.pid
        chosen = []
        for pid in range(hts.processes):
            new = query(steered if pid == next_pid else None)
            take = HeadSource.NEXT if steered is not None and pid == next_pid else rng.choice(list(HeadSource))
            queries = {name: {"read": region_value(q[0]), "write": region_value(q[1]), "block": q[2]}
                       for name, q in (("stay", heads[pid]), ("next", new))}
            ctx.set(dut.lookahead[pid], {"take": take, **queries})
            chosen.append(heads[pid] if take == HeadSource.STAY else new)
        return chosen, next_pid

    async def bench(ctx):
        nonlocal held
        # The first heads reach the TLB a cycle before the first look-up.
        heads, lookup_pid = offer_heads(ctx, [query() for _ in range(hts.processes)], None)
        await ctx.tick()
        retargetable_before = set()      # the producers the TLB registered, per slot, last cycle
        for cycle in range(1000):
            where = f"seed {seed}, cycle {cycle}"
            slot_of = {id(entry): slot for slot, entry in held.items()}
            read, write, block = heads[lookup_pid]
            blocks = rng.choice([1, 2, 3])
            tracker = {tag: (physical(rng), physical(rng)) for tag in tags if rng.random() < 0.3}
            retargetable = {tag for tag in tags if rng.random() < 0.7}
            ctx.set(dut.lookup_checks, {"regions": 1, "block": 1})
            ctx.set(dut.read_region, region_value(read))
            ctx.set(dut.write_region, region_value(write))
            ctx.set(dut.branch_block, block)
            ctx.set(dut.alloc_blocks, blocks)
            ctx.set(dut.tracker_valid, bits(tracker))
            ctx.set(dut.touches, [touches(*tracker[tag], held) if tag in tracker else rng.randrange(1 << len(slots))
                                  for tag in tags])
            ctx.set(dut.retargetable_tags, bits(retargetable))
            # Nothing in flight referred to TM at the start of the cycle: the model's
            # pointer went back to 0 at the end of the last one if the buffer was empty.
            tm_idle = rng.random() < 0.5
            ctx.set(dut.tm_idle, tm_idle)
            if not model.entries and tm_idle:
                seen.update(pointer_reset=model.tm_next != 0)
                model.tm_next = 0

            ctx.set(dut.lookup_pid, lookup_pid)
            youngest = model.youngest_overlapping(read)
            assert ctx.get(dut.read_hit) == (youngest is not None), where
            if youngest is not None:
                exact = youngest.home == read and youngest.pid == lookup_pid
                assert ctx.get(dut.read_copy) == (1 << slot_of[id(youngest)] if exact else 0), where
                seen.update(read_hit_of_another_process=youngest.pid != lookup_pid)
                assert ctx.get(dut.read_tm_base) == youngest.tm_base, where
            assert ctx.get(dut.write_hit) == model.any_overlapping(write), where
            room = model.has_room(blocks)
            assert ctx.get(dut.has_room) == room, where
            assert ctx.get(dut.alloc_tm_base) == home_blocks + model.tm_next, where
            busy = [(tag, region) for tag, regions in tracker.items() for region in regions]
            copy = model.copyable([region for _, region in busy])
            # The retarget is last cycle's choice, if still wanted; the next is chosen now,
            # both on the producers retargetable at the end of last cycle.
            chosen_before = model.retarget_candidate
            retarget = model.retarget_offer(busy, retargetable_before, cycle)
            seen.update(retarget_refused=chosen_before is not None and retarget is None)
            # An entry allocated last cycle is not chosen yet (its ``touches`` are not ready).
            seen.update(young_held_back=model.retargetable(busy, retargetable_before, cycle + 2, chosen_before)
                        is not model.retarget_candidate)
            retargetable_before = retargetable
            # A branch's block is where its value is once this cycle's retarget has landed.
            covering = model.youngest_of(lookup_pid, (block, 1))
            sent_home = covering is not None and covering is retarget
            assert ctx.get(dut.branch_phys) == (block if sent_home else model.translate_block(block, lookup_pid)), where
            seen.update(branch_sent_home=sent_home)
            assert ctx.get(dut.copy_valid) == (copy is not None), where
            if copy is not None:
                assert ctx.get(dut.copy_index) == slot_of[id(copy)], where
                assert got_value(ctx.get(dut.copy_entry)) == entry_value(copy), where
            assert ctx.get(dut.retarget_valid) == (retarget is not None), where
            if retarget is not None:
                assert ctx.get(dut.retarget_index) == slot_of[id(retarget)], where
                assert ctx.get(dut.retarget_slot) == 1 << slot_of[id(retarget)], where
                assert got_value(ctx.get(dut.retarget_entry)) == entry_value(retarget), where
            alloc_slot = ctx.get(dut.alloc_slot)
            if room:
                assert alloc_slot not in held, f"{where}: slot {alloc_slot} is taken"
            candidate = model.retarget_candidate      # offered next cycle, if still wanted
            steered = candidate if candidate is not None and steer.random() < 0.3 else None
            previous = heads
            heads, lookup_pid = offer_heads(ctx, heads, steered)

            allocate = room and rng.random() < 0.5
            pid, home, producer = rng.randrange(hts.processes), home_region(rng), rng.choice(tags)
            mask = rng.randrange(1, spec_bits + 1)
            broadcast = {tag for tag in tags if rng.random() < 0.3}
            # Now and then every ID at once, so that an entry is resolved from its allocation.
            confirm = rng.choice([rng.randrange(0, spec_bits + 1), spec_bits]) if rng.random() < 0.3 else 0
            drop = rng.randrange(0, spec_bits + 1) & ~confirm if rng.random() < 0.1 else 0
            removed = [entry for entry in (copy, retarget) if entry is not None and rng.random() < 0.5]
            ctx.set(dut.alloc, allocate)
            ctx.set(dut.alloc_entry, {"pid": pid, "home": region_value((home[0], blocks)), "mask": mask,
                                      "producer": producer})
            ctx.set(dut.broadcast, bits(broadcast))
            ctx.set(dut.confirm, confirm)
            ctx.set(dut.drop, drop)
            ctx.set(dut.remove, bits(slot_of[id(entry)] for entry in removed))
            await ctx.tick()

            # The model's order: decode allocates during the cycle, the rest at its end.
            if allocate:
                model.allocate(cycle, pid, (home[0], blocks), mask, producer, cycle)
                new_entry = model.entries[-1]
            for entry in model.entries:
                if entry.producer in broadcast:
                    entry.producer_done = True
                entry.mask &= ~confirm
            model.entries = [entry for entry in model.entries if not entry.mask & drop]
            for entry in removed:
                model.entries.remove(entry)
            order = slots_by_age(ctx, dut, where)
            entries = ctx.get(dut.entries)
            assert [got_value(entries[slot]) for slot in order] == [entry_value(e) for e in model.entries], where
            held = dict(zip(order, model.entries))
            seen.update(head_kept_over_an_allocation=allocate and any(h is p for h, p in zip(heads, previous)))
            seen.update(copy=copy is not None, retarget=retarget is not None,
                        ages_out_of_slot_order=order != sorted(order),
                        held_back_by_older=any(not entry.mask and any(overlaps(older.home, entry.home)
                                                                      for older in model.entries[:index])
                                               for index, entry in enumerate(model.entries)))
            if allocate and new_entry in model.entries:
                assert held[alloc_slot] is new_entry, f"{where}: the new entry is not in slot {alloc_slot}"

    run(dut, bench)
    exercised = ["copy", "retarget", "retarget_refused", "pointer_reset", "young_held_back", "branch_sent_home",
                 "head_kept_over_an_allocation"]
    exercised += ["ages_out_of_slot_order", "held_back_by_older"] if hts.tlb_entries > 1 else []
    exercised += ["read_hit_of_another_process"] if hts.processes > 1 else []
    assert all(seen[what] for what in exercised), f"seed {seed}: stimulus missed a case: {seen}"
