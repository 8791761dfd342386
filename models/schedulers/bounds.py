"""A lower bound on every schedule's length: no scheduler, the HTS included, can beat it.

It is the largest of
- the critical path: the longest chain of tasks, each at its cheapest cost (edges cost
  nothing: producer and consumer may share a location);
- the total work (each task at its cheapest cost) spread over the PEs that can run at once;
- for each class, the work of the tasks only that class can run, spread over its PEs.

Each is rounded up: schedules are in whole cycles.
"""

from collections import defaultdict

from hts.models.graphs import TaskGraph

from .machine import Machine

__all__ = ["critical_path", "lower_bound", "sequential_time"]


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def critical_path(graph: TaskGraph) -> int:
    """The longest path through ``graph`` with every task at its cheapest cost."""
    finish: dict[str, int] = {}
    for task in graph.tasks:
        finish[task] = graph.min_cost(task) + max((finish[p] for p in graph.predecessors(task)), default=0)
    return max(finish.values())


def sequential_time(graph: TaskGraph) -> int:
    """Every task one after another at its cheapest cost (seed 004, equation 6.8)."""
    return sum(graph.min_cost(task) for task in graph.tasks)


def _class_bound(graph: TaskGraph, machine: Machine) -> int:
    bound_work = defaultdict(int)
    for task in graph.tasks:
        if len(graph.cost(task)) == 1:
            (accel_class, cycles), = graph.cost(task).items()
            bound_work[accel_class] += cycles
    return max((_ceil_div(work, machine.instances_of(c)) for c, work in bound_work.items()
                if machine.instances_of(c)), default=0)


def lower_bound(graph: TaskGraph, machine: Machine) -> int:
    return max(critical_path(graph), _ceil_div(sequential_time(graph), machine.parallel_pes),
               _class_bound(graph, machine))
