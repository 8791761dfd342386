"""Functional coverage (hts.models.coverage): every bin is hit by a directed program, and
missed by one that must not hit it, so a broken detection fails here.

The programs run on a small two-class system: ``slow`` (vector_max, 40 cycles, one
instance; its output, a maximum of 16-bit samples, keeps branch operands in range) and
``fast`` (vector_add, one cycle, two instances). Memory branches compare the first word of
a block, a 16-bit sample or a maximum of them, with r5 = 0xffff * 0xffff, which is
-131071 as a signed 32-bit number: GE is always taken, LE never.
"""

import dataclasses
import functools
import json
import subprocess
import sys
from types import MappingProxyType

import pytest

from hts.assembler import assemble
from hts.base.config import (AcceleratorClass, MemoryConfig, SchedulerConfig, SystemConfig, TimingConfig, Window,
                             with_values)
from hts.cli import main
from hts.isa import Opcode
from hts.models.coverage import BIN_NAMES, BINS, Coverage, StateCoverage, coverage_table, model_coverage, \
    trace_coverage
from hts.models.hts import HTSModel
from hts.models.memory import initial_memory
from hts.models.observation import CycleView, DecodedInstruction, Occupancy

SYSTEM = SystemConfig(
    memory=MemoryConfig(block_words=8, blocks=64),
    accelerators=(AcceleratorClass(name="vector_max", latency=40, count=1, id=0, function=None),
                  AcceleratorClass(name="vector_add", latency=1, count=2, id=1, function=None)),
    hts=SchedulerConfig(queue_depth=2, tracker_entries=8, tlb_entries=2, tm_blocks=4,
                        gprs=8, loop_depth=2, dispatch_width=2, cdb_width=1, processes=2, speculation=True,
                        spec_ids=2, copyback_words_per_cycle=4),
    # A memory branch resolves 20 cycles after its read starts (19, then the registered
    # compare): the squash scenarios are timed so that tasks stand in every stage then.
    timing=TimingConfig(interrupt_latency=0, l2_latency=0, memory_latency=19), source="<coverage test>")
# One entry in every structure.
TINY = with_values(SYSTEM, {"hts.tracker_entries": 1, "hts.tlb_entries": 1, "hts.spec_ids": 1})
# One comparator lane: a tracker search takes eight cycles, one tag a cycle.
ROWS = with_values(SYSTEM, {"hts.tracker_lanes": 1})
# Successor lists of two slots: one waiter fills a list as far as decode allows.
FANOUT = with_values(SYSTEM, {"hts.successor_slots": 2})
# Process 0 may touch blocks 0..31 only.
WINDOWED = dataclasses.replace(SYSTEM, windows=(Window(0, 32), Window(32, 32)))

# r5 below every operand a memory branch reads here (see the module).
NEGATIVE = "mov ffff 0 r4 0 0 0 0\nmul r4 r4 r5 0 0 0 0\n"

