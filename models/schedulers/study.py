"""How far HTS, HEFT and REFT are from optimal schedules: the study behind docs/results.md.

``python -m hts.flows.gap_study`` runs it: Markdown tables, a PNG of the mean ratios, progress
on stderr. Every ratio is optimal makespan over the
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

import statistics
import sys
from collections.abc import Callable
from itertools import product

from hts.assembler import assemble
from hts.base.config import SystemConfig
from hts.benchmarks import BENCHMARKS, audio_compression, source
from hts.models.graphs import (
    TaskGraph, cholesky, cnn_training, erdos_renyi, gnn_chain, layer_by_layer, lu, program_graph, uniform_dag,
)
from hts.models.memory import initial_memory
from hts.models.simulate import simulate

from .cycle_model import run_graph
from .heft import heft
from .machine import case_study_machine, machine_of_config, static_machine
from .optimal import optimal
from .reft import reft

__all__ = ["layer_study", "layer_summary", "benchmark_study", "generated_study", "LAYERS", "PROBABILITIES"]

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
