"""Co-simulation: the Verilated RTL under cocotb against the cycle model and the sequential executor.

Each configuration is one Verilator build (cached under ``$HTS_COSIM_CACHE``; the first
build of the default configuration takes about a minute and a half on two cores). Every
run in a job shares one simulator process, reset between runs.
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from hts import benchmarks
from hts.assembler import assemble
from hts.config import load_config
from hts.cosim.fuzz import SYSTEMS, fuzz_job
from hts.cosim.run import cosimulate
from hts.cosim.scoreboard import Job, RunSpec, score
from hts.hdl import memory_tracker
from hts.hdl.trace import canonical

BENCHMARK_FOLDER = Path(benchmarks.__file__).parent


def _failures(outcomes):
    return "\n".join(f"{o.name}: {o.difference}\n  reproduce: {o.reproduce}" for o in outcomes if not o.match)


@pytest.mark.parametrize("preset", ["default", "tiny"])
def test_every_benchmark_matches_the_model_cycle_for_cycle(preset):
    config = load_config(preset)
    runs = tuple(RunSpec(name=name, programs=(assemble(benchmarks.source(name), config, f"{name}.s"),), seed=index,
                         reproduce=f"hts cosim benchmarks/{name}.s -c {preset} --seed {index}")
                 for index, name in enumerate(benchmarks.BENCHMARKS))
    outcomes = cosimulate(Job(config, runs))
    assert not _failures(outcomes), _failures(outcomes)
    assert [o.cycles for o in outcomes] == [o.model_cycles for o in outcomes]
    assert all(o.events > 0 for o in outcomes)


# 200 random programs per default run: 150 on a roomy two-process system, 50 on the
# one-entry system. `hts fuzz --seeds N` runs more on request.
@pytest.mark.parametrize("system, count", [("small", 150), ("one", 50)])
def test_random_programs_match_the_model(system, count):
    outcomes = cosimulate(fuzz_job(system, 0, count))
    assert len(outcomes) == count
    assert not _failures(outcomes), _failures(outcomes)


@pytest.mark.slow
@pytest.mark.parametrize("system", SYSTEMS)
def test_soak(system):
    outcomes = cosimulate(fuzz_job(system, 1000, 2000))
    assert not _failures(outcomes), _failures(outcomes)


def _tracker_ignoring_waw():
    """The memory tracker with the write-after-write check left out: a bug to catch."""
    source = memory_tracker.__loader__.get_source(memory_tracker.__name__)
    check = "                                   | overlaps(self.query_writes, entry.writes)))"
    assert check in source
    mutant = source.replace(check, "))")
    namespace = {"__name__": "hts.hdl.memory_tracker_waw_mutant", "__package__": "hts.hdl"}
    exec(compile(mutant, "memory_tracker (WAW mutant)", "exec"), namespace)
    return namespace["MemoryTracker"]


def test_a_tracker_that_ignores_waw_is_caught_by_the_random_programs(monkeypatch):
    monkeypatch.setattr("hts.hdl.hts.MemoryTracker", _tracker_ignoring_waw())
    outcomes = cosimulate(fuzz_job("small", 0, 30), variant="tracker-ignores-waw")
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


def test_cli_cosim_bad_program_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.s"
    bad.write_text("vector_add 0 1 1 1 0 0 0 0\nnot_an_accelerator 0 1 1 1 0 0 0 0\n")
    result = _hts("cosim", str(bad), "-c", "tiny")
    assert result.returncode == 1
    assert f"{bad.name}:2:" in result.stderr


def test_cli_fuzz_reports_the_count():
    result = _hts("fuzz", "--seeds", "3", "--system", "one", "--first", str(random.Random(1).randint(0, 999)))
    assert result.returncode == 0, result.stderr
    assert "3 of 3 random programs match the model" in result.stdout
    assert "[fuzz] 3/3 seeds" in result.stderr
