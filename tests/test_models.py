"""Reference models: the three contracts, on benchmarks and on random programs.

Sequential equivalence is checked twice over: home memory at the end, and the data
every committed task read and wrote (a wrong value can be overwritten before the end).
"""

import collections
import dataclasses
import io
import os
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from isolation import shared_windows, windows_example

from hts import benchmarks
from hts.assembler import assemble
from hts.base.config import load_config, with_values
from hts.cosim.progen import random_config, random_programs, random_windows
from hts.isa import FaultCause
from hts.models.dispatch import START_DELAY
from hts.models.executor import run_sequential
from hts.models.hts import HTSModel
from hts.models.memory import initial_memory, outside_windows
from hts.models.simulate import SCHEDULERS, simulate

CYCLE_SCHEDULERS = ("hts", "hts-nospec", "runtime")


def programs_for(name, config):
    return [assemble(benchmarks.source(name), config, f"{name}.s")]


def assert_sequentially_equivalent(config, programs, seed=0, schedulers=CYCLE_SCHEDULERS):
    """Same memory, committed tasks and faults (where each process stopped) as in order."""
    reference = run_sequential(programs, config, initial_memory(config, seed))
    expected_tasks = collections.Counter((t.pid, t.pc, t.data) for t in reference.tasks)
    for scheduler in schedulers:
        result = simulate(config, programs, initial_memory(config, seed), scheduler)
        assert result.memory.digest() == reference.memory.digest(), scheduler
        assert collections.Counter(result.committed) == expected_tasks, scheduler
        assert faults_of(result) == faults_of(reference), scheduler
    return reference


def faults_of(result):
    return sorted((f.pid, f.pc, f.cause) for f in result.faults)


@pytest.mark.parametrize("preset", ["default", "tiny", "large", "inflight128"])
@pytest.mark.parametrize("name", benchmarks.BENCHMARKS)
def test_benchmarks_are_sequentially_equivalent(preset, name):
    config = load_config(preset)
    assert_sequentially_equivalent(config, programs_for(name, config))


@pytest.mark.parametrize("kind", ["independent", "chain"])
@pytest.mark.parametrize("preset", ["default", "inflight128"])
def test_tasks_in_flight_reach_the_tracker(preset, kind):
    """256 one-class tasks (the throughput benchmark's programs): nothing but the tags holds
    tasks back, so decode stops with every tag in flight (16 on the default, 128 on inflight128)."""
    from hts.flows.throughput import in_flight_limit, program_text
    config = load_config(preset)
    peak, stalls = 0, collections.Counter()

    def observe(view):
        nonlocal peak
        peak = max(peak, view.start.tracker)
        stalls.update(view.stalls.values())

    programs = [assemble(program_text(kind, config, 256), config, f"{kind}.s")]
    simulate(config, programs, initial_memory(config), "hts", observer=observe)
    assert peak == in_flight_limit(config) == config.hts.tracker_entries
    assert stalls["tracker_full"] > 0


def test_cycles_that_only_drop_dead_heads_are_not_skipped():
    """Fuzz system ``small``, seed 178: dead entries ahead of a live ready task, nothing
    running and no timer due. Dropping a dead head changes the lists, so the model must
    step those cycles, not skip them as idle (it stopped as deadlocked)."""
    from hts.cosim.fuzz import fuzz_case, fuzz_system
    config = fuzz_system("small")
    result = fuzz_case(config, "small", 178).reference(config)
    assert result.tasks > 0


@pytest.mark.parametrize("preset", ["default", "tiny"])
def test_audio_taken_branch_is_sequentially_equivalent(preset):
    config = load_config(preset)
    assert_sequentially_equivalent(config, [assemble(benchmarks.audio_compression(4, taken=True), config)])


