"""The whole scheduler in the Amaranth simulator against the cycle model, cycle for cycle.

Every benchmark program on the default and the tiny configuration: the RTL's trace
(read from its trace port, ``hts.hdl.trace``) must equal the model's event for event,
in the same cycles; the run must end in the model's cycle, and leave the same memory.
Random programs on random small configurations (several processes, speculation, loops,
indirect tasks) cover what the ten benchmarks do not.
"""

import dataclasses
import random

import pytest
from amaranth.hdl import Fragment
from configs import latencies, preset
from isolation import shared_windows, windows_example
from system_sim import first_difference, run_rtl

from hts import benchmarks
from hts.assembler import Program, assemble
from hts.base.config import load_config, with_values
from hts.cosim.progen import random_config, random_programs, random_windows
from hts.hdl.hts import HTS
from hts.hdl.trace import canonical
from hts.isa import RESERVED_ACCEL_ID, FaultCause, Opcode, Word
from hts.models.hts import HTSModel
from hts.models.memory import initial_memory, outside_windows

pytestmark = pytest.mark.system


def assert_lockstep(config, programs, seed: int = 0, reset_after: int | None = None):
    model = HTSModel(config, programs, initial_memory(config, seed)).run()
    expected = canonical([event.as_dict() for event in model.trace.events])
    rtl = run_rtl(config, programs, initial_memory(config, seed), cycle_limit=model.cycles + 100,
                  reset_after=reset_after)
    difference = first_difference(expected, rtl.events)
    assert difference is None, difference
    assert rtl.ended and rtl.cycles == model.cycles
    assert rtl.faults == [(f.cycle, f.pid, f.pc, f.cause.name) for f in model.faults]
    assert (rtl.memory.words == model.memory.words).all(), "memory differs from the model's"
    return model


# Every benchmark on tiny, three on the default (the co-simulation runs all ten on both,
# through Verilator); `pytest -m slow` adds the other seven here.
DEFAULT_BENCHMARKS = ("audio_compression", "branch_taken_dependency", "loop_dependency")


@pytest.mark.parametrize("preset,name", [
    *(("tiny", name) for name in benchmarks.BENCHMARKS),
    *(("default", name) if name in DEFAULT_BENCHMARKS else pytest.param("default", name, marks=pytest.mark.slow)
      for name in benchmarks.BENCHMARKS)])
def test_benchmark_trace_equals_the_model(name, preset):
    config = load_config(preset)
    assert_lockstep(config, [assemble(benchmarks.source(name), config, f"{name}.s")])


def buildable(config):
    """``config`` with copy-back beats no wider than a block, which the copy-back RTL needs."""
    words = min(config.hts.copyback_words_per_cycle, config.memory.block_words)
    return with_values(config, {"hts.copyback_words_per_cycle": words})


# Seeds once found (by probing the model over 6,000 seeds) to reach rare coincidences
# that the first 20 miss: a memory branch decoded in the cycle its block's writer is
# broadcast; the TLB emptied while tasks still read TM, then a new speculative output
# (the TM pointer must not restart under the readers). The systems random_config draws
# have changed since, and the trace does not show these coincidences, so nothing asserts
# that they still reach them: they need probing again. The seeds below assert theirs.
CORNER_SEEDS = (2015, 2582, 671, 3647, 5064, 1759, 2613, 996)


# 30 in the default run (about a minute and a half); `pytest -m slow` adds 180 more.
@pytest.mark.parametrize("seed", [*range(20), *CORNER_SEEDS,
                                  *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(20, 200))])
def test_random_programs_trace_equals_the_model(seed):
    random_lockstep(seed)


def random_lockstep(seed: int, adapt=lambda config, rng: config) -> list[dict]:
    """Seed ``seed``'s random system (``adapt``-ed) and programs in lockstep; the model's events."""
    rng = random.Random(seed)
    config = buildable(adapt(random_config(rng), rng))
    programs = [assemble(text, config, f"p{pid}.s") for pid, text in enumerate(random_programs(rng, config))]
    model = assert_lockstep(config, programs, seed)
    return [event.as_dict() for event in model.trace.events]


# Seeds found by probing the model (from seed 20) where a task is granted the CDB in the
# cycle a squash hits its mask: it completes, it is not aborted.
GRANT_IN_SQUASH_SEEDS = (54, 64)


def completions_under_a_squash(events: list[dict]) -> int:
    """Completions in a cycle whose squash names an ID of the task's mask (as decoded)."""
    squashed_ids, masks, count = {}, {}, 0
    for event in events:
        if event["event"] == "squash":
            squashed_ids.setdefault(event["cycle"], set()).add(event["spec_id"])
    for event in events:
        if event["event"] == "decode":
            masks[event["tag"]] = event["mask"]
        elif event["event"] == "complete":
            count += any(masks[event["tag"]] >> spec_id & 1 for spec_id in squashed_ids.get(event["cycle"], ()))
    return count


