"""Co-simulation: the Verilated RTL under cocotb against the cycle model and the sequential executor.

Each configuration is one Verilator build (cached under ``$HTS_COSIM_CACHE``; the first
build of the default configuration takes about a minute and a half on two cores). Every
run in a job shares one simulator process, reset between runs.
"""

import dataclasses
import functools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from amaranth.lib import data
from isolation import windows_example

from hts import benchmarks
from hts.assembler import assemble
from hts.base.config import load_config
from hts.base.errors import HTSError
from hts.cosim.fuzz import SYSTEMS, fuzz_case, fuzz_job
from hts.cosim.replay import replay
from hts.cosim.run import build, cosimulate
from hts.cosim.scoreboard import Job, RunSpec, expected_registers, score
from hts.cosim.top import CLOCKED, TOPLEVEL, CosimTop, ports
from hts.cosim.views import view_reader
from hts.flows.synth import verilog_text
from hts.hdl.interfaces import task_layout, trace_layout
from hts.hdl.mutation import injected
from hts.hdl.trace import TraceReader, canonical

pytestmark = pytest.mark.cosim

BENCHMARK_FOLDER = Path(benchmarks.__file__).parent


def _failures(outcomes):
    return "\n".join(f"{o.name}: {o.difference}\n  reproduce: {o.reproduce}" for o in outcomes if not o.match)


# On tiny through the AXI4-Lite control registers: cocotbext-axi loads and starts each
# benchmark, the run ends on the interrupt, and the status registers are the model's.
@pytest.mark.parametrize("preset, axi", [("default", False), ("tiny", True)])
def test_every_benchmark_matches_the_model_cycle_for_cycle(preset, axi):
    config = load_config(preset)
    runs = tuple(RunSpec(name=name, programs=(assemble(benchmarks.source(name), config, f"{name}.s"),), seed=index,
                         reproduce=f"hts cosim benchmarks/{name}.s -c {preset} --seed {index}{' --axi' * axi}")
                 for index, name in enumerate(benchmarks.BENCHMARKS))
    outcomes = cosimulate(Job(config, runs, axi=axi))
    assert not _failures(outcomes), _failures(outcomes)
    assert [o.cycles for o in outcomes] == [o.model_cycles for o in outcomes]
    assert all(o.events > 0 for o in outcomes)


# 135 random programs per default run: 110 on a roomy two-process system (50 of them
# through the AXI4-Lite control registers), 25 on the one-entry system (whose programs
# run long since the fuzzer's slow tasks: 88 s for 50). `hts fuzz --seeds N` runs more on request.
@pytest.mark.parametrize("system, first, count, axi", [("small", 0, 60, False), ("small", 100, 50, True),
                                                       ("one", 0, 25, False)])
def test_random_programs_match_the_model(system, first, count, axi):
    outcomes = cosimulate(fuzz_job(system, first, count, axi=axi))
    assert len(outcomes) == count
    assert not _failures(outcomes), _failures(outcomes)
    # Windows and wild base registers: the CPU port's faults were compared, not absent.
    assert sum(bool(o.faults) for o in outcomes) >= count // 10


def _retargets_of_running(events: list[dict], accel: str) -> int:
    """Retargets of a task of class ``accel`` after the cycle of its dispatch, before its end."""
    dispatched, count = {}, 0
    for event in events:
        key = (event["pid"], event.get("tag"))
        if event["event"] == "dispatch" and event["accel"] == accel:
            dispatched[key] = event["cycle"]
        elif event["event"] in ("complete", "abort") and event["accel"] == accel:
            dispatched.pop(key, None)
        elif event["event"] == "retarget" and dispatched.get(key, event["cycle"]) < event["cycle"]:
            count += 1
    return count


# The RTL vector-add core (hts.hdl.hls) in the three vector_add shells of the fuzz system
# made for it: random LEN, SCALE, regions and initial memory, squashes that abort it, and
# two seeds (the first two from 20) that retarget it while it runs, against the
# model timing it exactly (VectorAddCoreLatency) and the sequential executor's memory.
# A build of its own: 2 min 45 s with the runs on two (shared) cores; about 20 s once built.
def test_the_rtl_vector_add_core_stands_in_for_its_class():
    rtl = ("vector_add",)
    job = fuzz_job("vector_add", 0, 20, rtl_classes=rtl)
    retargeting = tuple(fuzz_case(job.config, "vector_add", seed, rtl_classes=rtl) for seed in (50, 58))
    outcomes = cosimulate(dataclasses.replace(job, runs=job.runs + retargeting, keep_trace=True))
    assert not _failures(outcomes), _failures(outcomes)
    verilog = (build(job.config, rtl_classes=rtl) / f"{TOPLEVEL}.v").read_text()
    assert all(f"rtl_dma__{lane}__addr" in verilog for lane in range(3)), "the build has no RTL cores"
    events = [event for outcome in outcomes for event in outcome.trace]
    ran = [event for event in events if event.get("accel") == "vector_add"]
    assert sum(event["event"] == "complete" for event in ran) > 100
    assert any(event["event"] == "abort" for event in ran), "no squash aborted an RTL core"
    assert all(_retargets_of_running(outcome.trace, "vector_add") for outcome in outcomes[-2:])