# name -> (system, one source per process)
SCENARIOS = {
    # The consumer's search finds its producer (tag 0) in its first row; the producer is
    # broadcast before the search's eighth row.
    "rows_dependent": (ROWS, ["vector_add 0 1 10 1 0 0 0 0\nvector_add 10 1 11 1 1 0 0 0\n"]),
    "independent": (SYSTEM, ["vector_add 0 1 10 1 0 0 0 0\nvector_add 2 1 11 1 1 0 0 0\n"]),
    # Twelve ready tasks of the one-instance class: its ready list runs past its ring's end.
    "one_class_stream": (SYSTEM, ["".join(f"vector_max 0 1 {0x10 + n:x} 1 {n:x} 0 0 0\n" for n in range(12))]),
    # The second reader of block 10 waits for a list slot until the slow producer is walked.
    "fan_out": (FANOUT, ["vector_max 0 1 10 1 0 0 0 0\nvector_add 10 1 11 1 1 0 0 0\n"
                         "vector_add 10 1 12 1 2 0 0 0\n"]),
    # Two speculated slow producers, each with a reader (writing nothing, so with no TLB
    # entry of its own), squashed together while the first runs: both lists wait for the walker, which takes the squashed readers' counts to zero.
    # The task after the branch keeps the run going past the walks.
    "squashed_producers": (SYSTEM, [NEGATIVE + """
        if 20 r5 past 0 0 0 e
        vector_max 0 1 10 1 0 0 0 0
        vector_max 1 1 11 1 1 0 0 0
        vector_add 10 1 0 0 2 0 0 0
        vector_add 11 1 0 0 3 0 0 0
        past:
        vector_max 2 1 20 1 4 0 0 0
        """]),
    "registers_only": (SYSTEM, ["mov 1 0 r4 0 0 0 0\nadd r4 r4 r5 0 0 0 0\n"]),
    # A task whose output base is the register the instruction before it writes, queued
    # behind it (a queue deep enough for fetch to run ahead of decode).
    "base_just_written": (with_values(SYSTEM, {"hts.queue_depth": 4}),
                          ["mov 4 0 r4 0 0 0 0\nmov 10 0 r5 0 0 0 0\nvector_add r4 1 r5 1 0 0 1 0\n"]),
    "two_processes": (SYSTEM, ["vector_add 0 1 10 1 0 0 0 0\nvector_add 2 1 11 1 1 0 0 0\n",
                               "vector_add 20 1 30 1 0 1 0 0\nvector_add 22 1 31 1 1 1 0 0\n"]),
    # Every branch kind, both ways, speculated (K[2]) or not; BR: a writer of the block in flight.
    "branches": (SYSTEM, [NEGATIVE + """
        if r4 r4 rr_taken 0 0 0 0          ; RR EQ, taken
        rr_taken:
        if r4 r5 rr_not 0 0 0 0            ; RR EQ, not taken
        rr_not:
        if 20 r5 mr_taken 0 0 0 a          ; MR GE, taken
        mr_taken:
        if 20 r5 mr_not 0 0 0 b            ; MR LE, not taken
        mr_not:
        vector_max 0 1 21 1 0 0 0 0
        if 21 r5 br_taken 0 0 0 a          ; BR GE, taken
        br_taken:
        vector_max 0 1 22 1 0 0 0 0
        if 22 r5 br_not 0 0 0 b            ; BR LE, not taken
        br_not:
        if 23 r5 smr_taken 0 0 0 e         ; speculated MR, taken: mispredicted
        smr_taken:
        if 23 r5 smr_not 0 0 0 f           ; speculated MR, not taken: predicted right
        smr_not:
        vector_max 0 1 24 1 0 0 0 0
        if 24 r5 sbr_taken 0 0 0 e         ; speculated BR, mispredicted
        sbr_taken:
        vector_max 0 1 25 1 0 0 0 0
        if 25 r5 sbr_not 0 0 0 f           ; speculated BR, predicted right
        sbr_not:
        """]),
    # A mispredicted branch over long-running tasks and a stream of fast ones: at the
    # squash, tasks stand in the enqueue stage, queued (ready or not) and on an instance.
    "squash_everywhere": (SYSTEM, [NEGATIVE + """
        if 20 r5 past 0 0 0 e
        vector_max 1 1 31 0 0 0 0 0
        lbeg 14 r6 0 0 0 0 0
        vector_add 2 1 0 0 0 0 0 0
        vector_add 3 1 0 0 1 0 0 0
        vector_add 4 1 0 0 2 0 0 0
        vector_add 5 1 0 0 3 0 0 0
        vector_max 6 1 0 0 4 0 0 0
        lend 0 r6 0 0 0 0 0
        past:
        """]),
    # Six ready tasks (writing nothing: no TLB entry) squashed behind a running one of their
    # one-instance class: the list drops their dead entries one a cycle.
    "dead_heads_alone": (SYSTEM, [NEGATIVE + """
        vector_max 0 1 30 1 0 0 0 0
        if 20 r5 past 0 0 0 e
        """ + "".join(f"vector_max {n:x} 1 0 0 {n:x} 0 0 0\n" for n in range(1, 7)) + """
        past:
        vector_max 7 1 37 1 7 0 0 0
        """]),
    # A mispredicted branch with nothing behind it: a squash that removes no task.
    "empty_squash": (SYSTEM, [NEGATIVE + "if 20 r5 past 0 0 0 e\npast:\n"]),
    # A speculated branch predicted right, over a loop that runs.
    "speculated_loop": (SYSTEM, [NEGATIVE + """
        if 20 r5 past 0 0 0 f
        lbeg 2 r6 0 0 0 0 0
        vector_add 2 1 0 0 0 0 0 0
        lend 0 r6 0 0 0 0 0
        past:
        """]),
    # The same with a loop of no iterations: its body is discarded, not run.
    "speculated_empty_loop": (SYSTEM, [NEGATIVE + """
        if 20 r5 past 0 0 0 f
        lbeg 0 r6 0 0 0 0 0
        vector_add 2 1 0 0 0 0 0 0
        lend 0 r6 0 0 0 0 0
        past:
        """]),
    "loop": (SYSTEM, ["lbeg 2 r6 0 0 0 0 0\nvector_add 2 1 0 0 0 0 0 0\nlend 0 r6 0 0 0 0 0\n"]),
    # One entry everywhere: a dependent pair fills the tracker; two
    # speculative outputs want more than the one TLB entry.
    "tiny": (TINY, [NEGATIVE + """
        vector_max 0 1 10 1 0 0 0 0
        vector_add 10 1 11 1 1 0 0 0
        if 20 r5 past 0 0 0 f
        vector_add 0 1 12 1 2 0 0 0
        vector_add 0 1 13 1 3 0 0 0
        past:
        """]),
    # A speculative copy of block 12, then a task reading blocks 12-13: it conflicts and
    # waits for the copy to go home. A slow speculative producer, still running when its
    # branch is confirmed, is retargeted instead.
    "tlb": (SYSTEM, [NEGATIVE + """
        if 20 r5 past 0 0 0 f
        vector_add 0 1 12 1 0 0 0 0
        vector_max 0 1 16 1 1 0 0 0
        vector_add 12 2 14 1 2 0 0 0
        past:
        """]),
    # Block 0x28 is outside process 0's window: a stall while the branch is pending, then
    # a fault once it is confirmed. (Numbers in programs are hexadecimal.)
    "faults": (WINDOWED, [NEGATIVE + """
        if 10 r5 past 0 0 0 f
        vector_add 0 1 28 1 0 0 0 0
        past:
        """]),
}


