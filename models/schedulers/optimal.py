"""Optimal schedules with OR-Tools CP-SAT, as seed 004 generates its ground truth (3.7.4, 6.1.4).

Each task has one optional interval per (PE, location) that can run it, exactly one of
them present. The intervals of a PE never overlap. Two tasks at one location whose PEs
are in different configurations are apart by at least the reconfiguration delay (the
location holds one configuration at a time; a delay of 0 still keeps them apart). A
consumer starts after each producer finishes, plus the edge's ``comm`` when the two are
at different locations. The makespan is minimised.

REFT's schedule seeds the search: its length bounds the horizon and it is given as a
hint, so the solver always has a feasible schedule to improve, and the makespan is
bounded below by :func:`~.bounds.lower_bound`. The result says whether optimality was
proven within the time limit. With ``use_bounds=False`` the search knows neither bound
(the horizon is a serial schedule's length): the tests use that optimum to check REFT,
HEFT and the lower bound against something they did not shape.
"""

from collections import defaultdict
from itertools import combinations

from ortools.sat.python import cp_model

from hts.models.graphs import TaskGraph

from .bounds import lower_bound
from .machine import Machine
from .reft import reft
from .schedule import Schedule, Slot, offline_schedule

__all__ = ["optimal", "DEFAULT_TIME_LIMIT"]

DEFAULT_TIME_LIMIT = 10.0


class _Option:
    """Task ``task`` on ``pe`` at ``location``: its presence literal and interval.

    The interval has its own start, tied to the task's start and end only when present,
    as OR-Tools' flexible job-shop example does. Optional intervals of different lengths
    sharing one start and end made CP-SAT 9.15 report a feasible model INFEASIBLE
    (``erdos_renyi(6, 0.75, 34356)`` on ``static``; the tests keep it as an example).
    """

    def __init__(self, model: cp_model.CpModel, task: str, pe: str, location: int, duration: int,
                 start, end, horizon: int):
        self.task, self.pe, self.location, self.duration = task, pe, location, duration
        name = f"{task}@{pe}@{location}"
        self.present = model.NewBoolVar(name)
        own_start = model.NewIntVar(0, horizon, f"start_{name}")
        self.interval = model.new_optional_fixed_size_interval_var(own_start, duration, self.present, f"run_{name}")
        model.Add(start == own_start).OnlyEnforceIf(self.present)
        model.Add(end == own_start + duration).OnlyEnforceIf(self.present)


def _options(model, graph: TaskGraph, machine: Machine, start, end, horizon: int) -> dict[str, list[_Option]]:
    options = defaultdict(list)
    for task in graph.tasks:
        for pe, location in machine.executors:
            accel_class = machine.pe[pe].accel_class
            if accel_class in graph.cost(task):
                options[task].append(_Option(model, task, pe, location, graph.cost(task)[accel_class],
                                             start[task], end[task], horizon))
        if not options[task]:
            raise ValueError(f"task {task!r}: machine {machine.name} has no PE that runs it")
        model.AddExactlyOne(option.present for option in options[task])
    return options


def _one_configuration_per_location(model, machine: Machine, options: dict[str, list[_Option]]):
    """Tasks at one location on PEs of different configurations: apart by the delay."""
    gap = machine.reconfiguration
    flat = [option for task_options in options.values() for option in task_options]
    for first, second in combinations(flat, 2):
        if (first.task == second.task or first.location != second.location
                or machine.configuration_of[first.pe] == machine.configuration_of[second.pe]):
            continue
        first_goes_first = model.NewBoolVar("")
        both = [first.present, second.present]
        model.Add(first.interval.EndExpr() + gap <= second.interval.StartExpr()).OnlyEnforceIf(
            [*both, first_goes_first])
        model.Add(second.interval.EndExpr() + gap <= first.interval.StartExpr()).OnlyEnforceIf(
            [*both, first_goes_first.Not()])


