"""The copy-back engine RTL against the model's (``models/copy_back.py``), cycle by cycle.

The model's engine runs on a reduced top level, whose end of cycle repeats the task
part of ``HTSModel._apply_retarget``: the queued tasks, running tasks with their
CDB tickets, a memory, and a TLB whose two choices (copyable, retargetable) the test
makes at random among the entries the real TLB could offer, instead of searching: the
engine only sequences them. Around the engine, real accelerator shells with latency
cores run the dispatched tasks, so the engine's ``retargetable_tags`` are built from the
shells' ``writeback_started`` and checked against the model's ``finishes - t >
transfer_cycles`` test (the set the TLB registers for the next cycle), and its retargets
land on the shells, up to the first cycle of a write-back. A memory behind the two
DMA ports answers as an always-ready memory, so copies take exactly the model's cycles;
a second test stalls the memory at random and checks the data and the delay.
"""

import random
from collections import Counter, deque
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.hdl import Module
from configs import latencies, preset
from queue_model import TaskSource, bit_set, delivered_task_record
from rtl_sim import region_value, run

from hts.base.config import with_values
from hts.hdl.accelerator import AcceleratorShell, LatencyCore
from hts.hdl.copy_back import CopyBackEngine
from hts.hdl.interfaces import instance_numbering
from hts.models.asr import Running
from hts.models.copy_back import CopyBackEngine as CopyBackModel, CopyBackStep, transfer_cycles
from hts.models.memory import Memory, read_beat, write_beat
from hts.models.memory_tracker import MemoryTracker
from hts.models.tlb import CopyBack, TLBEntry

pytestmark = pytest.mark.rtl