# The same programs with searches of eight rows.
SCENARIOS.update({f"rows_{name}": (ROWS, SCENARIOS[name][1]) for name in ("branches", "squash_everywhere")})


@functools.cache
def coverage_of(scenario: str) -> Coverage:
    config, sources = SCENARIOS[scenario]
    programs = [assemble(source, config, f"{scenario}_p{pid}.s") for pid, source in enumerate(sources)]
    state = StateCoverage()
    result = HTSModel(config, programs, initial_memory(config), observer=state.observe).run()
    return model_coverage(result.trace, state)


_BRANCHES = {name: ("branches", "independent") for name in BIN_NAMES if name.startswith("branch.")}
_SQUASHES = {f"squash.{stage}": ("squash_everywhere", "empty_squash")
             for stage in ("enqueue", "queued", "running", "all_stages")}

# bin -> (scenario that hits it, scenario that must not)
DIRECTED = {
    "event.decode": ("independent", "registers_only"),
    "event.enqueue": ("independent", "registers_only"),
    "event.dispatch": ("independent", "registers_only"),
    "event.complete": ("independent", "registers_only"),
    "event.branch": ("branches", "independent"),
    "event.squash": ("empty_squash", "speculated_loop"),
    "event.abort": ("squash_everywhere", "empty_squash"),
    "event.copyback": ("tlb", "independent"),
    "event.retarget": ("tlb", "independent"),
    "event.fault": ("faults", "independent"),
    "event.end": ("independent", None),                # every run ends
    **_BRANCHES,
    **_SQUASHES,
    "run.processes_interleave": ("two_processes", "independent"),
    "full.tracker": ("tiny", "independent"),
    "full.tlb": ("tiny", "independent"),
    "stall.fetch": ("independent", None),              # every run starts with empty queues
    "stall.scan": ("rows_dependent", "independent"),
    "search.squashed": ("rows_squash_everywhere", "squash_everywhere"),
    "search.released": ("rows_dependent", "independent"),
    "search.branch": ("rows_branches", "branches"),
    "stall.operands": ("base_just_written", "independent"),
    "stall.branch": ("branches", "independent"),
    "stall.tracker_full": ("tiny", "independent"),
    "stall.successors_full": ("fan_out", "independent"),
    "wakeup.queued": ("squashed_producers", "independent"),
    "lists.dead_head": ("dead_heads_alone", "empty_squash"),
    "lists.wrap": ("one_class_stream", "independent"),
    "lists.two_joins": ("fan_out", "independent"),
    "wakeup.squashed_waiter": ("squashed_producers", "independent"),
    "stall.tlb_full": ("tiny", "independent"),
    "stall.tlb_conflict": ("tlb", "independent"),
    "stall.speculative_fault": ("faults", "independent"),
    "stall.fault": ("faults", "independent"),
    "stall.decoder_busy": ("two_processes", "independent"),
    "stall.drain": ("independent", "registers_only"),
    "copyback.stalls_decode": ("tlb", "independent"),
    "speculation.loop": ("speculated_loop", "speculated_empty_loop"),
}


