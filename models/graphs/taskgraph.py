"""The task graph every scheduler of the toolkit reads: a DAG of tasks with costs.

Conventions (checked by :func:`graph_problems`, enforced by :class:`TaskGraph`)

- a :class:`networkx.DiGraph` without cycles and with at least one task; node names are
  strings (GraphML keeps them as strings, so the round trip does not rename anything);
- every task has ``kind``, the type of computation it is (``"gemm"``, ``"fft_256"``; seed
  004's type function *t*), and ``cost``, a mapping from accelerator class to the cycles
  the task takes on one instance of that class. A task can only run on the classes its
  ``cost`` names (seed 004's *w(v, p)*, with PEs grouped by class);
- every edge has ``comm``, the cycles its data take to move when producer and consumer
  do not share a memory (seed 004's *c(e)*); ``0`` when absent from the input.

Other attributes (``pid``, ``pc``, ``dependence`` from a task program) ride along
untouched.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from hts.base.errors import HTSError, Location

__all__ = ["GraphError", "TaskGraph", "graph_problems", "build_graph"]

# Problems listed in an error message before "and N more".
_SHOWN_PROBLEMS = 5


class GraphError(HTSError):
    """A task graph that breaks the conventions, or a graph file that cannot be read."""


def _is_count(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _task_problems(task, attributes: Mapping) -> list[str]:
    problems = []
    if not isinstance(task, str):
        problems.append(f"task {task!r}: name must be a string")
    kind = attributes.get("kind")
    if kind is None:
        problems.append(f"task {task!r}: no 'kind'")
    elif not isinstance(kind, str) or not kind:
        problems.append(f"task {task!r}: 'kind' must be a non-empty string, got {kind!r}")
    cost = attributes.get("cost")
    if not cost:
        problems.append(f"task {task!r}: no 'cost', the cycles on each accelerator class that can run it "
                        f"(in GraphML, attributes cost_<class>)")
        return problems
    if not isinstance(cost, Mapping):
        problems.append(f"task {task!r}: 'cost' must map accelerator classes to cycles, got {cost!r}")
        return problems
    for accel_class, cycles in cost.items():
        if not isinstance(accel_class, str) or not accel_class:
            problems.append(f"task {task!r}: accelerator class {accel_class!r} must be a non-empty string")
        if not _is_count(cycles, 1):
            problems.append(f"task {task!r}: cost on {accel_class!r} must be an integer >= 1, got {cycles!r}")
    return problems


def graph_problems(graph) -> list[str]:
    """Everything that keeps ``graph`` from being a task graph, each naming the task or edge."""
    if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
        return [f"a task graph is a networkx DiGraph, got {type(graph).__name__}"]
    if graph.number_of_nodes() == 0:
        return ["the graph has no tasks"]
    problems = []
    for task, attributes in graph.nodes(data=True):
        problems += _task_problems(task, attributes)
    for producer, consumer, attributes in graph.edges(data=True):
        comm = attributes.get("comm", 0)
        if not _is_count(comm, 0):
            problems.append(f"edge {producer!r} -> {consumer!r}: 'comm' must be an integer >= 0, got {comm!r}")
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        pass
    else:
        problems.append("cycle: " + " -> ".join(repr(edge[0]) for edge in cycle) + f" -> {cycle[0][0]!r}")
    return problems


@dataclass(frozen=True, eq=False)
class TaskGraph:
    """A checked, frozen task graph (see the module docstring for the conventions).

    ``name`` is where the graph came from (a file, a generator call); errors cite it.
    """
    graph: nx.DiGraph
    name: str = "<graph>"

    def __post_init__(self):
        problems = graph_problems(self.graph)
        if problems:
            more = len(problems) - _SHOWN_PROBLEMS
            message = "; ".join(problems[:_SHOWN_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
            raise GraphError(message, Location(self.name))
        frozen = self.graph.copy()
        for _, _, attributes in frozen.edges(data=True):
            attributes.setdefault("comm", 0)
        object.__setattr__(self, "graph", nx.freeze(frozen))

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    @cached_property
    def tasks(self) -> tuple[str, ...]:
        """Every task in a topological order; among ready tasks, the one added first.

        This is the program order of :func:`hts.models.graphs.graph_program` and the
        tie-break of the list schedulers, so both are reproducible.
        """
        index = {task: position for position, task in enumerate(self.graph.nodes)}
        return tuple(nx.lexicographical_topological_sort(self.graph, key=index.__getitem__))

    @cached_property
    def classes(self) -> tuple[str, ...]:
        """Every accelerator class some task can run on, in order of first mention."""
        return tuple(dict.fromkeys(c for task in self.graph.nodes for c in self.cost(task)))

    def kind(self, task: str) -> str:
        return self.graph.nodes[task]["kind"]

    def cost(self, task: str) -> Mapping[str, int]:
        return self.graph.nodes[task]["cost"]

    def min_cost(self, task: str) -> int:
        return min(self.cost(task).values())

    def comm(self, producer: str, consumer: str) -> int:
        return self.graph.edges[producer, consumer]["comm"]

    def predecessors(self, task: str) -> list[str]:
        return list(self.graph.predecessors(task))

    def successors(self, task: str) -> list[str]:
        return list(self.graph.successors(task))

    @cached_property
    def edges(self) -> frozenset[tuple[str, str]]:
        return frozenset(self.graph.edges)


def build_graph(name: str, tasks: Iterable[tuple[str, str, Mapping[str, int]]],
                edges: Iterable[tuple[str, str, int]] = ()) -> TaskGraph:
    """A task graph from ``(task, kind, cost)`` and ``(producer, consumer, comm)`` triples."""
    graph = nx.DiGraph(name=name)
    for task, kind, cost in tasks:
        graph.add_node(task, kind=kind, cost=dict(cost))
    for producer, consumer, comm in edges:
        for end in (producer, consumer):
            if end not in graph:
                raise GraphError(f"edge {producer!r} -> {consumer!r} names no task {end!r}", Location(name))
        graph.add_edge(producer, consumer, comm=comm)
    return TaskGraph(graph, name)
