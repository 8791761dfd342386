"""Schedule metrics of seed 004, section 6.2 (after Topcuoglu et al.).

- makespan: the schedule's length (equation 6.6);
- speedup: the sequential time, every task at its cheapest cost one after another,
  over the makespan (6.8);
- schedule length ratio (SLR): the makespan over the critical path at cheapest costs,
  a lower bound, so 1 is the best possible (6.7);
- slack: the mean over tasks of makespan - bottom level - top level, both levels taken
  with the costs the schedule actually pays (each task's cost on its PE, ``comm`` where
  producer and consumer are at different locations): 0 for a task that could not move
  without lengthening the schedule (6.9);
- efficiency: speedup per PE. Seed 004 weighs PEs by the FPGA resources they use
  (6.12); the machine models here carry no resources, so every PE counts as one, the
  conventional definition the seed starts from.
"""

from hts.models.graphs import TaskGraph

from .bounds import critical_path, sequential_time
from .machine import Machine
from .schedule import Schedule, arrival

__all__ = ["makespan", "speedup", "schedule_length_ratio", "slack", "efficiency", "metrics"]


def makespan(schedule: Schedule) -> int:
    return schedule.makespan


def speedup(graph: TaskGraph, schedule: Schedule) -> float:
    return sequential_time(graph) / schedule.makespan


def schedule_length_ratio(graph: TaskGraph, schedule: Schedule) -> float:
    return schedule.makespan / critical_path(graph)


def _levels(graph: TaskGraph, schedule: Schedule) -> tuple[dict[str, int], dict[str, int]]:
    """Top level (longest path into a task) and bottom level (longest path from it, itself
    included) with the schedule's own costs."""
    slots = schedule.slots

    def duration(task):
        return slots[task].finish - slots[task].start

    def edge(producer, consumer):
        return arrival(graph, producer, slots[producer], consumer, slots[consumer].location) - slots[producer].finish

    top: dict[str, int] = {}
    for task in graph.tasks:
        top[task] = max((top[p] + duration(p) + edge(p, task) for p in graph.predecessors(task)), default=0)
    bottom: dict[str, int] = {}
    for task in reversed(graph.tasks):
        bottom[task] = duration(task) + max((edge(task, s) + bottom[s] for s in graph.successors(task)), default=0)
    return top, bottom


def slack(graph: TaskGraph, schedule: Schedule) -> float:
    top, bottom = _levels(graph, schedule)
    return sum(schedule.makespan - bottom[task] - top[task] for task in graph.tasks) / len(graph)


def efficiency(graph: TaskGraph, machine: Machine, schedule: Schedule) -> float:
    return speedup(graph, schedule) / len(machine.pes)


def metrics(graph: TaskGraph, machine: Machine, schedule: Schedule) -> dict[str, float]:
    """Every metric of ``schedule``, by name, rounded for tables and JSON."""
    return {
        "makespan": makespan(schedule),
        "speedup": round(speedup(graph, schedule), 4),
        "slr": round(schedule_length_ratio(graph, schedule), 4),
        "slack": round(slack(graph, schedule), 2),
        "efficiency": round(efficiency(graph, machine, schedule), 4),
    }
