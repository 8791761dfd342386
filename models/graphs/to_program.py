"""Task graph -> a task program and a system the HTS model runs.

Each task becomes one accelerator instruction, in the graph's topological order
(:attr:`TaskGraph.tasks`), on the cheapest accelerator class the system has for it. A
task writes one block of its own and reads one contiguous range of blocks: that is all
an HTS instruction can say (Table I: one input region, one output region). An edge
``u -> v`` becomes a dependence when ``v``'s range covers ``u``'s block (RAW) or ``u``'s
range covers ``v``'s block (WAR). Every edge must be realised; a range that also covers
the block of a task that is neither predecessor nor successor adds a dependence the
graph does not have. Some DAGs cannot be laid out without one (three tasks that each
need two of three producers, which cannot all be pairwise adjacent on a line), so the
placement of blocks and ranges is searched with CP-SAT, minimising the added
dependences; :attr:`GraphProgram.extra_dependences` lists those that remain. Without
them the program's dependences are exactly the graph's edges. Graphs of more than
``MAX_SEARCH_TASKS`` tasks keep the greedy layout, unsearched.

The accelerators share home memory, so ``comm`` costs play no part here; each task
takes exactly its cost in cycles (:class:`GraphTiming`).
"""

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import yaml
from ortools.sat.python import cp_model

from hts.assembler import Program, assemble
from hts.base.config import AcceleratorClass, SystemConfig, parse_config
from hts.base.errors import ConfigError, Location
from hts.isa import Word

from .from_program import dependences, region_blocks
from .taskgraph import GraphError, TaskGraph

__all__ = ["Layout", "GraphTiming", "GraphProgram", "graph_program", "graph_config", "greedy_layout",
           "search_layout", "layout_edges", "DEFAULT_LAYOUT_TIME_LIMIT", "MAX_SEARCH_TASKS"]

DEFAULT_LAYOUT_TIME_LIMIT = 5.0
# The search's model has a literal per pair of tasks: about 400 MB at 200 tasks, growing
# with the square. Larger graphs keep the greedy layout.
MAX_SEARCH_TASKS = 200
# What the graph's accelerator classes compute: the data do not matter to the schedule,
# and vector_add is the cheapest function to run in the model.
GRAPH_FUNCTION = "vector_add"
# The ISA's B field (input region size) is 8 bits wide.
MAX_INPUT_BLOCKS = 0xFF


@dataclass(frozen=True)
class Layout:
    """Memory of a graph's program: the block each task writes, the range it reads."""
    outputs: Mapping[str, int]
    inputs: Mapping[str, tuple[int, int]]      # (base block, blocks); zero blocks: reads nothing


def layout_edges(graph: TaskGraph, layout: Layout) -> set[tuple[str, str]]:
    """The dependences the program of ``layout`` has, found as the tracker would find them."""
    accesses = [(region_blocks(layout.inputs[task]), [layout.outputs[task]]) for task in graph.tasks]
    return {(graph.tasks[earlier], graph.tasks[later]) for earlier, later in dependences(accesses)}


def greedy_layout(graph: TaskGraph) -> Layout:
    """Blocks in program order, each task reading from its first to its last predecessor.

    Every edge is realised; tasks in between the predecessors add dependences.
    """
    position = {task: index for index, task in enumerate(graph.tasks)}
    inputs = {}
    for task in graph.tasks:
        producers = [position[p] for p in graph.predecessors(task)]
        inputs[task] = (min(producers), max(producers) - min(producers) + 1) if producers else (0, 0)
    return Layout(position, inputs)


def _covers(model: cp_model.CpModel, low, high, block) -> cp_model.IntVar:
    """A literal true exactly when ``low <= block < high``."""
    above, below, covered = model.NewBoolVar(""), model.NewBoolVar(""), model.NewBoolVar("")
    model.Add(block >= low).OnlyEnforceIf(above)
    model.Add(block < low).OnlyEnforceIf(above.Not())
    model.Add(block < high).OnlyEnforceIf(below)
    model.Add(block >= high).OnlyEnforceIf(below.Not())
    model.AddBoolAnd([above, below]).OnlyEnforceIf(covered)
    model.AddBoolOr([above.Not(), below.Not()]).OnlyEnforceIf(covered.Not())
    return covered


def search_layout(graph: TaskGraph, time_limit: float = DEFAULT_LAYOUT_TIME_LIMIT) -> Layout:
    """A layout realising every edge with as few added dependences as CP-SAT finds in time."""
    tasks, start = graph.tasks, greedy_layout(graph)
    count = len(tasks)
    model = cp_model.CpModel()
    block = [model.NewIntVar(0, count - 1, f"block_{t}") for t in tasks]
    low = [model.NewIntVar(0, count, f"low_{t}") for t in tasks]
    high = [model.NewIntVar(0, count, f"high_{t}") for t in tasks]
    model.AddAllDifferent(block)
    for index, task in enumerate(tasks):
        model.Add(low[index] <= high[index])
        base, blocks = start.inputs[task]
        model.AddHint(block[index], start.outputs[task])
        model.AddHint(low[index], base)
        model.AddHint(high[index], base + blocks)
    reads = {(reader, writer): _covers(model, low[reader], high[reader], block[writer])
             for reader in range(count) for writer in range(count) if reader != writer}
    added = []
    for earlier in range(count):
        for later in range(earlier + 1, count):
            conflict = [reads[later, earlier], reads[earlier, later]]     # RAW, WAR
            if (tasks[earlier], tasks[later]) in graph.edges:
                model.AddBoolOr(conflict)
            else:
                extra = model.NewBoolVar("")
                for literal in conflict:
                    model.AddImplication(literal, extra)
                added.append(extra)
    model.Minimize(sum(added))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.catch_sigint_signal = False      # Ctrl-C stays Python's: KeyboardInterrupt, files cleaned up
    solver.parameters.num_workers = 1
    if solver.Solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return start
    return Layout({task: solver.Value(block[i]) for i, task in enumerate(tasks)},
                  {task: (solver.Value(low[i]), solver.Value(high[i]) - solver.Value(low[i]))
                   for i, task in enumerate(tasks)})


