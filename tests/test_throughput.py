"""The throughput benchmark: its programs, its measure from the trace, and what it reports.

Expected figures are worked out from the timing contract (docs/microarchitecture.md) and
the configuration, never copied from a run.
"""


import pytest

from hts.assembler import assemble
from hts.base.config import load_config, with_values
from hts.base.errors import HTSError
from hts.flows import throughput
from hts.flows.throughput import (
    PROGRAMS, back_end_cycles_per_task, in_flight_limit, measure, program_text, shortest_class, task_times,
)
from hts.models.dispatch import START_DELAY
from hts.models.hts import HTSModel
from hts.models.memory import initial_memory
from hts.models.wakeup import WAKE_DELAY


def _program(kind, config, tasks):
    return assemble(program_text(kind, config, tasks), config, f"{kind}.s")


def _regions(program):
    """(reads, writes) of every instruction as sets of blocks."""
    return [(set(range(word.a, word.a + word.b)), set(range(word.c, word.c + word.d))) for word in program.decoded]


def _measured(kind, config, tasks):
    run = HTSModel(config, [_program(kind, config, tasks)], initial_memory(config)).run()
    return measure([event.as_dict() for event in run.trace.events])


def _roomy(config, tasks):
    """``config`` with a tag for every task: decode never waits for the back end."""
    return with_values(config, {"hts.tracker_entries": tasks})


# ---- the programs ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", PROGRAMS)
def test_a_program_is_n_tasks_of_the_shortest_class(kind, default_config):
    program = _program(kind, default_config, 64)
    shortest = shortest_class(default_config)
    assert shortest.latency == min(acc.latency for acc in default_config.accelerators)
    assert len(program) == 64
    assert {word.accel_id for word in program.decoded} == {shortest.id}


def test_independent_tasks_touch_disjoint_regions(default_config):
    regions = [blocks for pair in _regions(_program("independent", default_config, 64)) for blocks in pair]
    assert all(regions)
    assert sum(map(len, regions)) == len(set().union(*regions))


def test_each_chain_task_reads_what_the_previous_one_wrote_and_nothing_else_meets(default_config):
    regions = _regions(_program("chain", default_config, 64))
    for index, (_, writes) in enumerate(regions):
        meeting = [other for other, (reads, other_writes) in enumerate(regions)
                   if other != index and writes & (reads | other_writes)]
        assert meeting == ([index + 1] if index + 1 < len(regions) else [])
        assert index + 1 == len(regions) or regions[index + 1][0] == writes


def test_a_program_that_does_not_fit_is_an_error(tiny_config):
    with pytest.raises(HTSError, match="program memory"):
        program_text("chain", tiny_config, tiny_config.hts.program_words + 1)
    small = with_values(tiny_config, {"memory.blocks": 100})
    with pytest.raises(HTSError, match="memory blocks"):
        program_text("independent", small, 51)
    assert _program("chain", small, 99)


# ---- matching decode to dispatch ------------------------------------------------------------

def _event(cycle, event, pid=0, pc=0, tag=0):
    return {"cycle": cycle, "event": event, "pid": pid, "pc": pc, "tag": tag}


def test_a_dispatch_is_matched_to_its_own_task_by_pid_pc_and_tag():
    events = [_event(1, "decode", pc=0, tag=0), _event(2, "decode", pid=1, pc=0, tag=1),
              _event(3, "decode", pc=1, tag=2),                         # squashed: never dispatched
              _event(4, "dispatch", pid=1, pc=0, tag=1), _event(5, "issue", pc=0, tag=0),
              _event(6, "dispatch", pc=0, tag=0), _event(7, "complete", pc=0, tag=0),
              _event(8, "decode", pc=0, tag=0), _event(20, "dispatch", pc=0, tag=0)]   # a loop: same key again
    assert [(task.decode, task.dispatch) for task in task_times(events)] == [(1, 6), (2, 4), (3, None), (8, 20)]
    result = measure(events)
    assert result.latencies == [5, 2, 12]
    assert result.first_completion == 7
    assert result.burst == [1, 2, 3] and result.steady == [8]
    assert result.steady_median_interval is None and result.steady_cycles_per_task is None
    assert result.overall_cycles_per_task == (8 - 1) / 3
    # In flight at each decode: decoded before it, less completed before its cycle.
    assert result.in_flight == [0, 1, 2, 2]
    # The last interval had a completion in it (the decode may have waited for room): not deep.
    assert result.intervals_in_flight(1) == [1, 1] and result.intervals_in_flight(2) == [1]
    assert result.deep_median_interval(3) is None


# ---- on the model -------------------------------------------------------------------------