@pytest.mark.system
@settings(max_examples=500)
@given(st.integers(0, 2**32 - 1))
def test_random_programs_are_sequentially_equivalent_and_finish(seed):
    """Random systems (down to one entry everywhere) running 1-3 random processes."""
    rng = random.Random(seed)
    config = random_config(rng)
    programs = [assemble(text, config, f"seed{seed}_pid{pid}.s")
                for pid, text in enumerate(random_programs(rng, config))]
    assert_sequentially_equivalent(config, programs, seed)


@pytest.mark.system
@settings(max_examples=300)
@given(st.integers(0, 2**32 - 1))
def test_random_programs_in_windows_fault_alike_and_write_only_their_windows(seed):
    """Each process in a window of its own; some base registers point anywhere (wild)."""
    rng = random.Random(seed)
    config = random_config(rng, processes=rng.randint(2, 3))
    config = dataclasses.replace(config, windows=random_windows(rng, config))
    programs = [assemble(text, config, f"seed{seed}_pid{pid}.s")
                for pid, text in enumerate(random_programs(rng, config, wild=0.05))]
    reference = assert_sequentially_equivalent(config, programs, seed)
    outside = outside_windows(config)
    assert (reference.memory.home[outside] == initial_memory(config, seed).home[outside]).all()


def test_a_faulting_process_leaves_the_others_as_if_alone():
    config, programs = windows_example()
    both = simulate(config, programs, initial_memory(config))
    [fault] = both.faults
    assert (fault.pid, fault.pc, fault.cause, fault.location.line) == (1, 3, FaultCause.OUTPUT, 6)
    alone = simulate(config, programs[:1], initial_memory(config))
    window, words = config.window(0), config.memory.block_words
    assert (both.memory.home[window.base * words:window.end * words]
            == alone.memory.home[window.base * words:window.end * words]).all()
    assert [e.fields["pc"] for e in both.trace.of("complete") if e.fields["pid"] == 1] == [0]


def test_a_process_never_reads_another_processes_speculative_copy(default_config):
    config, programs = shared_windows(default_config)
    result = simulate(config, programs, initial_memory(config))
    [read] = [e for e in result.trace.of("dispatch") if e.fields["pid"] == 1]
    assert read.fields["reads"] == [0x40, 1]            # home, never process 0's TM copy
    assert result.stalls.get("tlb_conflict", 0) > 0


MISPREDICTED = """\
        mov   ffff 0 r1 0 0 0 0
        if    300 r1 skip 0 0 0 d 0      ; MR, speculated, NEQ: taken
        fft_256     18 8 60 8 1 0 0 0    ; speculative: into TM, then aborted
        real_fir    10 1 40 1 2 0 0 0    ; speculative: into TM, then aborted or squashed
skip:   vector_add  24 2 46 1 3 0 0 0
"""


def test_misprediction_leaves_no_trace_in_home_memory(default_config):
    program = assemble(MISPREDICTED, default_config)
    before = initial_memory(default_config)
    model = HTSModel(default_config, [program], initial_memory(default_config))
    result = model.run()
    [branch] = result.trace.of("branch")
    assert branch.fields["taken"] and branch.fields["spec_id"] is not None
    assert result.trace.of("squash") and result.trace.of("abort")
    speculative = [e for e in result.trace.of("dispatch") if e.fields["pc"] in (2, 3)]
    assert speculative and all(e.fields["writes"][0] >= default_config.memory.blocks for e in speculative)
    block = default_config.memory.block_words
    for base, count in ((0x60, 8), (0x40, 1)):   # what the squashed tasks would have written
        assert (result.memory.home[base * block:(base + count) * block] ==
                before.home[base * block:(base + count) * block]).all()
    assert result.tasks == 1 and not result.trace.of("copyback")
    assert_sequentially_equivalent(default_config, [program])


