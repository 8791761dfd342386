"""How far HTS, HEFT and REFT are from optimal schedules: the flow that runs
:mod:`hts.models.schedulers.study` and prints and plots its results (docs/results.md)."""

import argparse
import json
import sys

from hts.base.config import load_config
from hts.models.schedulers import study
from hts.models.schedulers.optimal import DEFAULT_TIME_LIMIT
from hts.models.schedulers.study import LAYERS, PROBABILITIES, benchmark_study, generated_study, layer_study, \
    layer_summary

from .plots import plot_gap_study


def _print_tables(summary: list[dict], benchmarks: list[dict], generated: list[dict]):
    print("| layer-by-layer, 10 tasks | mean optimal/scheduler | graphs (optimum proven) | seed 004 |")
    print("|---|---:|---:|---:|")
    for row in summary:
        paper = "" if row["seed_004"] is None else f"{row['seed_004']:.3f}"
        print(f"| {row['what']} | {row['mean_ratio']:.3f} | {row['graphs']} | {paper} |")
    print("\n| benchmark | tasks | HTS | HEFT | optimal | optimal/HTS |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in benchmarks:
        print(f"| {row['benchmark']} | {_schedule_cells(row)} |")
    print("\n| graph | tasks | HTS | HEFT | optimal | optimal/HTS | dependences added |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in generated:
        print(f"| {row['graph']} | {_schedule_cells(row)} | {row['extra_dependences']} |")


def _schedule_cells(row: dict) -> str:
    """Tasks, the three makespans and the ratio of one graph's row."""
    proven = "" if row["proven"] else " (not proven)"
    return (f"{row['tasks']} | {row['hts']} | {row['heft']} | {row['optimal']}{proven} "
            f"| {row['hts_over_optimal']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hts.flows.gap_study", description=study.__doc__.split("\n\n")[0])
    parser.add_argument("--per-cell", type=int, default=4,
                        help=f"layer-by-layer graphs per (layers, p) cell, {len(LAYERS) * len(PROBABILITIES)} cells "
                             "(default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first graph (default 0)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                        help=f"CP-SAT seconds per optimal schedule (default {DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--plot", default="gap_study.png", help="PNG of the mean ratios (default gap_study.png)")
    parser.add_argument("--json", action="store_true", help="print every row as one JSON object instead of tables")
    args = parser.parse_args(argv)
    base = load_config("default")
    print("layer-by-layer graphs on M_PR, M_R and the static machine", file=sys.stderr)
    layers = layer_study(args.per_cell, args.seed, args.time_limit, base)
    print("the HTS paper's benchmarks on the default system", file=sys.stderr)
    benchmarks = benchmark_study(base, args.time_limit)
    print("generated graphs on two instances per class", file=sys.stderr)
    generated = generated_study(args.seed, args.time_limit, base)
    summary = layer_summary(layers)
    bars = [(row["what"], row["mean_ratio"]) for row in summary]
    bars += [(f"HTS / optimal: {row['benchmark']}", row["hts_over_optimal"]) for row in benchmarks]
    bars += [(f"HTS / optimal: {row['graph']}", row["hts_over_optimal"]) for row in generated]
    plot_gap_study(bars, args.plot, "Optimal makespan over each scheduler's (1 = optimal)")
    if args.json:
        print(json.dumps({"summary": summary, "layer_by_layer": layers, "benchmarks": benchmarks,
                          "generated": generated, "plot": args.plot}))
    else:
        _print_tables(summary, benchmarks, generated)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