def test_every_bin_has_a_directed_program():
    assert sorted(DIRECTED) == sorted(BIN_NAMES)


@pytest.mark.parametrize("name", BIN_NAMES)
def test_the_directed_program_hits_the_bin_and_the_other_does_not(name):
    hits, misses = DIRECTED[name]
    assert coverage_of(hits).hits[name] > 0, f"{hits} should hit {name}"
    if misses is not None:
        assert coverage_of(misses).hits[name] == 0, f"{misses} should not hit {name}"


def test_a_loop_outside_speculation_is_not_a_speculated_loop():
    assert coverage_of("loop").hits["speculation.loop"] == 0


# ---- the collectors on hand-made input --------------------------------------------------

def _view(cycle, stalls=MappingProxyType({}), tracker=0, copying=False, decoded=None):
    start = Occupancy(tracker=tracker, tracker_capacity=8, tlb=0, tlb_capacity=2, tm_used=0, tm_capacity=4)
    return CycleView(cycle, start, copying, stalls, decoded)


def test_a_condition_counts_once_per_episode_whatever_the_cycles_observed():
    state = StateCoverage()
    for cycle, tracker in enumerate([8, 8, 8, 1, 8]):
        state.observe(_view(cycle, tracker=tracker))
    assert state.coverage.hits["full.tracker"] == 2


def test_stalls_count_per_process_and_copy_back_only_behind_a_tlb_stall():
    state = StateCoverage()
    state.observe(_view(0, {0: "fetch", 1: "fetch"}, copying=True))
    state.observe(_view(1, {0: "tlb_conflict", 1: "fetch"}, copying=False))
    assert state.coverage.hits["stall.fetch"] == 2
    assert state.coverage.hits["copyback.stalls_decode"] == 0
    state.observe(_view(2, {0: "tlb_conflict"}, copying=True))
    assert state.coverage.hits["copyback.stalls_decode"] == 1


def test_a_speculated_loop_needs_its_body_to_run():
    state = StateCoverage()
    state.observe(_view(0, decoded=DecodedInstruction(0, 3, Opcode.LBEG, speculative=True, discarding=True)))
    state.observe(_view(1, decoded=DecodedInstruction(0, 3, Opcode.LBEG, speculative=False, discarding=False)))
    assert state.coverage.hits["speculation.loop"] == 0
    state.observe(_view(2, decoded=DecodedInstruction(0, 3, Opcode.LBEG, speculative=True, discarding=False)))
    assert state.coverage.hits["speculation.loop"] == 1


def test_a_squash_finds_each_task_where_the_earlier_cycles_left_it():
    """Tag 1 in the enqueue stage, 2 and 3 queued, 4 running: all three."""
    events = [{"cycle": 1, "event": "decode", "pid": 0, "tag": 4}, {"cycle": 2, "event": "enqueue", "pid": 0, "tag": 4},
              {"cycle": 3, "event": "decode", "pid": 0, "tag": 3},
              {"cycle": 4, "event": "dispatch", "pid": 0, "tag": 4}, {"cycle": 4, "event": "enqueue", "pid": 0, "tag": 3},
              {"cycle": 4, "event": "decode", "pid": 0, "tag": 2},
              {"cycle": 5, "event": "enqueue", "pid": 0, "tag": 2}, {"cycle": 5, "event": "decode", "pid": 0, "tag": 1},
              # the squash is listed after this cycle's dispatch: the order inside a cycle does not matter
              {"cycle": 6, "event": "dispatch", "pid": 0, "tag": 9},
              {"cycle": 6, "event": "squash", "pid": 0, "pc": 0, "spec_id": 0, "tags": [1, 2, 3]},
              {"cycle": 6, "event": "abort", "pid": 0, "tag": 4}]
    coverage = trace_coverage(events)
    assert all(coverage.hits[f"squash.{stage}"] == 1 for stage in ("enqueue", "queued", "running"))
    assert coverage.hits["squash.all_stages"] == 1
    assert coverage.hits["run.processes_interleave"] == 0