def short_latencies(config, block_words: int | None = None, per_beat: int | None = None):
    """Latencies from 2 cycles up in steps of one block's transfer, so that running
    producers are caught both before and after their write-back starts."""
    block_words = block_words or config.memory.block_words
    per_beat = per_beat or config.hts.copyback_words_per_cycle
    step = max(2, block_words // per_beat)
    cycles = [2 + step * index for index in range(len(config.accelerators))]
    return with_values(config, {**latencies(config, cycles), "memory.block_words": block_words,
                                "hts.copyback_words_per_cycle": per_beat})


SYSTEMS = {
    # (preset, block_words, copyback_words_per_cycle, cycles): None keeps the preset's.
    "default": ("default", None, None, 1000),    # 16 cycles a block
    "tiny": ("tiny", None, None, 4000),          # one task in flight at a time: slow traffic
    "narrow": ("default", 4, 4, 300),            # one cycle a block: short copies, one-beat copies
}


def system_config(system: str):
    name, block_words, per_beat, _ = SYSTEMS[system]
    return short_latencies(preset(name), block_words, per_beat)


def entry_value(entry: TLBEntry) -> dict:
    return {"pid": entry.pid, "home": region_value(entry.home), "tm_base": entry.tm_base, "mask": entry.mask,
            "producer": entry.producer, "producer_done": int(entry.producer_done)}


class Slots:
    """Slots for a list of entries: an entry keeps its slot until it leaves the list, and a
    new one takes the lowest free slot (any placement serves: the engine echoes slots)."""

    def __init__(self, count: int):
        self.held: list[TLBEntry | None] = [None] * count

    def place(self, entries: list[TLBEntry]):
        """Free the slots of entries gone from ``entries``, and give the new ones slots."""
        self.held = [entry if any(entry is live for live in entries) else None for entry in self.held]
        for entry in entries:
            if not any(entry is held for held in self.held):
                self.held[self.held.index(None)] = entry

    def of(self, entry: TLBEntry) -> int:
        return next(slot for slot, held in enumerate(self.held) if held is entry)


class ScriptedTLB:
    """The model TLB's entries, with its two choices drawn at random instead of searched.

    A choice is among the entries the real TLB could offer: resolved (mask 0) and, for a
    copy, produced; for a retarget, a producer not done that is among the tags the
    engine says may still be retargeted. One entry in four is held back until its
    producer starts writing back in the next cycle (``last_chance``, set by the bench),
    the last cycle it may be retargeted, and is then offered most of the time. The tags
    the model asks with are kept.
    """

    def __init__(self, rng: random.Random, config):
        self.rng, self.config = rng, config
        self.entries: list[TLBEntry] = []
        self.slots = Slots(config.hts.tlb_entries)
        self.tm_next = 0
        self.retarget_candidate = None   # offers are scripted, not chosen a cycle ahead
        self.copy_asked = False
        self.copy_choice = None
        self.last_chance: set[int] = set()

    def copy_candidates(self) -> list[TLBEntry]:
        return [entry for entry in self.entries if not entry.mask and entry.producer_done]

    def retarget_offer(self, busy, tags, cycle) -> TLBEntry | None:
        candidates = [entry for entry in self.entries
                      if not entry.mask and not entry.producer_done and entry.producer in tags]
        urgent = [entry for entry in candidates if entry.producer in self.last_chance]
        if urgent and self.rng.random() < 0.8:
            return self.rng.choice(urgent)
        candidates = [entry for entry in candidates if entry.seq % 4]
        return self.rng.choice(candidates) if candidates and self.rng.random() < 0.4 else None

    def copyable(self, busy_home) -> TLBEntry | None:
        candidates = self.copy_candidates()
        self.copy_asked = True
        # Mostly the oldest, as the real TLB's choice when nothing else holds it back.
        if candidates and self.rng.random() < 0.8:
            self.copy_choice = candidates[0] if self.rng.random() < 0.7 else self.rng.choice(candidates)
        return self.copy_choice

    def has_room(self, blocks: int) -> bool:
        return len(self.entries) < self.config.hts.tlb_entries and self.tm_next + blocks <= self.config.hts.tm_blocks


class CopyBackSurroundings:
    """An ``HTSModel`` reduced to what its copy-back engine reads and its retargets rewrite."""

    def __init__(self, config, tlb: ScriptedTLB, memory: Memory):
        self.tlb, self.memory = tlb, memory
        self.engine = CopyBackModel(config)
        self.tracker = MemoryTracker(0)          # its rewrite is the tracker's own test
        self.queued = []  # the queued tasks: the engine sees their tags only
        self.in_progress: list[Running] = []
        self.cdb = SimpleNamespace(tickets=[])

    def offer(self, t: int) -> TLBEntry | None:
        """At the start of the cycle: its retarget, on the producers retargetable last cycle."""
        return self.engine.retarget(t, self.tlb, self.tracker, self.queued, self.in_progress)

    def step(self, t: int, wanted: bool, retargeted: TLBEntry | None) -> CopyBackStep:
        return self.engine.step(t, self.tlb, self.tracker, self.memory, self.queued, self.in_progress, wanted,
                                retargeted)

    def retarget(self, entry: TLBEntry):
        """The task part of ``HTSModel._apply_retarget``: the producer and its readers use home."""
        tm = (entry.tm_base, entry.home[1])
        for task in self.in_flight():
            task.reads = entry.home if task.reads == tm else task.reads
            task.writes = entry.home if task.writes == tm else task.writes
        self.tlb.entries.remove(entry)

    def in_flight(self):
        return [*self.queued, *(run.task for run in self.in_progress + self.cdb.tickets)]


class ChangingInputs:
    """``ctx.set`` for inputs that mostly keep their value: only changes reach the simulator,
    as setting records is most of the bench's time."""

    def __init__(self, ctx):
        self.ctx, self.last = ctx, {}

    def set(self, port, value):
        if self.last.get(id(port), object()) != value:
            self.ctx.set(port, value)
            self.last[id(port)] = value


class BeatMemory:
    """Words of home memory and TM behind the engine's two DMA ports, one beat per request.

    ``stall`` is the chance that a port holds off a request in a cycle; read answers come
    ``latencies`` cycles after acceptance (at least one), in order, one a cycle.
    """

    def __init__(self, config, words: np.ndarray, rng: random.Random, stall: float = 0.0, latencies=(1,)):
        self.words, self.rng, self.stall, self.latencies = words, rng, stall, latencies
        self.per_beat = config.hts.copyback_words_per_cycle
        self.answers: deque[tuple[int, int]] = deque()     # (cycle due, beat)
        self.log: list[tuple[int, str, int]] = []            # (cycle, "read"/"write", word address)

    def beat(self, address: int) -> int:
        return read_beat(self.words, address, self.per_beat)

    def store(self, address: int, beat: int):
        write_beat(self.words, address, self.per_beat, beat)

    def drive(self, ctx, engine, cycle: int):
        """The memory's side of this cycle: ready, and the read answer due now."""
        ctx.set(engine.tm_port.ready, self.rng.random() >= self.stall)
        ctx.set(engine.home_port.ready, self.rng.random() >= self.stall)
        due = self.answers and self.answers[0][0] <= cycle
        ctx.set(engine.tm_port.rvalid, bool(due))
        ctx.set(engine.tm_port.rdata, self.answers.popleft()[1] if due else 0)

    def serve(self, ctx, engine, cycle: int):
        """Accept this cycle's requests (call after ``drive``, before the clock edge)."""
        tm, home = engine.tm_port, engine.home_port
        assert not ctx.get(tm.write) and not ctx.get(home.read), f"cycle {cycle}: a port in the wrong direction"
        if ctx.get(tm.read) and ctx.get(tm.ready):
            address = ctx.get(tm.addr)
            last = self.answers[-1][0] if self.answers else cycle
            self.answers.append((max(cycle + self.rng.choice(self.latencies), last + 1), self.beat(address)))
            self.log.append((cycle, "read", address))
        if ctx.get(home.write) and ctx.get(home.ready):
            address = ctx.get(home.addr)
            self.store(address, ctx.get(home.wdata))
            self.log.append((cycle, "write", address))


def random_memory(config, seed: int) -> Memory:
    memory = Memory(config)
    memory.words[:] = np.random.default_rng(seed).integers(-(1 << 31), 1 << 31, size=len(memory.words), dtype=np.int64)
    return memory


def expected_beats(config, copy: CopyBack) -> list[tuple[int, str, int]]:
    """The DMA requests of a copy against an always-ready memory: read beat k at t + k, write it at t + k + 1."""
    words, per_beat = config.memory.block_words, config.hts.copyback_words_per_cycle
    start, entry = copy.started, copy.entry
    beats = range(copy.finishes - start)
    return sorted([(start + k, "read", entry.tm_base * words + k * per_beat) for k in beats]
                  + [(start + k + 1, "write", entry.home[0] * words + k * per_beat) for k in beats])


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("seed", range(2))
def test_copy_back_matches_model(system, seed):
    config = system_config(system)
    hts, home_blocks = config.hts, config.memory.blocks
    numbering = instance_numbering(config)
    rng = random.Random(seed)
    tlb = ScriptedTLB(rng, config)
    model = CopyBackSurroundings(config, tlb, random_memory(config, seed))
    memory = BeatMemory(config, model.memory.words.copy(), rng)
    source = TaskSource(config, rng)
    engine = CopyBackEngine(config)
    shells = [AcceleratorShell(config, LatencyCore(config, class_index)) for class_index, _ in numbering]
    top = Module()
    top.submodules.engine = engine
    for flat, shell in enumerate(shells):
        top.submodules[f"shell{flat}"] = shell
        view = engine.shells[flat]
        top.d.comb += [view.busy.eq(shell.busy), view.writeback_started.eq(shell.writeback_started),
                       view.tag.eq(shell.current.tag), view.delivered.eq(shell.task.valid),
                       view.delivered_tag.eq(shell.task.payload.tag),
                       shell.retarget.eq(engine.shell_retarget[flat])]
    seen = Counter()                   # what the stimulus exercised, so the test cannot pass idle

    def occupied(flat: int) -> bool:
        return any(run.instance == flat for run in model.in_progress + model.cdb.tickets)

    async def bench(ctx):
        copy_started = None
        inputs = ChangingInputs(ctx)
        for shell in shells:
            ctx.set(shell.power_enable, 1)
        for t in range(SYSTEMS[system][3]):
            where = f"{system}, seed {seed}, cycle {t}"
            tlb.slots.place(tlb.entries)
            queued_tags = {task.tag for task in model.queued}
            # The retarget, from the start of the cycle; the scripted TLB favours producers
            # in their first write-back cycle, the last in which a retarget still lands.
            tlb.last_chance = {run.task.tag for run in model.in_progress
                               if run.finishes - t == transfer_cycles(config, run.task.writes[1])}
            retargeted = model.offer(t)

            # Complete: runs finishing now take CDB tickets; some tickets are granted.
            for running in [running for running in model.in_progress if running.finishes == t]:
                model.in_progress.remove(running)
                model.cdb.tickets.append(running)
            granted = [running for running in model.cdb.tickets if rng.random() < 0.5]
            for running in granted:
                model.cdb.tickets.remove(running)

            # Copy-back and retarget, on last cycle's stall reasons (phases of demand).
            if t % 40 == 0:
                demand = rng.choice([0.0, 0.5, 1.0])
            wanted = rng.random() < demand      # the top level's: a process stalled on the TLB
            tlb.copy_asked, tlb.copy_choice = False, None
            done = model.step(t, wanted, retargeted)

            # Dispatch: a queued task to a free instance of its class (not one granted now).
            busy_now = {run.instance for run in granted}
            delivered = {}
            for task in list(model.queued):
                free = [flat for flat, (c, _) in enumerate(numbering)
                        if c == task.class_index and not occupied(flat) and flat not in busy_now]
                if free and rng.random() < 0.5:
                    flat = rng.choice(free)
                    delivered[flat] = delivered_task_record(task)
                    busy_now.add(flat)
                    model.queued.remove(task)
                    latency = config.accelerators[task.class_index].latency
                    model.in_progress.append(Running(task, flat, t + 1, t + 1 + latency, latency))

            # Decode: new tasks on tags free at the start of the cycle, most of them
            # speculative, with a TLB entry (some of them resolved already).
            in_use = {task.tag for task in model.in_flight()} | {run.task.tag for run in granted}
            free_tags = [tag for tag in range(hts.tracker_entries) if tag not in in_use]
            if free_tags and rng.random() < 0.7:
                task = source.task(rng.choice(free_tags), [])
                task.ready = True
                blocks = rng.randrange(1, 4)
                if rng.random() < 0.7 and tlb.has_room(blocks):
                    tm_base = home_blocks + tlb.tm_next
                    tlb.tm_next += blocks
                    task.writes = (tm_base, blocks)
                    mask = 0 if rng.random() < 0.5 else rng.randrange(1, 1 << hts.spec_ids)
                    tlb.entries.append(TLBEntry(source.seq, task.pid, (rng.randrange(0, 24), blocks), tm_base,
                                                mask, task.tag))
                model.queued.append(task)

            # Drive the engine and the shells, as the model's cycle left them.
            inputs.set(engine.wanted, wanted)
            inputs.set(engine.queued_tags, sum(1 << tag for tag in queued_tags))
            ctx.set(engine.retarget_valid, retargeted is not None)
            if retargeted is not None:
                ctx.set(engine.retarget_index, tlb.slots.of(retargeted))
                ctx.set(engine.retarget_entry, entry_value(retargeted))
            # When the model does not ask (copy in progress, or none wanted), offer any
            # candidate: the engine must ignore it.
            offered = tlb.copy_choice if tlb.copy_asked else (
                rng.choice(tlb.copy_candidates()) if tlb.copy_candidates() and rng.random() < 0.5 else None)
            ctx.set(engine.copy_valid, offered is not None)
            if offered is not None:
                ctx.set(engine.copy_index, tlb.slots.of(offered))
                ctx.set(engine.copy_entry, entry_value(offered))
            for flat, shell in enumerate(shells):
                inputs.set(shell.task.valid, flat in delivered)
                if flat in delivered:
                    ctx.set(shell.task.payload, {"tag": delivered[flat]["tag"], "mask": delivered[flat]["mask"]})
                inputs.set(shell.granted, any(run.instance == flat for run in granted))
            memory.drive(ctx, engine, t)

            # What the engine decides.
            assert bit_set(ctx.get(engine.retargetable_tags)) == done.retargetable, where
            assert ctx.get(engine.retarget) == (retargeted is not None), where
            trace = ctx.get(engine.trace_retarget)
            assert trace.valid == (retargeted is not None), where
            if retargeted is not None:
                tm = ctx.get(engine.retarget_tm)
                assert (tm.base, tm.blocks) == (retargeted.tm_base, retargeted.home[1]), where
                home = ctx.get(engine.retarget_home)
                assert (home.base, home.blocks) == retargeted.home, where
                assert ctx.get(engine.retarget_producer) == retargeted.producer, where
                assert (trace.pid, trace.tag, (trace.home.base, trace.home.blocks), trace.tm) == (
                    retargeted.pid, retargeted.producer, retargeted.home, retargeted.tm_base), where
            trace = ctx.get(engine.trace_copyback)
            assert trace.valid == (done.started is not None), where
            if done.started is not None:
                copy_started = done.started
                entry = copy_started.entry
                assert (trace.pid, (trace.home.base, trace.home.blocks), trace.tm, trace.cycles) == (
                    entry.pid, entry.home, entry.tm_base, copy_started.finishes - t), where
            removed = [entry for entry in (retargeted, done.finished) if entry is not None]
            assert ctx.get(engine.remove) == sum(1 << tlb.slots.of(entry) for entry in removed), where
            for flat, shell in enumerate(shells):
                assert not ctx.get(shell.retarget_refused), f"{where}, instance {flat}"
            memory.serve(ctx, engine, t)
            if retargeted is not None:
                running = [run for run in model.in_progress if run.task.tag == retargeted.producer]
                seen["retarget of a running task"] += bool(running) and running[0].started < t
                seen["retarget at dispatch"] += bool(running) and running[0].started == t
                seen["retarget in the first cycle of write-back"] += retargeted.producer in tlb.last_chance
                seen["retarget of a queued task"] += retargeted.producer in {task.tag for task in model.queued}
            seen.update(copies=int(done.started is not None), offers_ignored=not tlb.copy_asked and offered is not None,
                        writing_back=sum(run.finishes - t <= transfer_cycles(config, run.task.writes[1])
                                         for run in model.in_progress))

            # End of cycle, in the order of HTSModel._end_of_cycle.
            finished = done.finished
            released = {run.task.tag for run in granted}
            for entry in tlb.entries:
                if entry.producer in released and not entry.producer_done:
                    entry.producer_done = True
                if rng.random() < 0.1:
                    entry.mask = 0                       # its branches are confirmed
            # A misprediction drops the entries under its bit, and squashes their producers
            # still in the window (running ones are left alone: they would need an abort).
            dropped = rng.randrange(1, 1 << hts.spec_ids) if rng.random() < 0.05 else 0
            waiting = {task.tag: task for task in model.queued}
            for entry in [entry for entry in tlb.entries if entry.mask & dropped]:
                if entry.producer_done or entry.producer in waiting:
                    tlb.entries.remove(entry)
                    if not entry.producer_done:
                        model.queued.remove(waiting[entry.producer])
            if retargeted is not None:
                model.retarget(retargeted)
            if finished is not None:
                tlb.entries.remove(finished)
                model.engine.finish()
            if not tlb.entries and not any(task.writes[0] >= home_blocks for task in model.in_flight()):
                tlb.tm_next = 0
            await ctx.tick()

            # A task granted in the cycle starts now, with that cycle's retarget applied.
            for running in model.in_progress:
                if running.started == t + 1:
                    ctx.set(shells[running.instance].delivered, delivered_task_record(running.task))
            assert ctx.get(engine.copying) == (model.engine.under_way is not None), where
            for running in model.in_progress + model.cdb.tickets:
                writes = ctx.get(shells[running.instance].current.writes)
                assert (writes.base, writes.blocks) == running.task.writes, f"{where}, instance {running.instance}"
            if finished is not None:
                assert [entry for entry in memory.log if entry[0] >= copy_started.started] == \
                    expected_beats(config, copy_started), where
                assert np.array_equal(memory.words, model.memory.words), f"{where}: memory differs after the copy"
        if model.engine.under_way is None:       # else the engine has written part of the copy, the model none
            assert np.array_equal(memory.words, model.memory.words), f"{system}, seed {seed}: memory differs"

    run(top, bench)
    exercised = ["copies", "offers_ignored", "retarget of a queued task", "retarget at dispatch",
                 "retarget of a running task", "retarget in the first cycle of write-back", "writing_back"]
    assert all(seen[what] for what in exercised), f"seed {seed}: stimulus missed a case: {seen}"


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("seed", range(2))
def test_copy_back_survives_memory_stalls(system, seed):
    """A memory that holds off requests and answers late: the data still arrive home
    intact, beat by beat in order, and the copies finish later than the model's cycles."""
    config = system_config(system)
    hts, home_blocks, words = config.hts, config.memory.blocks, config.memory.block_words
    per_beat = hts.copyback_words_per_cycle
    rng = random.Random(seed)
    engine = CopyBackEngine(config)
    memory = BeatMemory(config, random_memory(config, seed).words, rng, stall=0.3, latencies=(1, 2, 3))

    entries: list[TLBEntry] = []        # the TLB: every entry resolved and produced
    slots = Slots(hts.tlb_entries)
    tm_next = 0
    finishes = []                       # (cycles taken, cycles the model takes)
    switched = 0                        # copies during which the TLB offered another slot

    async def bench(ctx):
        nonlocal tm_next, switched
        copy = None                     # (start cycle, entry)
        ctx.set(engine.wanted, 1)
        for t in range(400):
            where = f"{system}, seed {seed}, cycle {t}"
            slots.place(entries)
            offered = rng.choice(entries) if entries and rng.random() < 0.7 else None
            ctx.set(engine.copy_valid, offered is not None)
            if offered is not None:
                ctx.set(engine.copy_index, slots.of(offered))
                ctx.set(engine.copy_entry, entry_value(offered))
                switched += copy is not None and offered is not copy[1]
            memory.drive(ctx, engine, t)

            assert ctx.get(engine.copying) == (copy is not None and copy[0] < t), where
            trace = ctx.get(engine.trace_copyback)
            assert trace.valid == (copy is None and offered is not None), where
            if trace.valid:
                assert trace.cycles == transfer_cycles(config, offered.home[1]), where
                copy = (t, offered)
            remove = ctx.get(engine.remove)
            memory.serve(ctx, engine, t)
            if remove:
                start, entry = copy
                assert remove == 1 << slots.of(entry), where
                beats = transfer_cycles(config, entry.home[1])
                tm, home = entry.tm_base * words, entry.home[0] * words
                log = [(kind, address) for cycle, kind, address in memory.log if cycle >= start]
                assert [address for kind, address in log if kind == "read"] == \
                    [tm + k * per_beat for k in range(beats)], where
                assert [address for kind, address in log if kind == "write"] == \
                    [home + k * per_beat for k in range(beats)], where
                assert np.array_equal(memory.words[home:home + entry.home[1] * words],
                                      memory.words[tm:tm + entry.home[1] * words]), f"{where}: copy corrupted"
                finishes.append((t - start, beats))
                entries.remove(entry)
                copy = None
            # Other entries come and go (decode allocates, squashes and retargets remove)
            # while the copied one keeps its slot.
            if entries and rng.random() < 0.1:
                leaving = rng.choice(entries)
                if copy is None or leaving is not copy[1]:
                    entries.remove(leaving)
            blocks = rng.randrange(1, 4)
            if not entries:
                tm_next = 0
            if len(entries) < hts.tlb_entries and tm_next + blocks <= hts.tm_blocks and rng.random() < 0.3:
                entries.append(TLBEntry(t, 0, (rng.randrange(0, 24), blocks), home_blocks + tm_next, 0, 0, True))
                tm_next += blocks
            await ctx.tick()

    run(engine, bench)
    assert len(finishes) >= 3, f"seed {seed}: too few copies: {finishes}"
    assert all(taken >= cycles for taken, cycles in finishes), finishes
    assert any(taken > cycles for taken, cycles in finishes), f"seed {seed}: no copy was delayed: {finishes}"
    assert switched or hts.tlb_entries == 1, f"seed {seed}: the TLB never offered another slot during a copy"