@pytest.mark.parametrize("lanes", [16, 8, 5])
def test_with_nothing_stalling_the_model_decodes_one_task_a_search(default_config, lanes):
    """Timing contract: the next task decodes when the tracker search of the last ends,
    ``tracker_rows`` cycles after it (one with sixteen lanes, two with eight, four with five);
    twelve tasks decode before the first completes."""
    tasks = 12
    config = with_values(_roomy(default_config, tasks), {"hts.tracker_lanes": lanes})
    assert in_flight_limit(config) >= tasks
    result = _measured("independent", config, tasks)
    assert len(result.decodes) == tasks
    assert result.overall_cycles_per_task == config.hts.tracker_rows
    assert result.burst == result.decodes


def test_independent_tasks_decode_a_task_a_search_until_the_back_end_sets_the_rate(default_config):
    result = _measured("independent", default_config, 64)
    assert len(result.decodes) == 64
    assert len(result.burst) >= 2
    assert result.burst_cycles_per_task == default_config.hts.tracker_rows == 2
    # More tasks than fit in flight: after the burst, decode goes at the instances' pace.
    assert 64 > in_flight_limit(default_config)
    assert result.steady_cycles_per_task == pytest.approx(back_end_cycles_per_task("independent", default_config),
                                                          rel=0.05)


def test_a_chain_task_waits_for_the_previous_one_so_its_latency_grows(default_config):
    latency = shortest_class(default_config).latency
    result = _measured("chain", default_config, 64)
    burst = len(result.burst)
    assert burst >= 2
    # Decoded a search apart (two cycles), dispatched a wake-up apart (start, latency,
    # broadcast, the walk, dispatch: latency + 5): each waits latency + 3 cycles longer.
    rows = default_config.hts.tracker_rows
    steps = [b - a for a, b in zip(result.latencies[:burst], result.latencies[1:burst])]
    assert steps == [latency + START_DELAY + 2 + WAKE_DELAY - rows] * (burst - 1)
    assert result.latencies == sorted(result.latencies)
    # Afterwards a window slot frees once per task, when the previous one's wake-up lets the next go.
    assert result.steady_median_interval == latency + START_DELAY + 2 + WAKE_DELAY
    assert result.steady_cycles_per_task == back_end_cycles_per_task("chain", default_config)


def test_inflight128_decodes_a_task_a_search_with_a_hundred_in_flight():
    """Acceptance: at most 6 cycles a task with 100 tasks in flight. The front end's rate is
    one search (four rows) whatever the tracker holds, until it is full."""
    config = load_config("inflight128")
    for kind in PROGRAMS:
        result = _measured(kind, config, 256)
        assert max(result.in_flight) == config.hts.tracker_entries - 1
        deep = result.intervals_in_flight(100)
        assert len(deep) >= 20 and set(deep) == {config.hts.tracker_rows}, kind


# ---- the command ----------------------------------------------------------------------------

def test_the_command_prints_both_programs_the_reference_and_a_plot(tmp_path, capsys):
    plot = tmp_path / "decodes.png"
    assert throughput.main(["--no-rtl", "-n", "16", "--fmax-mhz", "100", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    for kind in PROGRAMS:
        assert f"| {kind}" in out
    assert "| Task Superscalar" in out and "< 6 " in out and "< 60 " in out   # 60 ns at 100 MHz: 6 cycles
    assert "in ns at 100 MHz" in out
    assert "| RTL" not in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert not list(tmp_path.glob(".*"))      # written whole: no temporary left behind


def test_the_command_takes_the_deep_threshold_and_refuses_a_negative_one(capsys):
    assert throughput.main(["--no-rtl", "-n", "16", "--deep", "5"]) == 0
    assert "at least 5 tasks in flight" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        throughput.main(["--no-rtl", "--deep", "-1"])
    assert "--deep" in capsys.readouterr().err


def test_the_command_reports_a_program_that_does_not_fit(capsys):
    assert throughput.main(["--no-rtl", "-n", "5000"]) == 1
    assert "program memory" in capsys.readouterr().err


@pytest.mark.slow
def test_the_rtl_figures_come_from_the_rtl_trace(tiny_config):
    tasks = 6
    programs = {kind: _program(kind, tiny_config, tasks) for kind in PROGRAMS}
    outcomes = throughput.rtl_outcomes(tiny_config, programs, "test")
    for kind, outcome in outcomes.items():
        assert outcome.match, outcome.difference
        assert [event["event"] for event in outcome.trace].count("decode") == tasks
        assert measure(outcome.trace) == _measured(kind, tiny_config, tasks)