def test_coverage_merges_and_rejects_unknown_bins():
    one, other = Coverage(), Coverage()
    one.hit("event.end")
    other.hit("event.end", 2)
    assert one.merge(other).hits["event.end"] == 3
    assert [b.name for b in one.missed()] == [b.name for b in BINS if b.name != "event.end"]
    with pytest.raises(KeyError):
        one.hit("event.nothing")


def test_the_table_lists_every_bin():
    table = coverage_table(coverage_of("branches"))
    assert all(name in table for name in BIN_NAMES)
    assert table.splitlines()[-1].endswith(f"of {len(BINS)} bins hit")


# ---- command line -----------------------------------------------------------------------

def _hts(*args):
    return subprocess.run([sys.executable, "-m", "hts", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_hts_run_prints_the_coverage_table_and_puts_it_in_json(tmp_path, capsys):
    program = tmp_path / "p.s"
    program.write_text(SCENARIOS["independent"][1][0])
    assert main(["run", str(program), "-c", "tiny", "--coverage"]) == 0
    text = capsys.readouterr().out
    assert "event.decode" in text and "bins hit" in text
    assert main(["run", str(program), "-c", "tiny", "--coverage", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["coverage"]["event.decode"] == 2 and set(summary["coverage"]) == set(BIN_NAMES)
    assert main(["run", str(program), "-c", "tiny", "--coverage", "--scheduler", "naive"]) == 1
    assert "--coverage needs a cycle model" in capsys.readouterr().err


def test_hts_fuzz_merges_the_seeds_coverage_and_prints_the_table(monkeypatch, capsys):
    """The command's side, with the co-simulation replaced by the model's coverage of each seed."""
    import hts.cosim.run
    from hts.cosim.scoreboard import RunOutcome

    def cosimulate(job, progress=print):
        assert job.coverage
        return [RunOutcome(spec.name, True, None, 10, 10, "", spec.reproduce, coverage=coverage_of("branches"))
                for spec in job.runs]

    monkeypatch.setattr(hts.cosim.run, "cosimulate", cosimulate)
    assert main(["fuzz", "--seeds", "3", "--system", "one", "--coverage", "--workers", "0"]) == 0
    text = capsys.readouterr().out
    merged = coverage_of("branches").hits["branch.RR.taken"] * 3
    assert any(line.split()[:2] == ["branch.RR.taken", str(merged)] for line in text.splitlines())
    assert "3 of 3 random programs match the model" in text


@pytest.mark.slow
def test_the_rtl_trace_counts_the_trace_bins_as_the_model_does():
    """Co-simulation (a Verilator build of system one): trace bins come from the RTL's
    events, state bins from the lockstep model; both equal the model run's own count."""
    from hts.cosim.fuzz import fuzz_case, fuzz_job, fuzz_system
    from hts.cosim.run import cosimulate
    outcomes = cosimulate(fuzz_job("one", 0, 3, coverage=True))
    config = fuzz_system("one")
    for seed, outcome in enumerate(outcomes):
        state = StateCoverage()
        result = fuzz_case(config, "one", seed).reference(config, observer=state.observe)
        assert outcome.match and outcome.coverage.hits == model_coverage(result.trace, state).hits


@pytest.mark.slow
def test_the_fuzz_programs_hit_every_bin_on_the_model():
    """The seeds of `hts fuzz --seeds 1000 --coverage`, on the model alone (about a minute)."""
    from hts.cosim.fuzz import fuzz_case, fuzz_system
    config, total = fuzz_system("small"), Coverage()
    for seed in range(1000):
        state = StateCoverage()
        result = fuzz_case(config, "small", seed).reference(config, observer=state.observe)
        total.merge(model_coverage(result.trace, state))
    assert not total.missed(), [b.name for b in total.missed()]
