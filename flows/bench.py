"""``hts bench`` as Dask tasks: every benchmark on every scheduler, one task per benchmark.

Each task assembles its benchmark and runs it on every scheduler (``models.report.compare``);
the rows come back in the benchmarks' order whatever order the tasks finish in.
"""

from collections.abc import Callable
from dataclasses import dataclass

from hts.base.config import SystemConfig

from .fanout import fan_out

__all__ = ["BenchCase", "bench_cases", "run_case", "bench", "markdown_table"]


@dataclass(frozen=True)
class BenchCase:
    config: SystemConfig
    name: str
    text: str
    seed: int


def bench_cases(config: SystemConfig, seed: int) -> list[BenchCase]:
    """The paper's nine synthetic benchmarks and the audio compression, both branch outcomes."""
    from hts.benchmarks import BENCHMARKS, audio_compression, source
    cases = [BenchCase(config, name, source(name), seed) for name in BENCHMARKS]
    return cases + [BenchCase(config, "audio_compression_taken", audio_compression(8, taken=True), seed)]


def run_case(case: BenchCase) -> dict:
    """One benchmark's row: cycles per scheduler, naive over HTS, and the memory check."""
    from hts.assembler import assemble
    from hts.models.report import compare
    rows = {row["scheduler"]: row for row in compare(case.config, [assemble(case.text, case.config, f"{case.name}.s")],
                                                     case.seed)}
    return {"benchmark": case.name, **{name: row["cycles"] for name, row in rows.items()},
            "naive_over_hts": round(rows["naive"]["cycles"] / rows["hts"]["cycles"], 2),
            "memory_matches_sequential": all(row["memory_matches_sequential"] for row in rows.values())}


def bench(cases: list[BenchCase], scheduler_address: str | None = None, workers: int = 2,
          progress: Callable[[str], None] = print) -> tuple[list[dict], list[str]]:
    """The rows of the cases that ran, in the cases' order, and an error line for each that failed."""
    rows, errors = {}, []
    for done, (case, row, error) in enumerate(fan_out(run_case, cases, scheduler_address, workers), start=1):
        if error:
            errors.append(f"{case.name}: {error}")
        else:
            rows[case.name] = row
        progress(f"  [{done}/{len(cases)}] {case.name}: {f'failed: {error}' if error else str(row['hts']) + ' cycles'}")
    return [rows[case.name] for case in cases if case.name in rows], errors


def markdown_table(rows: list[dict]) -> str:
    """The rows as the Markdown table ``hts bench`` prints and docs/results.md holds."""
    lines = ["| benchmark | naive | runtime | hts-nospec | hts | naive/hts | memory = sequential |",
             "|---|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {row['benchmark']} | {row['naive']} | {row['runtime']} | {row['hts-nospec']} | {row['hts']} "
              f"| {row['naive_over_hts']:.2f} | {'yes' if row['memory_matches_sequential'] else 'NO'} |"
              for row in rows]
    return "\n".join(lines)
