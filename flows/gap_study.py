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


def markdown_tables(summary: list[dict], benchmarks: list[dict], generated: list[dict]) -> tuple[str, str, str]:
    """The study's three tables in Markdown: the layer-by-layer means, the paper's benchmarks
    and the generated graphs (as printed, and as docs/results.md holds them)."""
    layers = ["| layer-by-layer, 10 tasks | mean optimal/scheduler | graphs (optimum proven) | seed 004 |",
              "|---|---:|---:|---:|"]
    for row in summary:
        paper = "" if row["seed_004"] is None else f"{row['seed_004']:.3f}"
        layers.append(f"| {row['what']} | {row['mean_ratio']:.3f} | {row['graphs']} | {paper} |")
    programs = ["| benchmark | tasks | HTS | HEFT | optimal | optimal/HTS |", "|---|---:|---:|---:|---:|---:|"]
    programs += [f"| {row['benchmark']} | {_schedule_cells(row)} |" for row in benchmarks]
    graphs = ["| graph | tasks | HTS | HEFT | optimal | optimal/HTS | dependences added |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    graphs += [f"| {row['graph']} | {_schedule_cells(row)} | {row['extra_dependences']} |" for row in generated]
    return "\n".join(layers), "\n".join(programs), "\n".join(graphs)


def run_study(per_cell: int = 4, seed: int = 0, time_limit: float = DEFAULT_TIME_LIMIT, progress=sys.stderr) -> dict:
    """The three parts of the study on the default system, and the layer-by-layer summary.
    Progress goes to ``progress`` (a stream, or None)."""
    base = load_config("default")
    if progress is not None:
        print("layer-by-layer graphs on M_PR, M_R and the static machine", file=progress)
    layers = layer_study(per_cell, seed, time_limit, base, progress)
    if progress is not None:
        print("the HTS paper's benchmarks on the default system", file=progress)
    benchmarks = benchmark_study(base, time_limit, progress)
    if progress is not None:
        print("generated graphs on two instances per class", file=progress)
    generated = generated_study(seed, time_limit, base, progress)
    return {"summary": layer_summary(layers), "layer_by_layer": layers, "benchmarks": benchmarks,
            "generated": generated}


def plot_study(result: dict, path):
    """The study's PNG: every mean and every graph's ratio as a bar."""
    bars = [(row["what"], row["mean_ratio"]) for row in result["summary"]]
    bars += [(f"HTS / optimal: {row['benchmark']}", row["hts_over_optimal"]) for row in result["benchmarks"]]
    bars += [(f"HTS / optimal: {row['graph']}", row["hts_over_optimal"]) for row in result["generated"]]
    plot_gap_study(bars, path, "Optimal makespan over each scheduler's (1 = optimal)")


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
    result = run_study(args.per_cell, args.seed, args.time_limit)
    plot_study(result, args.plot)
    if args.json:
        print(json.dumps({**result, "plot": args.plot}))
    else:
        print("\n\n".join(markdown_tables(result["summary"], result["benchmarks"], result["generated"])))
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