def _location_literals(model, machine: Machine, options: dict[str, list[_Option]]) -> dict[tuple[str, int], object]:
    """A literal per (task, location): the task runs there."""
    at = {}
    for task, task_options in options.items():
        for location in range(machine.locations):
            here = [option.present for option in task_options if option.location == location]
            at[task, location] = model.NewBoolVar(f"{task}_at_{location}")
            model.Add(sum(here) == at[task, location])
    return at


def _precedence(model, graph: TaskGraph, machine: Machine, options, start, end):
    at = _location_literals(model, machine, options) if machine.locations > 1 else {}
    for producer, consumer in graph.edges:
        model.Add(start[consumer] >= end[producer])
        comm = graph.comm(producer, consumer)
        if comm == 0 or machine.locations == 1:
            continue
        for here in range(machine.locations):
            for there in range(machine.locations):
                if here != there:
                    model.Add(start[consumer] >= end[producer] + comm).OnlyEnforceIf(
                        [at[producer, here], at[consumer, there]])


def _hint(model, options, start, end, hint: Schedule):
    for task, task_options in options.items():
        slot = hint.slots[task]
        model.AddHint(start[task], slot.start)
        model.AddHint(end[task], slot.finish)
        for option in task_options:
            model.AddHint(option.present, option.pe == slot.pe and option.location == slot.location)


def _serial_length(graph: TaskGraph, machine: Machine) -> int:
    """An upper bound on the optimum that owes nothing to a heuristic: the tasks one after
    another at their dearest cost, each paying every input's ``comm`` and a reconfiguration."""
    classes = {pe.accel_class for pe in machine.pes}
    return sum(max((c for k, c in graph.cost(task).items() if k in classes), default=0) + machine.reconfiguration
               + sum(graph.comm(p, task) for p in graph.predecessors(task)) for task in graph.tasks)


def optimal(graph: TaskGraph, machine: Machine, time_limit: float = DEFAULT_TIME_LIMIT, workers: int = 1,
            use_bounds: bool = True) -> Schedule:
    """The shortest schedule of ``graph`` on ``machine`` CP-SAT finds within ``time_limit``
    seconds; ``proven_optimal`` says whether it proved no shorter one exists.

    One worker by default: it is deterministic, and the tests share a small machine.
    ``use_bounds=False`` leaves REFT's length and the lower bound out of the model (see
    the module docstring).
    """
    heuristic = reft(graph, machine)
    horizon = heuristic.makespan if use_bounds else _serial_length(graph, machine)
    model = cp_model.CpModel()
    start = {task: model.NewIntVar(0, horizon, f"start_{task}") for task in graph.tasks}
    end = {task: model.NewIntVar(0, horizon, f"end_{task}") for task in graph.tasks}
    options = _options(model, graph, machine, start, end, horizon)
    for pe in machine.pe:
        model.AddNoOverlap([o.interval for task_options in options.values() for o in task_options if o.pe == pe])
    if machine.reconfigurable:
        _one_configuration_per_location(model, machine, options)
    _precedence(model, graph, machine, options, start, end)
    makespan = model.NewIntVar(lower_bound(graph, machine) if use_bounds else 0, horizon, "makespan")
    model.AddMaxEquality(makespan, list(end.values()))
    model.Minimize(makespan)
    _hint(model, options, start, end, heuristic)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.catch_sigint_signal = False      # Ctrl-C stays Python's: KeyboardInterrupt, files cleaned up
    solver.parameters.num_workers = workers
    status = solver.Solve(model)
    if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
        # REFT's schedule should satisfy the model: a bug in the model, REFT or the lower bound.
        raise AssertionError(f"CP-SAT: {graph.name} on {machine.name} is {solver.StatusName(status)}, "
                             f"though REFT schedules it in {heuristic.makespan}")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        # Out of time before a solution: the heuristic's schedule is the best known.
        return Schedule("cp-sat", heuristic.slots, heuristic.makespan, proven_optimal=False)
    slots = {}
    for task, task_options in options.items():
        chosen = next(option for option in task_options if solver.BooleanValue(option.present))
        slots[task] = Slot(chosen.pe, chosen.location, solver.Value(start[task]), solver.Value(end[task]))
    return offline_schedule("cp-sat", slots, proven_optimal=status == cp_model.OPTIMAL)