@dataclass(frozen=True)
class GraphTiming:
    """Device timing of a graph's program: each task takes its own cost, found by its output block."""
    cycles_by_output: Mapping[int, int]

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        return self.cycles_by_output[word.c]


@dataclass(frozen=True)
class GraphProgram:
    graph: TaskGraph
    program: Program
    config: SystemConfig
    timing: GraphTiming
    accel_class: Mapping[str, str]          # the class each task runs on
    task_of_pc: tuple[str, ...]
    extra_dependences: frozenset[tuple[str, str]]


def _assigned_classes(graph: TaskGraph, instances: Mapping[str, int]) -> dict[str, str]:
    """Each task on its cheapest class the system has (first in ``instances`` on a tie)."""
    assigned = {}
    for task in graph.tasks:
        offered = [c for c in instances if c in graph.cost(task)]
        if not offered:
            raise GraphError(f"task {task!r} runs on {', '.join(graph.cost(task))}, none of which the "
                             f"system has ({', '.join(instances)})", Location(graph.name))
        assigned[task] = min(offered, key=lambda c: graph.cost(task)[c])
    return assigned


def graph_config(graph: TaskGraph, instances: Mapping[str, int], base: SystemConfig,
                 assigned: Mapping[str, str]) -> SystemConfig:
    """``base`` with the graph's classes as its accelerators, sized for the graph's program.

    A class's ``latency`` is its slowest task's cost; the run takes each task's own
    cost from :class:`GraphTiming`. Class names must be keynames.
    """
    latency = {c: max([graph.cost(t)[c] for t, assigned_class in assigned.items() if assigned_class == c],
                      default=1) for c in instances}
    text = yaml.safe_dump({
        "memory": {**asdict(base.memory), "blocks": max(base.memory.blocks, len(graph))},
        "accelerators": [{"name": c, "latency": latency[c], "count": count, "function": GRAPH_FUNCTION}
                         for c, count in instances.items()],
        "hts": {**asdict(base.hts), "program_words": max(base.hts.program_words, len(graph))},
        "timing": asdict(base.timing),
    }, sort_keys=False)
    try:
        return parse_config(text, f"<system for {graph.name}>")
    except ConfigError as err:
        # Name the class at fault, not a line of the YAML made here.
        reason = err.message.removeprefix(f"{err.key}: ")
        match = re.match(r"accelerators\[(\d+)\]", err.key)
        what = f"accelerator class {list(instances)[int(match[1])]!r}" if match else "the system made for it"
        raise GraphError(f"{what} cannot run on the HTS model: {reason}", Location(graph.name)) from None


def _instruction(task: str, index: int, accel_class: str, output: int, reads: tuple[int, int]) -> str:
    base, blocks = reads
    task_id = index % 16            # a 4-bit tag for traces
    return f"{accel_class} {base:x} {blocks:x} {output:x} 1 {task_id:x} 0 0 0  ; {task}"


def graph_program(graph: TaskGraph, instances: Mapping[str, int], base: SystemConfig,
                  layout_time_limit: float = DEFAULT_LAYOUT_TIME_LIMIT) -> GraphProgram:
    """The program, system and timing that run ``graph`` on the HTS model.

    ``instances`` gives the instances of each accelerator class of the system; ``base``
    the rest of the system (scheduler sizes, timing).
    """
    assigned = _assigned_classes(graph, instances)
    config = graph_config(graph, instances, base, assigned)
    layout = search_layout(graph, layout_time_limit) if len(graph) <= MAX_SEARCH_TASKS else greedy_layout(graph)
    for task, (_, blocks) in layout.inputs.items():
        if blocks > MAX_INPUT_BLOCKS:
            raise GraphError(f"task {task!r} would read {blocks} blocks; an instruction reads at most "
                             f"{MAX_INPUT_BLOCKS}", Location(graph.name))
    text = "\n".join(_instruction(task, index, assigned[task], layout.outputs[task], layout.inputs[task])
                     for index, task in enumerate(graph.tasks))
    program = assemble(text + "\n", config, f"<program of {graph.name}>")
    timing = GraphTiming({layout.outputs[task]: graph.cost(task)[assigned[task]] for task in graph.tasks})
    realised = layout_edges(graph, layout)
    assert graph.edges <= realised, f"layout lost edges {sorted(graph.edges - realised)}"
    extra = frozenset(realised - graph.edges)
    return GraphProgram(graph, program, config, timing, assigned, graph.tasks, extra)
