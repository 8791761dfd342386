"""Running programs for the CLI: one scheduler (``hts run``), all of them (``hts compare``),
and the audio compression over bands and instances (``hts scaling``, the paper's Figure 10).

``hts compare`` also schedules the program's task graph offline, with HEFT, REFT and
CP-SAT, beside a lower bound (:func:`reference_schedules`): how far the schedulers the
toolkit models are from the best schedule of the same tasks on the same accelerators.
"""

import dataclasses
import sys

from hts.assembler import Program
from hts.base.config import SystemConfig

from .graphs import TaskGraph
from .memory import initial_memory
from .schedulers.bounds import lower_bound
from .schedulers.heft import heft
from .schedulers.machine import Machine
from .schedulers.optimal import optimal
from .schedulers.reft import reft
from .schedulers.schedule import Schedule
from .simulate import SCHEDULERS, simulate
from .hts import RunResult
from .timing import DeviceTiming

__all__ = ["run_summary", "compare", "compare_runs", "compare_rows", "scaling", "with_instances", "COMPARE_ORDER",
           "REFERENCE_SCHEDULERS",
           "reference_schedules", "reference_rows", "LOWER_BOUND"]

# Slowest first, as the paper's figures order them.
COMPARE_ORDER = ("naive", "runtime", "hts-nospec", "hts", "sequential")
assert set(COMPARE_ORDER) == set(SCHEDULERS)


def run_summary(result: RunResult) -> dict:
    return {
        "scheduler": result.scheduler,
        "cycles": result.cycles,
        "tasks": result.tasks,
        "memory_digest": result.memory.digest(),
        "utilization": {name: round(value, 4) for name, value in result.utilization.items()},
        "stalls": dict(sorted(result.stalls.items())),
        "simulated_cycles": result.simulated_cycles,
        "faults": [{"pid": f.pid, "pc": f.pc, "cause": f.cause.name, "cycle": f.cycle, "error": str(f.error())}
                   for f in result.faults],
    }


def compare_runs(config: SystemConfig, programs: list[Program], seed: int = 0,
                 timing: DeviceTiming | None = None) -> dict[str, RunResult]:
    """Every scheduler on the same programs and initial memory."""
    return {name: simulate(config, programs, initial_memory(config, seed), name, timing=timing)
            for name in COMPARE_ORDER}


def compare(config: SystemConfig, programs: list[Program], seed: int = 0) -> list[dict]:
    """Every scheduler on the same programs and initial memory; checked against sequential."""
    return compare_rows(compare_runs(config, programs, seed))


def compare_rows(results: dict[str, RunResult]) -> list[dict]:
    """Summaries of :func:`compare_runs`, with speed-up over naive and the memory check."""
    reference = results["sequential"].memory.digest()
    naive = results["naive"].cycles
    rows = []
    for name, result in results.items():
        row = run_summary(result)
        row["speedup_vs_naive"] = round(naive / result.cycles, 3)
        row["memory_matches_sequential"] = result.memory.digest() == reference
        rows.append(row)
    return rows


def with_instances(config: SystemConfig, count: int) -> SystemConfig:
    accelerators = tuple(dataclasses.replace(acc, count=count) for acc in config.accelerators)
    return dataclasses.replace(config, accelerators=accelerators)


def scaling(config: SystemConfig, program_for_bands, bands: list[int], instances: list[int],
            scheduler: str = "hts", progress=sys.stderr) -> list[dict]:
    """Cycles of the audio compression for each band count and instances per function."""
    rows, total, done = [], len(bands) * len(instances), 0
    for band_count in bands:
        for count in instances:
            system = with_instances(config, count)
            result = simulate(system, [program_for_bands(band_count, system)], initial_memory(system), scheduler)
            rows.append({"bands": band_count, "instances": count, "cycles": result.cycles, "tasks": result.tasks})
            done += 1
            if progress is not None:
                print(f"  [{done}/{total}] bands={band_count} instances={count}: {result.cycles} cycles",
                      file=progress, flush=True)
    return rows


LOWER_BOUND = "lower-bound"
# The offline schedules :func:`reference_schedules` may return.
REFERENCE_SCHEDULERS = ("heft", "reft", "cp-sat")


def reference_schedules(graph: TaskGraph, machine: Machine, time_limit: float,
                        optimal_max_tasks: int) -> dict[str, Schedule]:
    """HEFT (when the machine never reconfigures), REFT and, for graphs of at most
    ``optimal_max_tasks`` tasks, CP-SAT within ``time_limit`` seconds."""
    schedules = {} if machine.reconfigurable else {"heft": heft(graph, machine)}
    schedules["reft"] = reft(graph, machine)
    if len(graph) <= optimal_max_tasks:
        schedules["cp-sat"] = optimal(graph, machine, time_limit)
    return schedules


def reference_rows(graph: TaskGraph, machine: Machine, schedules: dict[str, Schedule], naive_cycles: int) -> list[dict]:
    """Table rows of the offline schedules and the lower bound, comparable with :func:`compare`'s."""
    lengths = {name: (schedule.makespan, schedule.proven_optimal) for name, schedule in schedules.items()}
    lengths[LOWER_BOUND] = (lower_bound(graph, machine), None)
    return [{"scheduler": name, "cycles": cycles, "tasks": len(graph),
             "speedup_vs_naive": round(naive_cycles / max(cycles, 1), 3), "proven_optimal": proven}
            for name, (cycles, proven) in lengths.items()]