TLB_PRESSURE = """\
        mov   0 0 r1 0 0 0 0
        fft_256     18 8 41 8 0 0 0 0    ; the branch waits for this long task (BR)
        if    41 r1 skip 0 0 0 c 0       ; BR, speculated, EQ: not taken, as predicted
        vector_max  10 1 50 1 1 0 0 0    ; speculative, short: takes the only TLB entry
        vector_max  11 1 51 1 2 0 0 0    ; speculative: waits for TLB room (tlb_full)
        real_fir    50 1 53 1 4 0 0 0    ; reads 0x50: remapped to its TM copy
skip:
"""


def test_tlb_full_stalls_and_copies_back(tiny_config):
    # One TLB entry, but room elsewhere so that speculative tasks reach decode.
    config = with_values(tiny_config, {"hts.tracker_entries": 8})
    program = assemble(TLB_PRESSURE, config)
    result = HTSModel(config, [program], initial_memory(config)).run()
    assert result.stalls.get("tlb_full", 0) > 0
    home = config.memory.blocks
    decodes = {e.fields["pc"]: e.fields for e in result.trace.of("decode")}
    assert decodes[3]["writes"][0] >= home and decodes[3]["mask"]       # into TM
    assert decodes[4]["writes"] == [0x51, 1] and not decodes[4]["mask"]  # after the branch: home
    assert decodes[5]["reads"] == [decodes[3]["writes"][0], 1]         # remapped reader
    [copyback] = result.trace.of("copyback")                             # written home at last
    assert copyback.fields["home"] == [0x50, 1]
    assert copyback.cycle > next(e.cycle for e in result.trace.of("complete") if e.fields["pc"] == 3)
    assert_sequentially_equivalent(config, [program])


TLB_REUSE = """\
        mov   0 0 r1 0 0 0 0
        iir         10 1 41 1 0 0 0 0
        if    41 r1 one 0 0 0 c 0        ; first speculation: right (not taken)
        vector_max  10 1 50 1 1 0 0 0    ; takes the only TLB entry; done before the branch
one:    fft_256     18 8 60 8 2 0 0 0    ; a long producer for the second branch
        if    60 r1 two 0 0 0 c 0        ; second speculation, resolved after the FFT
        real_fir    11 1 51 1 3 0 0 0    ; needs the TLB entry: copy-back of 0x50 first
two:    vector_add  24 2 46 1 4 0 0 0
"""


def test_tlb_stall_starts_a_copy_back_before_the_program_ends(default_config):
    config = with_values(default_config, {"hts.tlb_entries": 1})
    program = assemble(TLB_REUSE, config)
    result = HTSModel(config, [program], initial_memory(config)).run()
    assert result.stalls.get("tlb_full", 0) > 0
    copyback = result.trace.of("copyback")[0]
    assert copyback.fields["home"] == [0x50, 1]
    second_branch = next(e for e in result.trace.of("branch") if e.fields["pc"] == 5)
    assert copyback.cycle < second_branch.cycle          # while still speculating, not at the end
    speculative = next(e for e in result.trace.of("decode") if e.fields["pc"] == 6)
    assert speculative.cycle > copyback.cycle and speculative.fields["mask"]
    assert_sequentially_equivalent(config, [program])


OLDER_READER = """\
        mov   0 0 r1 0 0 0 0
        fft_256     50 8 60 8 0 0 0 0    ; a long, older reader of blocks 0x50-0x57
        vector_max  10 1 41 1 1 0 0 0
        if    41 r1 skip 0 0 0 c 0       ; speculated, right
        real_fir    11 1 50 1 2 0 0 0    ; writes 0x50 into TM: renamed, no WAR stall
skip:
"""


def test_copy_back_waits_for_older_readers_of_the_home_region(default_config):
    program = assemble(OLDER_READER, default_config)
    result = HTSModel(default_config, [program], initial_memory(default_config)).run()
    fft_done = next(e.cycle for e in result.trace.of("complete") if e.fields["pc"] == 1)
    fir = next(e for e in result.trace.of("dispatch") if e.fields["pc"] == 4)
    assert fir.cycle < fft_done                           # renaming let it run early
    [copyback] = result.trace.of("copyback")
    assert copyback.cycle > fft_done                      # but home is written after the FFT read it
    assert not result.trace.of("retarget")                # writing home early would break WAR
    assert_sequentially_equivalent(default_config, [program])