@pytest.mark.parametrize("seed", GRANT_IN_SQUASH_SEEDS)
def test_a_task_granted_in_its_squash_cycle_completes(seed):
    assert completions_under_a_squash(random_lockstep(seed))


# A seed found by probing the model (these systems, from seed 20) where a producer with a
# latency of one is retargeted in the cycle of its CDB grant: the retarget applies from
# the start of its cycle, so the completion writes home (docs/microarchitecture.md,
# "Retarget"). It is the first such seed.
RETARGET_AT_COMPLETION_SEEDS = (315,)


@pytest.mark.parametrize("seed", RETARGET_AT_COMPLETION_SEEDS)
def test_a_producer_retargeted_in_its_completion_cycle_writes_home(seed):
    def short_latencies(config, rng):
        return with_values(config, latencies(config, [rng.choice([1, 2, 5]) for _ in config.accelerators]))

    events = random_lockstep(seed, short_latencies)
    completions = {(event["cycle"], event["tag"]) for event in events if event["event"] == "complete"}
    assert any((event["cycle"], event["tag"]) in completions for event in events if event["event"] == "retarget")


# A seed found by probing the model (these systems, from seed 20) where
# a task is decoded reading the TM copy that is retargeted in that very cycle: it must
# read home. The RTL finds it by the TLB slot its reads came through, not by a compare
# of ranges (hdl/primitives.py, ``retargeted_ranges``).
READER_DECODED_AT_RETARGET_SEEDS = (361,)


def readers_decoded_at_their_retarget(events: list[dict]) -> int:
    """Tasks decoded reading exactly the TM copy retargeted in their decode cycle."""
    retargeted = {(event["cycle"], event["tm"], event["home"][1]) for event in events if event["event"] == "retarget"}
    return sum((event["cycle"], *event["reads"]) in retargeted for event in events if event["event"] == "decode")


@pytest.mark.parametrize("seed", READER_DECODED_AT_RETARGET_SEEDS)
def test_a_reader_decoded_as_its_copy_is_retargeted_reads_home(seed):
    assert readers_decoded_at_their_retarget(random_lockstep(seed))


# A reset in the middle of a run, with tasks decoded, queued, dispatched and waiting on
# branch reads, must leave nothing that the next run can see: registers that hold a
# record only while a valid bit says so carry no reset (docs/hardware.md), so this is
# what checks that every such record is really guarded by its valid bit.
@pytest.mark.parametrize("preset,name,reset_after", [
    *(("tiny", "branch_taken_dependency", after) for after in (3, 40, 400)),
    ("default", "audio_compression", 40),
    *(pytest.param("default", "audio_compression", after, marks=pytest.mark.slow) for after in (3, 400))])
def test_a_reset_mid_run_leaves_nothing_behind(preset, name, reset_after):
    config = load_config(preset)
    assert_lockstep(config, [assemble(benchmarks.source(name), config, f"{name}.s")], reset_after=reset_after)


@pytest.mark.parametrize("reset_after", [25, 150])
@pytest.mark.parametrize("seed", [0, 3, 1176, 3647])
def test_a_reset_mid_run_of_random_programs_leaves_nothing_behind(seed, reset_after):
    rng = random.Random(seed)
    config = buildable(random_config(rng))
    programs = [assemble(text, config, f"p{pid}.s") for pid, text in enumerate(random_programs(rng, config))]
    assert_lockstep(config, programs, seed, reset_after=reset_after)


FAULTING = """
mov   ffff 0 r1 0 0 0 0          ; far past the end of memory
mov   0    0 r2 0 0 0 0
vector_add 0 1 3 1 0 0 0 0
vector_add r1 1 r2 1 1 0 1 0     ; indirect: reads block 0xffff
vector_add 0 1 1 1 2 0 0 0
"""


def test_a_committed_task_past_the_end_of_memory_faults_on_the_cpu_port(tiny_config):
    model = assert_lockstep(tiny_config, [assemble(FAULTING, tiny_config, "fault.s")])
    [fault] = model.faults
    assert (fault.pid, fault.pc, fault.cause) == (0, 3, FaultCause.INPUT)
    # The task before it completes; the process then ends, as drained.
    assert [e.fields["pc"] for e in model.trace.of("complete")] == [2]


