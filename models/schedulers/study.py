"""How far HTS, HEFT and REFT are from optimal schedules: the study behind docs/results.md.

Run ``python -m hts.models.schedulers.study``. It prints Markdown tables, writes a PNG of
the mean ratios and shows progress on stderr. Every ratio is optimal makespan over the
scheduler's makespan, i.e. the scheduler's speedup over the optimal speedup (seed 004's
measure), 1 meaning optimal. Means are taken over the graphs whose optimum CP-SAT proved
and, for the HTS, that ran as exact programs (no dependence added by the layout).

1. Seed 004's REFT-versus-optimal experiment (its Figure 6.6): layer-by-layer graphs of
   10 tasks over a grid of layer counts and edge probabilities, on the case-study
   machines with partial reconfiguration (M_PR: two slots, one PE per configuration)
   and without (M_R: one region, bitstreams {a, b} and {c}). On the same graphs, the
   static machine with all three PEs always loaded is what the HTS schedules: HEFT and
   the HTS cycle model against its optimum.
2. The HTS paper's benchmarks on the default system: the HTS cycle model against the
   optimal schedule of each program's task graph.
3. Graphs of the generators (LU, Cholesky, Erdos-Renyi, uniform DAGs, a CNN training
   step, a GIN inference) on two instances per class.
"""

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from itertools import product

from hts.assembler import assemble
from hts.benchmarks import BENCHMARKS, audio_compression, source
from hts.config import SystemConfig, load_config
from hts.models.graphs import (
    TaskGraph, cholesky, cnn_training, erdos_renyi, gnn_chain, layer_by_layer, lu, program_graph, uniform_dag,
)
from hts.models.memory import initial_memory
from hts.models.simulate import simulate

from .cycle_model import run_graph
from .heft import heft
from .machine import case_study_machine, machine_of_config, static_machine
from .optimal import DEFAULT_TIME_LIMIT, optimal
from .reft import reft

__all__ = ["layer_study", "benchmark_study", "generated_study", "main"]

LAYERS = (1, 2, 3, 5, 10)
PROBABILITIES = (0.2, 0.5, 0.8)
STUDY_TASKS = 10
CLASSES = ("a", "b", "c")
# Illustrative relative costs (cycles) of a small CNN's training operations and of GNN
# kernels; the seeds give the graph shapes, not these numbers.
CNN_COSTS = {"conv_fp": 1000, "conv_bp": 1000, "conv_wu": 1000, "bn_fp": 100, "bn_bp": 100,
             "fc_fp": 400, "fc_bp": 400, "fc_wu": 400}
GNN_COSTS = {"spmm": {"fpga": 300, "gpu": 500}, "gemm": {"fpga": 400, "gpu": 150}}


def _ratio(best: int, other: int) -> float:
    return best / other


def _progress(stream, done: int, total: int, what: str):
    if stream is not None:
        print(f"  [{done}/{total}] {what}", file=stream, flush=True)


def layer_study(per_cell: int, seed: int, time_limit: float, base: SystemConfig, progress=sys.stderr,
                layers_grid: tuple[int, ...] = LAYERS, probabilities: tuple[float, ...] = PROBABILITIES) -> list[dict]:
    """One row per graph: REFT and optimum on M_PR and M_R; HEFT, HTS and optimum on the static machine."""
    machines = {"pr": case_study_machine(True), "r": case_study_machine(False)}
    static = static_machine({c: 1 for c in CLASSES})
    cells = list(product(layers_grid, probabilities, range(per_cell)))
    rows = []
    for done, (layers, probability, index) in enumerate(cells, start=1):
        graph = layer_by_layer(STUDY_TASKS, layers, probability, seed + index, kinds=CLASSES)
        row = {"layers": layers, "p": probability, "graph": graph.name}
        for key, machine in machines.items():
            best = optimal(graph, machine, time_limit)
            row[f"reft_{key}"], row[f"opt_{key}"], row[f"proven_{key}"] = (
                reft(graph, machine).makespan, best.makespan, best.proven_optimal)
        best = optimal(graph, static, time_limit)
        hts, made = run_graph(graph, {c: 1 for c in CLASSES}, base)
        row.update(heft_static=heft(graph, static).makespan, opt_static=best.makespan,
                   proven_static=best.proven_optimal, hts_static=hts.makespan,
                   exact_program=not made.extra_dependences)
        rows.append(row)
        _progress(progress, done, len(cells), graph.name)
    return rows


def _mean_ratio(rows: list[dict], scheduler: str, machine: str, keep: Callable[[dict], bool] = lambda row: True):
    kept = [row for row in rows if row[f"proven_{machine}"] and keep(row)]
    return statistics.fmean(_ratio(row[f"opt_{machine}"], row[f"{scheduler}_{machine}"]) for row in kept), len(kept)