RETARGET = """\
        mov   0 0 r1 0 0 0 0
        vector_max  10 1 41 1 0 0 0 0    ; the branch waits for this short task (BR)
        if    41 r1 skip 0 0 0 c 0       ; speculated, right
        fft_256     18 8 60 8 1 0 0 0    ; speculative, still computing when the branch resolves
        correlation 60 8 50 1 2 0 0 0    ; reads the FFT's TM copy until the retarget
        if    60 r1 skip 0 0 0 8 0       ; BR on a block of that copy, not speculated
        vector_add  24 2 46 1 3 0 0 0
skip:
"""


def test_resolved_producer_is_retargeted_home_instead_of_copied_back(default_config):
    program = assemble(RETARGET, default_config)
    result = HTSModel(default_config, [program], initial_memory(default_config)).run()
    home = default_config.memory.blocks
    branch = next(e for e in result.trace.of("branch") if e.fields["pc"] == 2)
    retargets = {tuple(e.fields["home"]): e.cycle for e in result.trace.of("retarget")}
    # Resolved at the end of the branch's cycle, chosen the cycle after, retargeted the next; one per cycle.
    assert retargets == {(0x60, 8): branch.cycle + 2, (0x50, 1): branch.cycle + 3}
    decodes = {e.fields["pc"]: e.fields for e in result.trace.of("decode")}
    dispatches = {e.fields["pc"]: e.fields for e in result.trace.of("dispatch")}
    assert decodes[3]["writes"][0] >= home and dispatches[3]["writes"][0] >= home   # sent to TM...
    assert decodes[4]["reads"] == [decodes[3]["writes"][0], 8]                       # ...and read there
    assert dispatches[4]["reads"] == [0x60, 8]            # the reader follows the producer home
    assert not result.trace.of("copyback")                # nothing left to copy
    assert_sequentially_equivalent(default_config, [program])


WRONG_PATH_FAULT = """\
        mov   ffff 0 r1 0 0 0 0          ; not a block: only the wrong path uses it
        mov   0 0 r2 0 0 0 0
        mov   40 0 r3 0 0 0 0
        if    300 r2 skip 0 0 0 d 0      ; speculated not taken, but taken
        real_fir r1 1 r3 1 0 0 1 0       ; would read past the end of memory
skip:   real_fir 10 1 20 1 1 0 0 0
"""


def test_a_fault_on_a_mispredicted_path_is_squashed_not_raised(default_config):
    program = assemble(WRONG_PATH_FAULT, default_config)
    result = HTSModel(default_config, [program], initial_memory(default_config)).run()
    assert result.stalls.get("speculative_fault", 0) > 0
    assert result.trace.of("squash")
    assert_sequentially_equivalent(default_config, [program])


def test_a_fault_on_the_real_path_stops_the_process_and_names_its_line(default_config):
    program = assemble(WRONG_PATH_FAULT.replace("d 0      ; speculated", "c 0      ; speculated"), default_config)
    for scheduler in SCHEDULERS:
        result = simulate(default_config, [program], initial_memory(default_config), scheduler)
        [fault] = result.faults
        assert (fault.pid, fault.pc, fault.cause) == (0, 4, FaultCause.INPUT), scheduler
        assert re.search(r":5: process 0 faulted at pc 4: input region \[0xffff, 0x10000\) \(from r1\) leaves "
                         r"the window \[0x0, 0x1000\)", str(fault.error())), scheduler
        assert result.tasks == 0, scheduler           # the task after it never ran


def dispatch_and_complete(result, pc):
    dispatch = next(e.cycle for e in result.trace.of("dispatch") if e.fields["pc"] == pc)
    complete = next(e.cycle for e in result.trace.of("complete") if e.fields["pc"] == pc)
    return dispatch, complete