def test_a_process_leaving_its_window_faults_and_the_other_finishes_as_if_alone():
    config, programs = windows_example()
    model = assert_lockstep(config, programs)         # windows written through the CPU port
    [fault] = model.faults
    assert (fault.pid, fault.pc, fault.cause) == (1, 3, FaultCause.OUTPUT)
    alone = HTSModel(config, programs[:1], initial_memory(config)).run()
    first = config.window(0)
    words = slice(first.base * config.memory.block_words, first.end * config.memory.block_words)
    assert (model.memory.home[words] == alone.memory.home[words]).all()


BRANCH_OUTSIDE = """
        real_fir 110 1 120 1 0 1 0 0
        if    30 r0 skip 1 0 1 8 0        ; memory branch on block 0x30, process 0's
        real_fir 120 1 130 1 1 1 0 0
skip:   real_fir 130 1 140 1 2 1 0 0
"""


def test_a_memory_branch_on_a_block_outside_the_window_faults():
    config, programs = windows_example()
    model = assert_lockstep(config, [programs[0], assemble(BRANCH_OUTSIDE, config, "branch.s")])
    [fault] = model.faults
    assert (fault.pid, fault.pc, fault.cause) == (1, 1, FaultCause.BRANCH)


def _op(op: Opcode, **fields) -> Word:
    return Word(accel_id=RESERVED_ACCEL_ID[op], **fields)


# Words no assembled or checked image holds, but a CPU may write: the RTL faults on them.
LBEG, LEND = (lambda b: _op(Opcode.LBEG, a=1, b=b)), (lambda b: _op(Opcode.LEND, b=b))
ILLEGAL = {
    "unassigned accelerator ID": [Word(accel_id=0xFF)],
    "accelerator ID of no class": [Word(accel_id=0x80, a=1, b=1, c=2, d=1)],
    "another process's pid": [Word(accel_id=0, a=1, b=1, c=2, d=1, pid=1)],
    "register past hts.gprs": [_op(Opcode.ADD, a=1, b=16, c=2)],
    "indirect region from a register past hts.gprs": [Word(accel_id=0, a=20, b=1, c=2, d=1, k=1)],
    "lend with no open loop": [LEND(4)],
    "lend naming another counter": [LBEG(4), LEND(5)],
    "lbeg on a full loop stack": [LBEG(4), LBEG(5), LBEG(6), LBEG(7), LBEG(8)],   # tiny: 4 deep
    "jump before the first instruction": [_op(Opcode.JUMP, c=0x10000 - 8)],
    "branch before the first instruction": [_op(Opcode.IF, b=1, c=0x10000 - 8)],
}


@pytest.mark.parametrize("case", ILLEGAL)
def test_a_word_that_cannot_execute_faults_as_illegal(tiny_config, case):
    task = Word(accel_id=tiny_config.accelerator("vector_add").id, a=0, b=1, c=3, d=1)
    words = [task, *ILLEGAL[case], task]
    program = Program(tuple(word.encode() for word in words), "raw.hex")
    rtl = run_rtl(tiny_config, [program], initial_memory(tiny_config), cycle_limit=400)
    pc = len(words) - 2
    assert rtl.faults and rtl.faults[0][1:] == (0, pc, "ILLEGAL") and len(rtl.faults) == 1
    assert rtl.ended                                   # the first task finished, then the process ended
    assert [e["pc"] for e in rtl.events if e["event"] == "complete"] == [0]


def test_a_process_waits_for_another_processes_speculative_copy_to_go(default_config):
    model = assert_lockstep(*shared_windows(default_config))
    assert model.stalls.get("tlb_conflict", 0) > 0


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_in_windows_trace_equals_the_model(seed):
    """Windows written through the CPU port; wild base registers fault at random."""
    rng = random.Random(seed)
    config = buildable(random_config(rng, processes=2))
    config = dataclasses.replace(config, windows=random_windows(rng, config))
    programs = [assemble(text, config, f"p{pid}.s") for pid, text in enumerate(random_programs(rng, config, wild=0.1))]
    model = assert_lockstep(config, programs, seed)
    outside = outside_windows(config)
    assert (model.memory.home[outside] == initial_memory(config, seed).home[outside]).all()


def test_top_level_elaborates_for_the_large_configuration():
    Fragment.get(HTS(load_config("large")), None)


def test_a_ready_list_holding_every_tag_runs_round_its_ring():
    """Twenty independent tasks of one class on five tags (a ring of six slots): every tag
    waits ready in the class's list, which wraps several times."""
    config = with_values(preset("default"), {"hts.tracker_entries": 5, "hts.tracker_lanes": 5})
    text = "\n".join(f"vector_dot {2 * k:x} 1 {2 * k + 1:x} 1 0 0 0 0" for k in range(20))
    assert_lockstep(config, [assemble(text, config, "one_class.s")])
