"""The branch unit RTL against the model's ``BranchUnit`` (``models/branch_unit.py``), cycle by cycle.

``BranchSurroundings`` is an ``HTSModel`` reduced to its processes' pending branches, its
branch unit and decode's speculation-ID pool (a ``Decode`` that decodes nothing else); its
end of cycle repeats the branch lines of ``HTSModel._end_of_cycle``.
What the branch unit touches outside itself (tracker, TLB, memory, fetch) is a stand-in
the test steers: the tracker answers the writers the test picks, the TLB the physical
block it picks, the memory is a dict of first words, and fetch records redirects.
"""

import random
from collections import Counter
from types import SimpleNamespace

import pytest
from configs import config_named
from rtl_sim import drive_retarget, region_value, run

from hts.hdl.branch_unit import BranchUnit, slot_layout
from hts.hdl.interfaces import BranchKind
from hts.isa import RESERVED_ACCEL_ID, REGISTER_BITS, Opcode, Word
from hts.models.branch_unit import BranchUnit as BranchUnitModel, Resolution
from hts.models.decode import Decode, ProcessContext
from hts.models.gpr import GPRBank
from hts.models.loop_stack import LoopStack
from hts.models.memory_tracker import Search
from hts.models.tlb import TLBEntry

pytestmark = pytest.mark.rtl

# The large scheduler simulates slowly (12 slots, four processes): fewer cycles there,
# where four processes make more happen per cycle anyway.
RUNS = [*((preset, seed, 1500) for preset in ("default", "tiny") for seed in range(3)),
        *((preset, seed, 500) for preset in ("large", "quick") for seed in range(2))]
BLOCKS = 6             # blocks used at home and in TM: small, so that retargets meet branches
# Operands near the edges of a signed compare, and equal values, often.
VALUES = [0, 1, 2, (1 << REGISTER_BITS) - 1, (1 << 31) - 1, 1 << 31]


class FirstWords:
    """The memory as the branch unit sees it: the first word of each block."""

    def __init__(self, rng: random.Random, blocks: list[int]):
        self.words = {block: rng.choice(VALUES) for block in blocks}

    def first_word(self, block: int) -> int:
        return self.words[block]


class Fetch:
    """A process's task queue, as far as branches redirect it."""

    def __init__(self):
        self.redirected_to = None

    def redirect(self, pc: int):
        self.redirected_to = pc