def layer_summary(rows: list[dict]) -> list[dict]:
    exact = [row for row in rows if row["exact_program"]]
    lines = [("REFT / optimal, with partial reconfiguration (M_PR)", *_mean_ratio(rows, "reft", "pr"), 0.922),
             ("REFT / optimal, without (M_R)", *_mean_ratio(rows, "reft", "r"), 0.978),
             ("HEFT / optimal, static machine", *_mean_ratio(rows, "heft", "static"), None),
             ("HTS / optimal, static machine", *_mean_ratio(exact, "hts", "static"), None)]
    return [{"what": what, "mean_ratio": round(mean, 4), "graphs": count, "seed_004": paper}
            for what, mean, count, paper in lines]


def benchmark_study(config: SystemConfig, time_limit: float, progress=sys.stderr) -> list[dict]:
    """The HTS paper's benchmarks: HTS cycles against the optimum of each program's graph."""
    cases = [(name, source(name)) for name in BENCHMARKS] + [("audio_compression_taken", audio_compression(8, True))]
    machine = machine_of_config(config)
    rows = []
    for done, (name, text) in enumerate(cases, start=1):
        programs = [assemble(text, config, f"{name}.s")]
        graph = program_graph(programs, config, initial_memory(config))
        hts = simulate(config, programs, initial_memory(config), "hts").cycles
        best = optimal(graph, machine, time_limit)
        rows.append({"benchmark": name, "tasks": len(graph), "hts": hts, "heft": heft(graph, machine).makespan,
                     "optimal": best.makespan, "proven": best.proven_optimal,
                     "hts_over_optimal": round(_ratio(best.makespan, hts), 4)})
        _progress(progress, done, len(cases), name)
    return rows


def _generated_graphs(seed: int) -> list[TaskGraph]:
    return [lu(3), cholesky(4), erdos_renyi(12, 0.3, seed), uniform_dag(10, seed),
            cnn_training(("conv", "bn", "conv", "bn", "fc"), 2, {k: {"acc": v} for k, v in CNN_COSTS.items()}),
            gnn_chain("gin", GNN_COSTS, inputs=3)]


def generated_study(seed: int, time_limit: float, base: SystemConfig, progress=sys.stderr) -> list[dict]:
    """Generated graphs on two instances of each class: HEFT, HTS and the optimum."""
    graphs = _generated_graphs(seed)
    rows = []
    for done, graph in enumerate(graphs, start=1):
        instances = {c: 2 for c in graph.classes}
        machine = static_machine(instances)
        best = optimal(graph, machine, time_limit)
        hts, made = run_graph(graph, instances, base)
        rows.append({"graph": graph.name, "tasks": len(graph), "hts": hts.makespan,
                     "heft": heft(graph, machine).makespan, "optimal": best.makespan, "proven": best.proven_optimal,
                     "extra_dependences": len(made.extra_dependences),
                     "hts_over_optimal": round(_ratio(best.makespan, hts.makespan), 4)})
        _progress(progress, done, len(graphs), graph.name)
    return rows


def _print_tables(summary: list[dict], benchmarks: list[dict], generated: list[dict]):
    print("| layer-by-layer, 10 tasks | mean optimal/scheduler | graphs (optimum proven) | seed 004 |")
    print("|---|---:|---:|---:|")
    for row in summary:
        paper = "" if row["seed_004"] is None else f"{row['seed_004']:.3f}"
        print(f"| {row['what']} | {row['mean_ratio']:.3f} | {row['graphs']} | {paper} |")
    print("\n| benchmark | tasks | HTS | HEFT | optimal | optimal/HTS |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in benchmarks:
        proven = "" if row["proven"] else " (not proven)"
        print(f"| {row['benchmark']} | {row['tasks']} | {row['hts']} | {row['heft']} | {row['optimal']}{proven} "
              f"| {row['hts_over_optimal']:.3f} |")
    print("\n| graph | tasks | HTS | HEFT | optimal | optimal/HTS | dependences added |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in generated:
        proven = "" if row["proven"] else " (not proven)"
        print(f"| {row['graph']} | {row['tasks']} | {row['hts']} | {row['heft']} | {row['optimal']}{proven} "
              f"| {row['hts_over_optimal']:.3f} | {row['extra_dependences']} |")


def main(argv: list[str] | None = None) -> int:
    from hts.plots import plot_gap_study
    parser = argparse.ArgumentParser(prog="python -m hts.models.schedulers.study", description=__doc__.split("\n\n")[0])
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
