"""The cycle budget: every benchmark's HTS cycles against the one-cycle tracker search.

The reference is the pipeline whose tracker compared every entry in one cycle (its
``hts bench`` cycles, kept below). A scheduler whose per-cycle work is bounded may spend
cycles on it: at most +3% per benchmark on the default and +5% on ``large``; tiny is
reported, not budgeted, and so is inflight128, against the default's reference (it is
the default with 128 tasks in flight). The speed-up over the naive baseline is given
before and now. Prints a Markdown table; exits 1 if a benchmark is over its budget or a
final memory differs from in-order execution.
"""

import argparse
import sys

from hts.base.config import load_config
from hts.base.errors import HTSError
from hts.base.progress import to_stderr

from .bench import bench, bench_cases

__all__ = ["BUDGET", "REFERENCE", "budget_rows", "markdown_table", "main"]

PRESETS = ("default", "large", "tiny", "inflight128")
BUDGET = {"default": 0.03, "large": 0.05}

_BENCHMARKS = ("no_dependency", "same_dependency", "different_dependency", "random_dependency",
               "loop_no_dependency", "loop_dependency", "branch_taken_no_dependency",
               "branch_not_taken_no_dependency", "branch_taken_dependency", "audio_compression",
               "audio_compression_taken")
# HTS cycles of the one-cycle tracker search, by preset, in the order of _BENCHMARKS.
REFERENCE = {
    "default": dict(zip(_BENCHMARKS, (18_690, 37_367, 18_797, 25_028, 4_600, 18_908, 2_462, 18_687, 1_946,
                                      11_123, 150_238))),
    "large": dict(zip(_BENCHMARKS, (18_690, 37_367, 18_797, 25_028, 2_774, 18_798, 2_462, 18_687, 1_946,
                                    5_605, 75_572))),
    "tiny": dict(zip(_BENCHMARKS, (32_703, 50_789, 31_108, 32_627, 14_493, 21_010, 4_455, 28_475, 2_088,
                                   23_035, 301_136))),
}
REFERENCE["inflight128"] = REFERENCE["default"]


def budget_rows(presets=PRESETS, progress=to_stderr) -> list[dict]:
    """One row per (preset, benchmark): cycles before and now, the change, its budget, the speed-ups."""
    rows = []
    for preset in presets:
        results, errors = bench(bench_cases(load_config(preset), seed=0), workers=0, progress=progress)
        if errors:
            raise HTSError(f"hts bench -c {preset}: " + "; ".join(errors))
        for result in results:
            before, now = REFERENCE[preset][result["benchmark"]], result["hts"]
            rows.append({"preset": preset, "benchmark": result["benchmark"], "before": before, "now": now,
                         "change": now / before - 1, "budget": BUDGET.get(preset),
                         "naive_over_hts_before": result["naive"] / before,
                         "naive_over_hts_now": result["naive"] / now,
                         "memory_matches_sequential": result["memory_matches_sequential"]})
    return rows


def within_budget(row: dict) -> bool:
    return row["budget"] is None or row["change"] <= row["budget"]


def markdown_table(rows: list[dict]) -> str:
    lines = ["| preset | benchmark | cycles before | now | change | budget | naive/HTS before | now |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        budget = "reported" if row["budget"] is None else f"+{row['budget']:.0%}"
        over = "" if within_budget(row) else " **over**"
        lines.append(f"| {row['preset']} | {row['benchmark']} | {row['before']:,} | {row['now']:,} | "
                     f"{row['change']:+.2%}{over} | {budget} | {row['naive_over_hts_before']:.2f} | "
                     f"{row['naive_over_hts_now']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hts.flows.cycle_budget", description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--config", action="append", choices=PRESETS, dest="presets",
                        help="preset to measure (repeatable; default: all four)")
    args = parser.parse_args(argv)
    rows = budget_rows(args.presets or PRESETS)
    print(markdown_table(rows))
    return 0 if all(within_budget(row) and row["memory_matches_sequential"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