@pytest.mark.parametrize("second,hazard", [
    ("real_fir 40 1 20 1 1 0 0 0", "RAW"),
    ("real_fir 20 1 10 1 1 0 0 0", "WAR"),
    ("real_fir 20 1 40 1 1 0 0 0", "WAW"),
    ("real_fir 41 1 20 1 1 0 0 0", "RAW through overlap"),   # 0x41 lies inside [0x40, 0x42)
])
def test_hazards_order_the_second_task_after_the_first(default_config, second, hazard):
    program = assemble(f"real_fir 10 1 40 2 0 0 0 0\n{second}\n", default_config)
    result = HTSModel(default_config, [program], initial_memory(default_config)).run()
    _, first_done = dispatch_and_complete(result, 0)
    second_start, _ = dispatch_and_complete(result, 1)
    # Granted at first_done, broadcast the cycle after; the walker reads the waiter the
    # cycle after that and decrements its count at that cycle's end; it dispatches the next.
    assert second_start == first_done + 4, hazard


def test_independent_tasks_overlap(default_config):
    program = assemble("real_fir 10 1 40 1 0 0 0 0\nreal_fir 11 1 41 1 1 0 0 0\n", default_config)
    result = HTSModel(default_config, [program], initial_memory(default_config)).run()
    first, first_done = dispatch_and_complete(result, 0)
    second, _ = dispatch_and_complete(result, 1)
    assert first < second < first_done


def test_pipeline_timing_of_one_task(default_config):
    """fetch at 0, in flight at 1, queued at 2, decode at 3, the tracker search in 4 and 5
    (two rows), enqueue at 5 (listed at its edge), dispatch at 6, start at 7, complete latency
    later, broadcast the cycle after, end the next."""
    program = assemble("real_fir 10 1 40 1 0 0 0 0\n", default_config)
    result = HTSModel(default_config, [program], initial_memory(default_config)).run()
    cycles = {e.event: e.cycle for e in result.trace.events}
    assert default_config.hts.tracker_rows == 2
    assert (cycles["decode"], cycles["enqueue"], cycles["dispatch"]) == (3, 5, 6)
    assert cycles["complete"] == 6 + START_DELAY + 921
    assert cycles["end"] == cycles["complete"] + 2 and result.cycles == cycles["end"] + 1


@pytest.mark.parametrize("lanes,rows", [(16, 1), (8, 2), (5, 4), (1, 16)])
def test_a_search_of_several_rows_delays_enqueue_and_the_next_decode(default_config, lanes, rows):
    """A task searches the tracker a row of ``lanes`` entries a cycle from the cycle after
    its decode and is enqueued in the cycle of its last row; decode starts no
    search while one goes on next cycle (stall ``scan``), so the next task decodes then."""
    config = with_values(default_config, {"hts.tracker_lanes": lanes})
    text = "real_fir 10 1 40 1 0 0 0 0\nreal_fir 11 1 41 1 1 0 0 0\n"
    result = HTSModel(config, [assemble(text, config)], initial_memory(config)).run()
    decodes = [e.cycle for e in result.trace.of("decode")]
    enqueues = [e.cycle for e in result.trace.of("enqueue")]
    assert decodes == [3, 3 + rows] and enqueues == [3 + rows, 3 + 2 * rows]
    assert result.stalls.get("scan", 0) == rows - 1


