"""Running programs for the CLI: one scheduler (``hts run``), all of them (``hts compare``),
and the audio compression over bands and instances (``hts scaling``, the paper's Figure 10).
"""

import dataclasses
import sys

from hts.assembler import Program
from hts.config import SystemConfig

from .memory import initial_memory
from .simulate import SCHEDULERS, simulate
from .hts import RunResult

__all__ = ["run_summary", "compare", "scaling", "with_instances", "COMPARE_ORDER"]

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
    }


def compare(config: SystemConfig, programs: list[Program], seed: int = 0) -> list[dict]:
    """Every scheduler on the same programs and initial memory; checked against sequential."""
    results = {name: simulate(config, programs, initial_memory(config, seed), name) for name in COMPARE_ORDER}
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
