"""The result every scheduler returns, and the rules a schedule must keep (seed 004, 3.4).

A :class:`Schedule` places each task on a PE at a location over ``[start, finish)``.
:func:`violations` checks a schedule against a graph and a machine: every task once, on
a PE that can run it, for its cost; precedence with communication across locations; one
task per PE at a time; one configuration per location at a time, with the
reconfiguration delay between different ones.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations

from hts.models.graphs import TaskGraph

from .machine import Machine

__all__ = ["Slot", "Schedule", "offline_schedule", "Instance", "violations", "instances", "data_ready", "arrival"]


@dataclass(frozen=True)
class Slot:
    pe: str
    location: int
    start: int
    finish: int


@dataclass(frozen=True)
class Schedule:
    """Where and when each task runs.

    ``makespan`` is the schedule's length: the last finish for an offline schedule, the
    cycle count of a run of the HTS model (which also spends cycles around the tasks).
    ``proven_optimal`` says whether a solver proved it optimal; ``None`` when nothing
    tried to prove it.
    """
    scheduler: str
    slots: Mapping[str, Slot]
    makespan: int
    proven_optimal: bool | None = None

    def __post_init__(self):
        last = max((slot.finish for slot in self.slots.values()), default=0)
        if self.makespan < last:
            raise ValueError(f"{self.scheduler}: makespan {self.makespan} is before the last finish {last}")


def offline_schedule(scheduler: str, slots: Mapping[str, Slot], proven_optimal: bool | None = None) -> Schedule:
    """A schedule whose length is its last finish."""
    return Schedule(scheduler, dict(slots), max((slot.finish for slot in slots.values()), default=0), proven_optimal)


@dataclass(frozen=True)
class Instance:
    """A configuration loaded at a location over ``[begin, end)`` (seed 004, definition 16)."""
    location: int
    configuration: int
    begin: int
    end: int


def instances(machine: Machine, slots: Mapping[str, Slot]) -> list[Instance]:
    """The configuration instances a set of placed tasks needs: per location, tasks in start
    order, consecutive tasks of one configuration sharing an instance."""
    found = []
    for location in range(machine.locations):
        here = sorted((slot for slot in slots.values() if slot.location == location), key=lambda s: (s.start, s.finish))
        for slot in here:
            configuration = machine.configuration_of[slot.pe]
            if found and found[-1].location == location and found[-1].configuration == configuration:
                last = found[-1]
                found[-1] = Instance(location, configuration, last.begin, max(last.end, slot.finish))
            else:
                found.append(Instance(location, configuration, slot.start, slot.finish))
    return found


def arrival(graph: TaskGraph, producer: str, placed: Slot, consumer: str, location: int) -> int:
    """When ``producer``'s output reaches ``consumer`` at ``location``: ``comm`` later if it moves."""
    return placed.finish + (graph.comm(producer, consumer) if placed.location != location else 0)


def data_ready(graph: TaskGraph, slots: Mapping[str, Slot], task: str, location: int) -> int:
    """When all of ``task``'s inputs (all placed in ``slots``) are at ``location``."""
    return max((arrival(graph, p, slots[p], task, location) for p in graph.predecessors(task)), default=0)


def _placement_problems(graph: TaskGraph, machine: Machine, task: str, slot: Slot) -> list[str]:
    if slot.pe not in machine.pe:
        return [f"{task}: no PE {slot.pe!r}"]
    accel_class = machine.pe[slot.pe].accel_class
    if accel_class not in graph.cost(task):
        return [f"{task}: {slot.pe} ({accel_class}) cannot run it"]
    problems = []
    if slot.finish - slot.start != graph.cost(task)[accel_class]:
        problems.append(f"{task}: runs {slot.finish - slot.start} cycles, costs {graph.cost(task)[accel_class]}")
    if slot.location not in machine.placements[machine.configuration_of[slot.pe]]:
        problems.append(f"{task}: {slot.pe} cannot be loaded at location {slot.location}")
    return problems


def violations(graph: TaskGraph, machine: Machine, schedule: Schedule) -> list[str]:
    """Every rule ``schedule`` breaks, one message each; empty for a feasible schedule."""
    slots = schedule.slots
    missing = set(graph.tasks) - set(slots)
    problems = [f"{task}: not scheduled" for task in sorted(missing)]
    problems += [f"{task}: not in the graph" for task in sorted(set(slots) - set(graph.tasks))]
    if problems:
        return problems
    for task, slot in slots.items():
        problems += _placement_problems(graph, machine, task, slot)
    for producer, consumer in sorted(graph.edges):
        ready = arrival(graph, producer, slots[producer], consumer, slots[consumer].location)
        if slots[consumer].start < ready:
            problems.append(f"{consumer}: starts at {slots[consumer].start}, before its input from {producer} "
                            f"is ready at {ready}")
    for (a, first), (b, second) in combinations(sorted(slots.items()), 2):
        apart = first.finish <= second.start or second.finish <= first.start
        if first.pe == second.pe and not apart:
            problems.append(f"{a} and {b} overlap on {first.pe}")
        elif first.location == second.location and first.pe in machine.pe and second.pe in machine.pe \
                and machine.configuration_of[first.pe] != machine.configuration_of[second.pe]:
            gap = machine.reconfiguration
            if not (first.finish + gap <= second.start or second.finish + gap <= first.start):
                problems.append(f"{a} and {b} need different configurations at location {first.location} "
                                f"less than {gap} cycles apart")
    return problems
