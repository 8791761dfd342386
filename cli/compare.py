"""``hts compare``: programs on every scheduler, beside HEFT, REFT and the optimum."""

import json
from pathlib import Path

from hts.base.errors import HTSError, Location

from hts.base.arguments import Files, Role, add_argument

from .arguments import add_config, load_programs, nonnegative_int, positive_float, positive_int, system
from .command import Command

# Added dependences the text table names before "and N more".
_EXTRA_SHOWN = 10

# The schedules read from a run's trace, whose tasks :func:`_inputs`'s ``label`` names.
_TRACED = ("hts", "hts-nospec", "runtime")


def _add_arguments(parser):
    add_argument(parser, Role.INPUT, "programs", metavar="PROG", nargs="+",
                 help="assembly source or image, one per process; or one task graph (.graphml)")
    add_config(parser)
    add_argument(parser, Role.OUTPUT, "--plot", metavar="FILE.png",
                 help="bar chart to write (default: PROG_compare.png)")
    parser.add_argument("--time-limit", metavar="SECONDS", type=positive_float, default=10.0,
                        help="CP-SAT's time for the optimal schedule (default 10); past it, the best found, "
                             "not proven")
    parser.add_argument("--optimal-max-tasks", metavar="N", type=positive_int, default=40,
                        help="skip CP-SAT for task graphs of more tasks (default 40)")
    parser.add_argument("--instances", metavar="N", type=positive_int, default=2,
                        help="instances of each accelerator class a .graphml graph runs on (default 2)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="seed of the initial memory contents (default 0)")


def _inputs(args, config):
    """(system, programs, timing, task graph, label of a task by pid and pc, class of each
    task or None, extra dependences).

    A single .graphml file is a task graph, run as the program :func:`graph_program`
    makes of it on ``--instances`` instances of each of its classes; anything else is
    programs, whose task graph (None here) :func:`run` makes once it knows they run a task.
    """
    from hts.models.graphs import graph_program, read_graphml
    graphs = [path for path in args.programs if Path(path).suffix.lower() == ".graphml"]
    if graphs and len(args.programs) > 1:
        raise HTSError("a task graph is compared on its own, not with other programs or graphs", Location(graphs[0]))
    if graphs:
        graph = read_graphml(graphs[0])
        made = graph_program(graph, {c: args.instances for c in graph.classes}, config)
        return (made.config, [made.program], made.timing, graph, lambda pid, pc: made.task_of_pc[pc],
                made.accel_class, sorted(made.extra_dependences))
    return config, load_programs(args.programs, config), None, None, lambda pid, pc: f"{pid}.{pc}", None, []


def _gantt_labels(args, scheduler: str) -> str:
    """What the bar labels of ``scheduler``'s Gantt chart are.

    A task graph file names every task itself. Of programs, the traced runs name a task
    by the instruction that started it (``label`` of :func:`_inputs`; the model's trace
    numbers a repeated instruction's runs), the other schedules by its place in the
    programs' task graph (:func:`hts.models.graphs.program_graph`).
    """
    if Path(args.programs[0]).suffix.lower() == ".graphml":
        return f"Labels: task names of {Path(args.programs[0]).name}"
    if scheduler in _TRACED:
        return ("Labels pid.pc: process and word index (pc) of the instruction that issued the task; "
                "pid.pc'n: that instruction's (n+1)-th task to finish")
    return "Labels tN: the task's place in program order, from t0 (the programs one after another)"


def _note(row: dict) -> str:
    from hts.models.report import LOWER_BOUND
    if "memory_matches_sequential" in row:
        check = "matches sequential" if row["memory_matches_sequential"] else "DIFFERS from sequential"
        return f"{row['memory_digest']} {check}"
    if row["proven_optimal"] is True:
        return "offline: optimal (proven)"
    if row["proven_optimal"] is False:
        return "offline: best found in the time limit (not proven optimal)"
    return "no schedule is shorter" if row["scheduler"] == LOWER_BOUND else "offline schedule of the task graph"


def _print_table(title, rows, reference, extra, plot, gantt):
    print(title)
    print(f"{'scheduler':<12}{'cycles':>10}{'vs naive':>10}{'tasks':>7}  memory")
    for row in rows + reference:
        print(f"{row['scheduler']:<12}{row['cycles']:>10}{row['speedup_vs_naive']:>9.2f}x{row['tasks']:>7}  "
              f"{_note(row)}")
    if extra:
        shown = ", ".join(f"{u}->{v}" for u, v in extra[:_EXTRA_SHOWN])
        more = f" and {len(extra) - _EXTRA_SHOWN} more (--json lists them all)" if len(extra) > _EXTRA_SHOWN else ""
        print(f"note: the HTS program orders {len(extra)} task pair(s) the graph leaves free (one input "
              f"region per instruction): {shown}{more}")
    print(f"plot: {plot}")
    print(f"gantt charts: {', '.join(gantt.values())}")


def _plot_path(args) -> Path:
    return Path(args.plot) if args.plot else Path(f"{Path(args.programs[0]).stem}_compare.png")


def _gantt_paths(plot: Path) -> dict[str, str]:
    """The Gantt chart of every schedule that may be drawn, beside the bar chart."""
    from hts.models.report import REFERENCE_SCHEDULERS
    return {name: str(plot.with_name(f"{plot.stem}_gantt_{name}.png"))
            for name in (*_TRACED, "naive", *REFERENCE_SCHEDULERS)}


def chart_files(args) -> Files:
    """The charts a comparison may write that no argument names."""
    plot = _plot_path(args)
    return Files(outputs=[*([] if args.plot else [str(plot)]), *_gantt_paths(plot).values()])


def compare(args) -> tuple[int, list[dict], list[dict]]:
    """Run and draw the comparison; the exit status, the schedulers' rows and the offline rows."""
    from hts.flows.plots import plot_compare, plot_gantt
    from hts.models.graphs import program_graph
    from hts.models.memory import initial_memory
    from hts.models.report import compare_rows, compare_runs, reference_rows, reference_schedules
    from hts.models.schedulers.cycle_model import naive_schedule, trace_schedule
    from hts.models.schedulers.machine import machine_of_config
    config, programs, timing, graph, label, classes, extra = _inputs(args, system(args.config))
    runs = compare_runs(config, programs, args.seed, timing)
    faults = runs["hts"].faults
    if faults:
        # Every scheduler stops the process at the same instruction; one report is enough.
        raise faults[0].error()
    rows = compare_rows(runs)
    if graph is None and runs["sequential"].tasks:
        # The path the programs take from the seeded memory.
        graph = program_graph(programs, config, initial_memory(config, args.seed))
    machine = machine_of_config(config)
    offline = {} if graph is None else reference_schedules(graph, machine, args.time_limit, args.optimal_max_tasks)
    reference = [] if graph is None else reference_rows(graph, machine, offline, runs["naive"].cycles)
    plot = _plot_path(args)
    title = f"{' '.join(Path(p).name for p in args.programs)} on {config.source}"
    schedules = {name: trace_schedule(runs[name], label) for name in _TRACED}
    if graph is not None:
        schedules["naive"] = naive_schedule(runs["naive"], graph, config.timing.interrupt_latency, classes)
    schedules.update(offline)
    gantt = {name: path for name, path in _gantt_paths(plot).items() if name in schedules}
    plot_compare(rows, plot, title)
    for name, schedule in schedules.items():
        plot_gantt(schedule.slots, schedule.makespan, gantt[name], f"{title}: {name}", _gantt_labels(args, name))
    if args.json:
        tasks, edges = (0, 0) if graph is None else (len(graph), len(graph.edges))
        print(json.dumps({"programs": args.programs, "config": config.source, "plot": str(plot), "schedulers": rows,
                          "graph": {"tasks": tasks, "edges": edges, "extra_dependences": [list(e) for e in extra]},
                          "reference": reference, "gantt": gantt}))
    else:
        _print_table(title, rows, reference, extra, plot, gantt)
    return (0 if all(row["memory_matches_sequential"] for row in rows) else 1), rows, reference


def run(args) -> int:
    status, _, _ = compare(args)
    return status


COMPARE = Command(
    "compare", help="run programs on every scheduler, against HEFT, REFT and the optimum",
    description="Run the programs on naive, runtime, hts-nospec, hts and sequential scheduling from the same "
                "initial memory, print cycles and speed-up over naive, check that every final memory equals the "
                "sequential one (exit 1 if not), and draw a bar chart. Then schedule the same tasks offline on "
                "the same accelerators with HEFT, REFT and CP-SAT (optimal, for small graphs), beside a lower "
                "bound on any schedule, and draw a Gantt chart per schedule (FILE_gantt_SCHEDULER.png beside the "
                "bar chart). A single .graphml file is taken as a task graph and run as the program its graph "
                "makes.",
    add_arguments=_add_arguments, run=run, more_files=chart_files)