@pytest.mark.slow
@pytest.mark.parametrize("system", SYSTEMS)
def test_soak(system):
    outcomes = cosimulate(fuzz_job(system, 1000, 2000))
    assert not _failures(outcomes), _failures(outcomes)


# A Verilator build of its own (the mutant's) and 30 seeds: a minute and a half. The
# default run catches every catalogued mutant more cheaply (tests/test_mutation.py).
@pytest.mark.slow
def test_a_tracker_that_ignores_waw_is_caught_by_the_random_programs():
    with injected("tracker_waw_ignored"):
        outcomes = cosimulate(fuzz_job("small", 0, 30))
    failing = [o for o in outcomes if not o.match]
    assert failing, "30 random programs did not notice a tracker that ignores WAW hazards"
    assert failing[0].reproduce.startswith("hts fuzz --system small --first ")
    assert "first difference in cycle" in failing[0].difference or "memory" in failing[0].difference


def test_a_different_trace_is_reported_with_the_cycle_and_both_events():
    """Score one program's model run against another's: the scoreboard must object, and say where."""
    config = load_config("tiny")
    spec = RunSpec(name="one", programs=(assemble(benchmarks.source("no_dependency"), config, "a.s"),))
    other = RunSpec(name="other", programs=(assemble(benchmarks.source("loop_dependency"), config, "b.s"),))
    run = spec.reference(config)
    outcome = score(config, spec, other.reference(config), canonical([e.as_dict() for e in run.trace.events]),
                    run.cycles, run.memory, [], 0, 1.0)
    assert not outcome.match
    assert outcome.difference.startswith("first difference in cycle ")
    assert "model:" in outcome.difference and "rtl:" in outcome.difference


def test_a_write_outside_every_window_is_reported_even_where_model_and_executor_agree(monkeypatch):
    """The scoreboard's last guard: memory outside the windows must be as it started."""
    config, programs = windows_example()
    spec = RunSpec(name="windows", programs=tuple(programs), windows=config.windows)
    run = spec.reference(config)
    stray = config.window(1).end * config.memory.block_words        # the first word past both windows
    run.memory.words[stray] ^= 1
    monkeypatch.setattr("hts.cosim.scoreboard.run_sequential", lambda *_: SimpleNamespace(memory=run.memory))
    faults = [(f.cycle, f.pid, f.pc, f.cause.name) for f in run.faults]
    outcome = score(config, spec, run, canonical([e.as_dict() for e in run.trace.events]), run.cycles,
                    run.memory, faults, 0, 1.0)
    assert outcome.difference == "home memory outside every process's window changed"


def test_status_registers_that_disagree_with_the_model_are_named():
    """Through AXI4-Lite the scoreboard also checks what the status registers read after the end."""
    config, programs = windows_example()
    spec = RunSpec(name="windows", programs=tuple(programs), windows=config.windows)
    run = spec.reference(config)
    events = canonical([e.as_dict() for e in run.trace.events])
    faults = [(f.cycle, f.pid, f.pc, f.cause.name) for f in run.faults]
    right = {**expected_registers(run, config.hts.processes), "irq_raised": 1, "irq_cleared": 1}
    assert right["FAULTED"] and "FAULT_PC" in right       # the example faults: those registers are checked
    verdict = functools.partial(score, config, spec, run, events, run.cycles, run.memory, faults, 0, 1.0)
    assert verdict(control=right).match
    assert verdict(control={**right, "CYCLES": run.cycles - 1}).difference == (
        f"status registers (read, model): CYCLES {run.cycles - 1:#x} vs {run.cycles:#x}")
    assert "did not rise" in verdict(control={**right, "irq_raised": 0}).difference
    assert "did not clear" in verdict(control={**right, "irq_cleared": 0}).difference
    assert "never ended" in verdict(control={}).difference


