"""HEFT (Topcuoglu, Hariri and Wu, 2002): list scheduling by upward rank, earliest finish time.

Tasks are taken in decreasing *upward rank*: a task's mean cost over the PEs that can run
it, plus the largest communication-and-rank of its successors (the length of the longest
path from the task to the end). Each task goes on the (PE, location) where it finishes
first, in the earliest idle gap that fits it after its inputs are ready (the insertion
policy), rather than only after the PE's last task.

:func:`list_schedule` is the skeleton REFT shares: it takes what blocks a PE at a
location as a function of the tasks placed so far.
"""

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction

from hts.models.graphs import TaskGraph

from .machine import Machine
from .schedule import Schedule, Slot, data_ready, offline_schedule

__all__ = ["upward_ranks", "downward_ranks", "earliest_start", "list_schedule", "heft", "busy_on_pe"]

Interval = tuple[int, int]
Blocked = Callable[[str, int, Mapping[str, Slot]], Iterable[Interval]]


def _mean_cost(graph: TaskGraph, machine: Machine, task: str) -> Fraction:
    costs = [graph.cost(task)[pe.accel_class] for pe in machine.pes if pe.accel_class in graph.cost(task)]
    if not costs:
        raise ValueError(f"task {task!r} runs on {', '.join(graph.cost(task))}; machine {machine.name} has "
                         "no PE of those classes")
    return Fraction(sum(costs), len(costs))


def _mean_comm(graph: TaskGraph, machine: Machine, producer: str, consumer: str) -> int:
    """The edge's cost as HEFT's ranks count it: in full, as Topcuoglu et al. do, unless the
    machine has a single location, where data never move."""
    return graph.comm(producer, consumer) if machine.locations > 1 else 0


def upward_ranks(graph: TaskGraph, machine: Machine) -> dict[str, Fraction]:
    """rank_u(v) = mean cost(v) + max over successors s of (comm(v, s) + rank_u(s)), exactly."""
    ranks: dict[str, Fraction] = {}
    for task in reversed(graph.tasks):
        ranks[task] = _mean_cost(graph, machine, task) + max(
            (_mean_comm(graph, machine, task, s) + ranks[s] for s in graph.successors(task)), default=0)
    return ranks


def downward_ranks(graph: TaskGraph, machine: Machine) -> dict[str, Fraction]:
    """rank_d(v) = max over predecessors p of (rank_d(p) + mean cost(p) + comm(p, v))."""
    ranks: dict[str, Fraction] = {}
    for task in graph.tasks:
        ranks[task] = max((ranks[p] + _mean_cost(graph, machine, p) + _mean_comm(graph, machine, p, task)
                           for p in graph.predecessors(task)), default=Fraction(0))
    return ranks


def earliest_start(blocked: Iterable[Interval], ready: int, duration: int) -> int:
    """The first time from ``ready`` on at which ``duration`` cycles fit between the blocked intervals."""
    start = ready
    for low, high in sorted(blocked):
        if high <= start:
            continue
        if low >= start + duration:
            break
        start = high
    return start


def busy_on_pe(pe: str, location: int, slots: Mapping[str, Slot]) -> list[Interval]:
    """The intervals ``pe`` is running a task, wherever it is loaded."""
    return [(slot.start, slot.finish) for slot in slots.values() if slot.pe == pe]


def list_schedule(graph: TaskGraph, machine: Machine, scheduler: str, blocked: Blocked) -> Schedule:
    """Tasks by decreasing upward rank (ties in graph order), each where it finishes first
    (ties: the first (PE, location) of the machine)."""
    ranks = upward_ranks(graph, machine)
    position = {task: index for index, task in enumerate(graph.tasks)}
    slots: dict[str, Slot] = {}
    for task in sorted(graph.tasks, key=lambda t: (-ranks[t], position[t])):
        best = None
        for pe, location in machine.executors:
            accel_class = machine.pe[pe].accel_class
            if accel_class not in graph.cost(task):
                continue
            duration = graph.cost(task)[accel_class]
            start = earliest_start(blocked(pe, location, slots), data_ready(graph, slots, task, location), duration)
            if best is None or start + duration < best.finish:
                best = Slot(pe, location, start, start + duration)
        slots[task] = best
    return offline_schedule(scheduler, slots)


def heft(graph: TaskGraph, machine: Machine) -> Schedule:
    """HEFT's schedule of ``graph`` on a machine that never reconfigures (see :func:`reft`)."""
    if machine.reconfigurable:
        raise ValueError(f"machine {machine.name} reconfigures its locations; HEFT does not model that, REFT does")
    return list_schedule(graph, machine, "heft", busy_on_pe)