class Tracker:
    """The memory tracker's answer for a branch's block, a row of tags a cycle: of the
    writers the test chose, those in the row."""

    def __init__(self, lanes: int, rows: int):
        self.lanes, self.rows = lanes, rows
        self.writers = frozenset()

    def row_writers(self, row: int) -> frozenset[int]:
        return frozenset(tag for tag in self.writers if tag // self.lanes == row)

    def search_writers(self, search: Search, block: int, ignoring: frozenset[int]) -> bool:
        search.found |= self.row_writers(search.row) - ignoring
        search.row += 1
        return search.row == self.rows


class BranchSurroundings:
    def __init__(self, config, memory: FirstWords):
        hts = config.hts
        self.memory = memory
        self.unit = BranchUnitModel(config.timing.memory_latency)
        self.decode = Decode(config, [], 0, speculate=hts.speculation)
        self.processes = [ProcessContext(pid, None, Fetch(), GPRBank(hts.gprs), LoopStack(hts.loop_depth))
                          for pid in range(hts.processes)]
        self.tracker = Tracker(hts.search_lanes, hts.tracker_rows)
        self.tlb = SimpleNamespace(translate_block=None)

    def end_of_cycle(self, t: int, released: set[int], outcome: Resolution, retarget: TLBEntry | None):
        """The branch lines of ``HTSModel._end_of_cycle``, in its order."""
        if released:
            self.unit.wake(t, self.processes, released)
        for spec_id in outcome.confirmed:
            self.unit.confirm(spec_id, self.processes)
        self.decode.free(outcome.confirmed + outcome.freed)
        if retarget is not None:
            self.unit.retarget(self.processes, (retarget.tm_base, retarget.home[1]), retarget.home[0])

    def branches(self):
        return [branch for proc in self.processes for branch in proc.branches]


# The large preset with a 2-cycle memory, so that reads overlap densely.
VARIANTS = {"quick": ("large", {"timing.memory_latency": 2})}


def bits(items) -> int:
    return sum(1 << item for item in set(items))


def slot_of(config, branch) -> int:
    return branch.spec_id if branch.spec_id is not None else config.hts.spec_ids + branch.pid


def expected_fields(config, branch, cycle: int) -> dict:
    """What the slot of ``branch`` holds at the start of ``cycle``; a search under way keeps
    in ``waits`` what its rows found."""
    waits = branch.waits_for if branch.searched else branch.writer_search.found
    fields = {"pid": branch.pid, "pc": branch.pc, "target": min(branch.target, config.hts.program_words),
              "cond": branch.word.cond.value, "kind": BranchKind[branch.kind].value, "y": branch.y,
              "block": branch.block, "waits": bits(waits), "mask": branch.mask}
    if branch.kind == "RR":
        fields["x"] = branch.x
    if branch.resolves_at is not None:
        # A branch held past its resolution cycle by an older misprediction waits at 0 for the squash.
        fields["timer"] = max(0, branch.resolves_at - cycle)
    return fields


class SlotReader:
    """The slots as dicts of field values, unpacked from the raw bits (cheaper than views)."""

    def __init__(self, config):
        layout = slot_layout(config)
        self.size, self.count = layout.size, config.hts.spec_ids + config.hts.processes
        self.fields = [(name, field.offset, (1 << field.width) - 1) for name, field in layout]

    def __call__(self, raw: int) -> list[dict]:
        slots = [raw >> (slot * self.size) for slot in range(self.count)]
        return [{name: bits >> offset & mask for name, offset, mask in self.fields} for bits in slots]


def random_word(rng: random.Random, config, pid: int) -> tuple[Word, int]:
    """An ``if`` of process ``pid`` and its pc."""
    hts = config.hts
    # Mostly speculated memory branches: they do not stop their process, so several pend.
    memory, speculate = rng.random() < 0.8, rng.random() < 0.85
    pc = rng.randrange(hts.program_words)
    # Mostly near targets; sometimes far past the end of any program.
    offset = rng.choice([rng.randrange(-pc, 8), rng.randrange(-pc, 1 << 15)])
    return Word(accel_id=RESERVED_ACCEL_ID[Opcode.IF], a=rng.randrange(hts.gprs), b=rng.randrange(hts.gprs),
                c=offset & 0xFFFF, pid=pid, k=rng.randrange(4) | speculate << 2 | memory << 3), pc


@pytest.mark.parametrize("preset,seed,cycles", RUNS)
def test_branch_unit_matches_model(preset, seed, cycles):
    config = config_named(preset, VARIANTS)
    hts, latency, home = config.hts, config.timing.memory_latency, config.memory.blocks
    blocks = [*range(BLOCKS), *range(home, home + BLOCKS)]
    rng = random.Random(seed)
    dut, memory, read_slots = BranchUnit(config), FirstWords(rng, blocks), SlotReader(config)
    lanes = range(read_slots.count)
    model = BranchSurroundings(config, memory)
    answers: dict[int, list[tuple[int, int]]] = {}     # cycle -> (lane, block) the memory answers then
    seen = Counter()
    # Writers among a few busy tags, so that one release often wakes several branches.
    busy = range(min(3, hts.tracker_entries))

    def tags(chance: float) -> set[int]:
        return {tag for tag in range(hts.tracker_entries) if rng.random() < chance}

    def retarget_for(released: set[int]) -> TLBEntry | None:
        """A retarget that keeps the model's invariant: no read under way is in its TM region."""
        reading = {branch.block for branch in model.branches()
                   if branch.kind != "RR" and branch.searched and not branch.waits_for - released}
        waiting = [branch.block for branch in model.branches()
                   if branch.block >= home and branch.block not in reading]
        length = rng.randrange(1, 4)
        if waiting and rng.random() < 0.7:
            hit = rng.choice(waiting)
            base = max(home, hit - rng.randrange(length))
        else:
            base = home + rng.randrange(BLOCKS)
        if any(base <= block < base + length for block in reading):
            return None
        home_base = rng.randrange(BLOCKS - length + 1)
        return TLBEntry(seq=0, pid=0, home=(home_base, length), tm_base=base, mask=0, producer=0)

    async def bench(ctx):
        for cycle in range(cycles):
            where = f"{preset}, seed {seed}, cycle {cycle}"
            # Registered state at the start of the cycle.
            assert ctx.get(dut.blocked) == bits(p.pid for p in model.processes if p.blocked), where
            assert ctx.get(dut.pending) == bits(p.pid for p in model.processes
                                                if p.branches or p.mispredicted is not None), where
            in_tm = BranchUnitModel.reads_tm(model.processes, home)
            assert ctx.get(dut.reads_tm) == in_tm, where
            # The tracker's row counter says whether the searching branch's row is its last.
            rows_done = [branch.writer_search.row for branch in model.unit.searching(model.processes)]
            ctx.set(dut.search_last, bool(rows_done) and rows_done[0] == model.tracker.rows - 1)
            # Decode starts no search while one goes on next cycle (the "scan" stall).
            scan_busy = model.unit.searching_next_cycle(model.processes, model.tracker)
            assert ctx.get(dut.searching_next) == scan_busy, where
            seen.update(reads_tm=in_tm)
            entries = read_slots(ctx.get(dut.entries.as_value()))

            # Completions write memory before the branch unit reads it (steps 2 and 3).
            for block in rng.sample(blocks, 2):
                memory.words[block] = rng.choice(VALUES)
            data = [rng.getrandbits(REGISTER_BITS) for _ in lanes]      # no answer: noise
            for lane, block in answers.pop(cycle, []):
                data[lane] = memory.first_word(block)
            ctx.set(dut.read_data, data)

            # Released tags: the CDB's (the tracker's search ignores them) and squashed ones
            # elsewhere; now and then a squash releases every busy tag, waking a BR branch
            # at its search.
            cdb = tags(0.08)
            released = cdb | tags(0.04) | (set(busy) if rng.random() < 0.05 else set())
            ctx.set(dut.broadcast, bits(released))

            # Step 3: resolution.
            due = [branch for branch in model.branches() if branch.resolves_at == cycle]
            for proc in model.processes:
                proc.queue.redirected_to = None
            outcome = model.unit.resolve(cycle, model.processes, model.memory)
            resolved = [{"pid": branch.pid, "pc": branch.pc, "kind": branch.kind, "taken": taken,
                         "spec_id": branch.spec_id} for branch, taken in outcome.resolved]
            squashed = {branch.pid: branch.spec_id for branch in outcome.squashed}
            confirmed, freed = outcome.confirmed, outcome.confirmed + outcome.freed
            assert len(set(freed)) == len(freed), where

            resolving, taken = ctx.get(dut.resolving), ctx.get(dut.taken)
            # The model's order: by pid, then age, which is the number of older IDs in the mask.
            order = sorted((slot for slot in lanes if resolving >> slot & 1),
                           key=lambda slot: (entries[slot]["pid"], bin(entries[slot]["mask"]).count("1")))
            assert [{"pid": entries[slot]["pid"], "pc": entries[slot]["pc"],
                     "kind": BranchKind(entries[slot]["kind"]).name, "taken": bool(taken >> slot & 1),
                     "spec_id": slot if slot < hts.spec_ids else None} for slot in order] == resolved, where
            assert ctx.get(dut.confirm) == bits(confirmed), where
            assert ctx.get(dut.squash) == bits(squashed.values()), where
            redirects = {p.pid: p.queue.redirected_to for p in model.processes
                         if p.queue.redirected_to is not None}
            assert ctx.get(dut.redirect) == bits(redirects), where
            for pid, target in redirects.items():
                assert ctx.get(dut.redirect_pc[pid]) == min(target, hts.program_words), where
            assert ctx.get(dut.freed_ids) == bits(freed), where
            restore = ctx.get(dut.restore)
            assert bits(pid for pid in range(hts.processes) if restore[pid].valid) == bits(squashed), where
            for pid, spec_id in squashed.items():
                # The model's squash has just put the branch's mask back in the process.
                assert (restore[pid].slot, restore[pid].mask) == (spec_id, model.processes[pid].spec_mask), where
            seen.update(resolved=len(resolved), removed_while_due=len(due) - len(resolved),
                        squash=len(squashed), confirm=len(confirmed), redirect=len(redirects),
                        together=len(resolved) > 1)

            # The tracker search of a memory branch decoded before, a row a cycle, if no squash removed it.
            searching = [branch for branch in model.branches() if not branch.searched]
            for branch in searching:
                assert ctx.get(dut.search_block) == branch.block, where
            row = searching[0].writer_search.row if searching else 0
            model.tracker.writers = frozenset({tag for tag in busy if rng.random() < 0.4} or {busy[0]}
                                              if rng.random() < 0.5 else ())
            ctx.set(dut.writers, bits(model.tracker.row_writers(row) - cdb))
            model.unit.search(cycle, model.processes, model.tracker, frozenset(cdb))
            seen.update(searched_over_rows=any(branch.writer_search.row > 1 for branch in searching))
            seen.update(branch.kind for branch in searching)

            # Step 8: decode, of a process that may decode now.
            stopped = {p.pid for p in model.processes if p.blocked or cycle < p.resume_at}
            # Decode's "branch" stall: blocked, or restoring now (the model's resume_at).
            assert ctx.get(dut.blocked) | bits(pid for pid in squashed) == bits(stopped), where
            decodable = [p for p in model.processes if p.pid not in stopped]
            decoded, word = None, None
            if decodable and rng.random() < 0.6:
                proc = rng.choice(decodable)
                word, pc = random_word(rng, config, proc.pid)
                # Decode starts no search while one goes on (the "scan" stall).
                word = None if word.memory_branch and scan_busy else word
            if word is not None:
                proc.gprs[word.a], proc.gprs[word.b] = rng.choice(VALUES), rng.choice(VALUES)
                x, y = proc.gprs[word.a], proc.gprs[word.b]      # A and B may name one register
                block = rng.choice(blocks)
                model.tlb.translate_block = lambda _block, _pid, block=block: block
                decoded = model.unit.decode(cycle, proc, pc, word, model.tlb, model.decode.take_spec_id(word))
                memory_read = decoded.kind != "RR"
                ctx.set(dut.alloc, {
                    "valid": 1, "pid": proc.pid, "pc": pc, "target": min(decoded.target, hts.program_words),
                    "cond": decoded.word.cond, "kind": BranchKind[decoded.kind],
                    # Decode's wiring drives R[A] and the TLB's block whatever the kind.
                    "x": rng.choice(VALUES) if memory_read else x, "y": y,
                    "block": block,
                    "speculated": decoded.spec_id is not None, "spec_id": decoded.spec_id or 0,
                    "mask": decoded.mask})
                seen.update(RR=decoded.kind == "RR", speculated=decoded.spec_id is not None)
            else:
                ctx.set(dut.alloc.valid, 0)

            # Step 4 and end of cycle: a retarget, wake-ups and reads.
            retarget = retarget_for(released) if rng.random() < 0.3 else None
            drive_retarget(ctx, dut, retarget)
            if decoded is not None and retarget is not None:
                # The TLB's translation of a branch's block already has the retarget applied.
                tm_base, length = retarget.tm_base, retarget.home[1]
                if decoded.kind != "RR" and tm_base <= block < tm_base + length:
                    ctx.set(dut.alloc.block, block - tm_base + retarget.home[0])
                    seen.update(retargeted_at_decode=1)
            if retarget is not None:
                seen["retargeted"] += sum(retarget.tm_base <= b.block < retarget.tm_base + retarget.home[1]
                                          for b in model.branches())
            waiting = [(branch, branch.block) for branch in model.branches() if branch.waits_for]
            model.end_of_cycle(cycle, released, outcome, retarget)
            reads = {(slot_of(config, branch), block) for branch, block in waiting
                     if branch.resolves_at is not None and branch in model.branches()}
            seen.update(woken=len(reads), woken_at_search=any(branch in searching and branch.resolves_at is not None
                                                              for branch, _ in waiting))
            reads |= {(slot_of(config, branch), branch.block) for branch in searching
                      if branch.searched and branch.kind == "MR" and branch in model.branches()}
            read_valid, read_block = ctx.get(dut.read_valid), ctx.get(dut.read_block)
            requests = {(lane, read_block[lane]) for lane in lanes if read_valid >> lane & 1}
            assert requests == reads, where
            seen.update(reads_together=len(requests) > 1)
            answers[cycle + latency] = sorted(requests)

            await ctx.tick()
            where = f"{where} (after the edge)"
            expected = {slot_of(config, branch): expected_fields(config, branch, cycle + 1)
                        for branch in model.branches()}
            assert ctx.get(dut.valid) == bits(expected), where
            entries = read_slots(ctx.get(dut.entries.as_value()))
            for slot, fields in expected.items():
                assert {name: entries[slot][name] for name in fields} == fields, f"{where}, slot {slot}"

    run(dut, bench)
    exercised = ["resolved", "squash", "confirm", "redirect", "retargeted", "retargeted_at_decode", "woken",
                 "woken_at_search", "RR",
                 "MR", "BR", "speculated", "reads_tm"]
    if hts.spec_ids > 1:
        exercised += ["removed_while_due", "together", "reads_together"]
    if hts.tracker_rows > 2:
        exercised.append("searched_over_rows")
    assert all(seen[what] for what in exercised), seen


def test_retarget_of_a_read_under_way_is_caught(tiny_config):
    """The memory was asked for the TM block: moving the branch home now would read the wrong word."""
    dut, home = BranchUnit(tiny_config), tiny_config.memory.blocks

    async def bench(ctx):
        ctx.set(dut.alloc, {"valid": 1, "kind": BranchKind.MR, "block": home})
        await ctx.tick()
        ctx.set(dut.alloc.valid, 0)
        ctx.set(dut.retarget, 1)
        ctx.set(dut.retarget_tm, region_value((home, 1)))
        await ctx.tick()

    with pytest.raises(AssertionError, match="retarget"):
        run(dut, bench)