@pytest.mark.parametrize("lanes", [1, 3, 16])
def test_a_memory_branch_reads_after_the_last_row_of_its_search(default_config, lanes):
    """An MR branch's read starts in the cycle of its search's last row: its resolution
    comes ``rows - 1`` cycles later than with one row."""
    resolved = {}
    for lanes_now in (16, lanes):
        config = with_values(default_config, {"hts.tracker_lanes": lanes_now})
        text = "if 7 0 1 0 0 0 8 0\nreal_fir 10 1 40 1 0 0 0 0\n"        # MR EQ: 0 == 0, taken
        result = HTSModel(config, [assemble(text, config)], initial_memory(config)).run()
        resolved[lanes_now] = [e.cycle for e in result.trace.of("branch")]
    assert resolved[lanes] == [cycle + config.hts.tracker_rows - 1 for cycle in resolved[16]]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_search_row_by_row_finds_what_one_compare_of_every_entry_finds(data):
    """With nothing released meanwhile, the rows together find exactly the entries a
    one-cycle search of all of them finds, whatever the number of lanes."""
    from hts.models.memory_tracker import MemoryTracker, Search, TrackerEntry, overlaps
    entries = data.draw(st.integers(1, 12))
    lanes = data.draw(st.integers(1, entries))
    region = st.tuples(st.integers(0, 20), st.integers(0, 4))
    tracker = MemoryTracker(entries, lanes)
    for tag in range(entries):
        if data.draw(st.booleans()):
            tracker.allocate(tag, TrackerEntry(0, data.draw(region), data.draw(region)))
    reads, writes = data.draw(region), data.draw(region)
    ignoring = frozenset(data.draw(st.sets(st.integers(0, entries - 1))))
    search = Search()
    while not tracker.search_dependences(search, reads, writes, ignoring):
        pass
    assert search.row == -(-entries // lanes)
    assert search.found == {tag for tag, entry in enumerate(tracker.entries)
                            if entry is not None and tag not in ignoring and (
                                overlaps(reads, entry.writes) or overlaps(writes, entry.reads)
                                or overlaps(writes, entry.writes))}


def test_a_jump_target_decodes_four_cycles_after_the_jump(default_config):
    """The jump redirects fetch at its decode (t); the target is fetched at t + 1, in
    flight at t + 2, queued at t + 3 and decoded at t + 4; a task behind it in the queue
    never decodes."""
    text = "jump 0 0 2 0 0 0 0\nreal_fir 20 1 50 1 1 0 0 0\nreal_fir 10 1 40 1 0 0 0 0\n"
    result = HTSModel(default_config, [assemble(text, default_config)], initial_memory(default_config)).run()
    assert [e.fields["pc"] for e in result.trace.of("decode")] == [2]
    assert result.trace.of("decode")[0].cycle == 3 + 4   # the jump decodes at 3


def test_mul_keeps_decode_busy_for_a_cycle(default_config):
    """Nothing decodes in the cycle after a mul (its product is written then), whatever
    reads it; the register then holds the product."""
    decode_cycle = {}
    for op in ("add", "mul"):
        text = f"mov 3 0 r1 0 0 0 0\n{op} r1 r1 r2 0 0 0 0\nreal_fir 10 1 40 1 0 0 0 0\n"
        result = HTSModel(default_config, [assemble(text, default_config)], initial_memory(default_config)).run()
        decode_cycle[op] = result.trace.of("decode")[0].cycle
        assert result.registers[0][2] == (6 if op == "add" else 9)
        assert result.stalls.get("decoder_busy", 0) == (op == "mul")
    assert decode_cycle["mul"] == decode_cycle["add"] + 1


def test_register_branch_costs_two_bubbles(default_config):
    straight = "mov 1 0 r1 0 0 0 0\nreal_fir 10 1 40 1 0 0 0 0\n"
    branchy = "mov 1 0 r1 0 0 0 0\nif r1 r1 1 0 0 0 1 0\nreal_fir 10 1 40 1 0 0 0 0\n"  # RR NEQ: not taken
    decode_cycle = []
    for text in (straight, branchy):
        result = HTSModel(default_config, [assemble(text, default_config)], initial_memory(default_config)).run()
        decode_cycle.append(result.trace.of("decode")[0].cycle)
        kinds = [e.fields["kind"] for e in result.trace.of("branch")]
    assert kinds == ["RR"]
    # One cycle for the if, one for its registered compare, one to resolve.
    assert decode_cycle[1] == decode_cycle[0] + 3


def test_long_latencies_are_fast_forwarded(default_config):
    result = HTSModel(default_config, programs_for("no_dependency", default_config),
                      initial_memory(default_config)).run()
    assert result.cycles > 10_000 and result.simulated_cycles < 200


GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.mark.parametrize("name", ["branch_taken_no_dependency", "audio_compression"])
def test_trace_matches_the_golden_trace(default_config, name):
    """The trace is the RTL's contract: a change of timing must be deliberate.

    After a deliberate change, regenerate with HTS_UPDATE_GOLDEN=1 pytest -k golden and
    review the diff of tests/data/golden/ (and docs/microarchitecture.md) in the commit.
    """
    result = HTSModel(default_config, programs_for(name, default_config), initial_memory(default_config)).run()
    out = io.StringIO()
    result.trace.write_jsonl(out)
    path = GOLDEN / f"{name}.default.jsonl"
    if os.environ.get("HTS_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(out.getvalue())
    assert out.getvalue() == path.read_text()


def test_paper_orderings_hold(default_config):
    """Naive slowest; HTS at least as fast as the runtime; more instances help both."""
    one = load_config("tiny")
    for name in benchmarks.SYNTHETIC:
        cycles = {s: simulate(default_config, programs_for(name, default_config), initial_memory(default_config),
                              s).cycles for s in ("naive", "runtime", "hts")}
        assert cycles["naive"] > cycles["runtime"] >= cycles["hts"], name
    for scheduler in ("runtime", "hts"):
        few = simulate(one, programs_for("loop_no_dependency", one), initial_memory(one), scheduler).cycles
        many = simulate(default_config, programs_for("loop_no_dependency", default_config),
                        initial_memory(default_config), scheduler).cycles
        assert many < few, scheduler


@pytest.mark.parametrize("name", ["audio_compression", "branch_not_taken_no_dependency"])
@pytest.mark.parametrize("preset", ["default", "large"])
def test_speculation_helps_a_correct_prediction(name, preset):
    """Bus-read branch (audio) and memory-read branch: the predicted way wins both times."""
    config = load_config(preset)
    programs = programs_for(name, config)
    spec = simulate(config, programs, initial_memory(config), "hts").cycles
    nospec = simulate(config, programs, initial_memory(config), "hts-nospec").cycles
    assert spec < nospec


@pytest.mark.parametrize("name", ["branch_taken_no_dependency", "branch_taken_dependency", "audio_taken"])
def test_speculation_costs_little_on_a_misprediction(name, default_config):
    programs = ([assemble(benchmarks.audio_compression(8, taken=True), default_config, "audio.s")]
                if name == "audio_taken" else programs_for(name, default_config))
    spec = simulate(default_config, programs, initial_memory(default_config), "hts").cycles
    nospec = simulate(default_config, programs, initial_memory(default_config), "hts-nospec").cycles
    assert spec <= nospec * 1.01


def test_several_processes_share_the_back_end():
    config = load_config("large")
    first = assemble(benchmarks.source("no_dependency"), config)
    # The second process works in its own memory, above the first's.
    second_text = "".join(f"real_fir {0x1000 + i:x} 1 {0x1100 + i:x} 1 0 {{pid}} 0 0\n" for i in range(6))
    second = assemble(second_text.format(pid=1), config)
    together = simulate(config, [first, second], initial_memory(config), "hts")
    assert {e.fields["pid"] for e in together.trace.of("end")} == {0, 1}
    apart = (simulate(config, [first], initial_memory(config), "hts").cycles
             + simulate(config, [assemble(second_text.format(pid=0), config)], initial_memory(config), "hts").cycles)
    assert together.cycles < apart
    assert_sequentially_equivalent(config, [first, second])