def _hts(*args):
    return subprocess.run([sys.executable, "-m", "hts", *args], capture_output=True, text=True, timeout=600)


def test_cli_cosim_json():
    result = _hts("cosim", str(BENCHMARK_FOLDER / "audio_compression.s"), "-c", "tiny", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["match"] is True
    assert summary["cycles"] == summary["model_cycles"] > 0
    assert summary["sim_cycles_per_s"] > 0
    assert len(summary["memory_digest"]) == 16


def test_cli_cosim_trace_writes_the_rtl_events_as_hts_run_writes_the_model_s(tmp_path):
    program = str(BENCHMARK_FOLDER / "loop_dependency.s")
    rtl, model = tmp_path / "rtl.jsonl", tmp_path / "model.jsonl"
    result = _hts("cosim", program, "-c", "tiny", "--trace", str(rtl))
    assert result.returncode == 0, result.stderr
    assert _hts("run", program, "-c", "tiny", "--trace", str(model)).returncode == 0
    events = [json.loads(line) for line in rtl.read_text().splitlines()]
    assert events and events == canonical([json.loads(line) for line in model.read_text().splitlines()])


def test_cli_cosim_bad_program_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.s"
    bad.write_text("vector_add 0 1 1 1 0 0 0 0\nnot_an_accelerator 0 1 1 1 0 0 0 0\n")
    result = _hts("cosim", str(bad), "-c", "tiny")
    assert result.returncode == 1
    assert f"{bad.name}:2:" in result.stderr


def test_cli_cosim_reports_a_fault_the_cpu_port_and_the_model_agree_on(tmp_path):
    program = tmp_path / "fault.s"
    program.write_text("mov ffff 0 r1 0 0 0 0\nvector_add 0 1 3 1 0 0 0 0\n"
                       "vector_add r1 1 r1 1 1 0 1 0   ; reads block 0xffff: past the end of memory\n")
    result = _hts("cosim", str(program), "-c", "tiny", "--json")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    assert summary["match"] and [(f["pid"], f["pc"], f["cause"]) for f in summary["faults"]] == [(0, 2, "INPUT")]
    assert "fault.s:3: process 0 faulted at pc 2" in result.stderr


def test_cli_fuzz_reports_the_count():
    result = _hts("fuzz", "--seeds", "3", "--system", "one", "--first", str(random.Random(1).randint(0, 999)))
    assert result.returncode == 0, result.stderr
    assert "3 of 3 random programs match the model" in result.stdout
    assert "[fuzz] 3/3 seeds" in result.stderr


def _events_or_error(config, value):
    try:
        return TraceReader(config).events(7, value)
    except (ValueError, IndexError) as error:     # an invalid enum value or accelerator class
        return repr(error)


def test_the_fast_layout_views_read_ports_as_amaranth_does():
    """The testbench decodes the trace and task ports with ``view_reader``: it must agree with ``data.Const``."""
    config, rng = load_config("default"), random.Random(5)
    trace, task = trace_layout(config), task_layout(config)
    read_trace, read_task = view_reader(trace), view_reader(data.ArrayLayout(task, 3))
    decoded = 0
    for _ in range(300):
        # Sparse bits, as in a real cycle: most events decode, some enum fields are invalid.
        value = rng.getrandbits(trace.size) & rng.getrandbits(trace.size) & rng.getrandbits(trace.size)
        expected = _events_or_error(config, data.Const(trace, value))
        assert _events_or_error(config, read_trace(value)) == expected
        decoded += isinstance(expected, list) and len(expected) > 0
        tasks = rng.getrandbits(3 * task.size)
        assert [(t.pid, t.pc, t.reads.base, t.writes.blocks, t.metadata) for t in read_task(tasks)] == \
            [(t.pid, t.pc, t.reads.base, t.writes.blocks, t.metadata) for t in data.Const(data.ArrayLayout(task, 3), tasks)]
    assert decoded > 100


def test_the_cpp_replay_reproduces_the_cocotb_run_and_refuses_a_different_one():
    """``python -m hts.cosim.speed``'s reference: the recorded inputs replayed from C++ on the same build."""
    config = load_config("tiny")
    program = assemble(benchmarks.source("audio_compression"), config, "audio_compression.s")
    [outcome] = cosimulate(Job(config, (RunSpec(name="audio", programs=(program,)),), record=True))
    stimulus = outcome.stimulus
    assert outcome.match and stimulus.observed[-1][0] == outcome.cycles - 1    # the end event's cycle
    assert len(stimulus.observed) > 10
    assert replay(build(config), stimulus) > 0
    # Accelerators that never finish: the replay must see other wake cycles, and say so.
    stalled = dataclasses.replace(stimulus, writes=[write for write in stimulus.writes if write[1] != "core_done"])
    with pytest.raises(HTSError, match="diverged"):
        replay(build(config), stalled)


def test_the_wrapper_refuses_a_port_it_cannot_parse():
    """An input the port pattern missed would be left unconnected in the clocked wrapper."""
    verilog = verilog_text(CosimTop(load_config("tiny")), TOPLEVEL)
    assert {name for _, _, name in ports(verilog)} >= {"cpu__load", "core_done", "events", "wake"}
    with pytest.raises(RuntimeError, match="not understood"):
        ports(verilog.replace("input [", "input signed [", 1))



@pytest.mark.slow
def test_two_cosims_started_together_on_an_empty_cache_both_succeed(tmp_path):
    """Issue 15, defect 6: both failed (one make in one folder, no lock; g++ crashed, and one
    cc1plus grew to 24 GB). Now one builds while the other waits for it. Slow: a build."""
    env = {**os.environ, "HTS_COSIM_CACHE": str(tmp_path / "cache")}
    program = str(BENCHMARK_FOLDER / "no_dependency.s")
    runs = [subprocess.Popen([sys.executable, "-m", "hts", "cosim", program, "-c", "tiny", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [run.communicate(timeout=1800) for run in runs]
    for run, (out, err) in zip(runs, results):
        assert run.returncode == 0, err
        assert json.loads(out)["match"] is True
    builds = [err.count("[cosim] building the Verilator model") for _, err in results]
    assert sorted(builds) == [0, 1]                 # built once, by one of them
    assert len([path for path in (tmp_path / "cache").iterdir() if path.is_dir()]) == 1


def test_the_build_key_names_the_sources_as_imported(monkeypatch):
    """Sources edited after this process imported the RTL do not move its key: a long-lived
    worker would otherwise file a build of the code it holds under the edited code's key."""
    from hts.cosim import run as cosim_run
    config = load_config("tiny")
    before = cosim_run.build_key(config, False)
    monkeypatch.setattr(cosim_run, "_python_sources", lambda package: [])     # what the disk holds now
    assert cosim_run.build_key(config, False) == before


def test_a_build_cut_off_is_never_taken_for_finished(tmp_path, monkeypatch):
    """A folder left without its stamp (an interrupted build) is built again from an empty folder."""
    from hts.cosim import run as cosim_run
    monkeypatch.setenv("HTS_COSIM_CACHE", str(tmp_path))
    config = load_config("tiny")
    folder = tmp_path / cosim_run.build_key(config, False)
    folder.mkdir()
    (folder / "leftover.o").write_text("half a build")
    found = []

    class Verilator:                  # records what the build folder holds when the compile starts
        def build(self, build_dir, **_):
            found.append(sorted(path.name for path in Path(build_dir).iterdir()))
            (Path(build_dir) / CLOCKED).write_bytes(b"the simulator")

    monkeypatch.setattr("cocotb_tools.runner.get_runner", lambda name: Verilator())
    assert build(config, progress=lambda message: None) == folder
    assert found == [sorted([f"{CLOCKED}.sv", f"{TOPLEVEL}.v"])]
    assert (folder / "built").read_text().startswith("ok\nsha256 ")
    assert not (folder / "leftover.o").exists()


def test_a_verilator_build_says_that_it_still_runs(tmp_path, monkeypatch):
    """The first build of a configuration takes minutes after its one line; lines follow it
    until the build ends, and none after (here every 50 ms, Verilator a sleep)."""
    from hts.base import progress
    monkeypatch.setenv("HTS_COSIM_CACHE", str(tmp_path))
    monkeypatch.setattr(progress, "INTERVAL_S", 0.05)

    class SlowVerilator:
        def build(self, build_dir, **_):
            time.sleep(0.6)
            (Path(build_dir) / CLOCKED).write_bytes(b"the simulator")

    monkeypatch.setattr("cocotb_tools.runner.get_runner", lambda name: SlowVerilator())
    lines = []
    build(load_config("tiny"), progress=lines.append)
    built = len(lines)
    time.sleep(0.2)
    assert lines[0].startswith("[cosim] building the Verilator model in ")
    assert len(lines) == built and len(lines[1:]) >= 3
    assert all(line.startswith("[cosim] Verilator model build: still running, ") for line in lines[1:])
