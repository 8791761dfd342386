"""The HTS cycle model as one more scheduler: a run's trace read back as a :class:`Schedule`.

A task occupies its accelerator instance from the cycle it is dispatched to the cycle its
completion is broadcast on the CDB; runs aborted by a squash are left out. The
schedule's makespan is the run's cycle count, scheduling overhead included, so it is
directly comparable with the offline schedules of the same graph. The ``naive``
scheduler keeps no trace; :func:`naive_schedule` rebuilds its one-task-at-a-time order.
"""

from collections import Counter
from collections.abc import Callable, Mapping

from hts.base.config import SystemConfig
from hts.models.graphs import GraphProgram, TaskGraph, graph_program
from hts.models.hts import RunResult
from hts.models.memory import initial_memory
from hts.models.simulate import simulate

from .machine import instance_name
from .schedule import Schedule, Slot

__all__ = ["trace_schedule", "naive_schedule", "run_graph", "instance_name"]


def trace_schedule(result: RunResult, label: Callable[[int, int], str]) -> Schedule:
    """The slots of a run's tasks, named by ``label(pid, pc)`` (made unique by a ``'n`` suffix
    when a loop runs the same instruction again).

    Only tasks whose results count are kept: a speculative task that completed before its
    branch was found mispredicted is dropped with the squash, as an aborted one is.
    """
    dispatched = {}             # tag -> (dispatch cycle, speculation mask)
    done = []                   # [pid, pc, slot, mask] in completion order
    # IDs confirmed in the current cycle: the clear lands at the end of the cycle, so a
    # task dispatched later in that cycle still shows the bit in its dispatch event.
    cycle, confirmed_now = None, 0
    for event in result.trace.events:
        fields = event.fields
        if event.cycle != cycle:
            cycle, confirmed_now = event.cycle, 0
        if event.event == "dispatch":
            dispatched[fields["tag"]] = (event.cycle, fields["mask"] & ~confirmed_now)
        elif event.event == "abort":
            dispatched.pop(fields["tag"])
        elif event.event == "complete":
            start, mask = dispatched.pop(fields["tag"])
            slot = Slot(instance_name(fields["accel"], fields["instance"]), 0, start, event.cycle)
            done.append([fields["pid"], fields["pc"], slot, mask])
        elif event.event == "branch" and fields["spec_id"] is not None and not fields["taken"]:
            confirmed = ~(1 << fields["spec_id"])           # the bit is cleared everywhere, and reused
            confirmed_now |= 1 << fields["spec_id"]
            dispatched = {tag: (cycle, mask & confirmed) for tag, (cycle, mask) in dispatched.items()}
            for entry in done:
                entry[3] &= confirmed
        elif event.event == "squash":
            done = [entry for entry in done if not entry[3] >> fields["spec_id"] & 1]
    slots, runs = {}, Counter()
    for pid, pc, slot, _ in done:
        name = label(pid, pc)
        slots[f"{name}'{runs[name]}" if runs[name] else name] = slot
        runs[name] += 1
    return Schedule(result.scheduler, slots, result.cycles)


def naive_schedule(result: RunResult, graph: TaskGraph, interrupt_latency: int,
                   classes: Mapping[str, str] | None = None) -> Schedule:
    """A ``naive`` run (which keeps no trace) as a schedule: the tasks of ``graph`` one at a
    time in program order (:attr:`TaskGraph.tasks`), each on the first instance of its class
    (``classes[task]``, or the one class it can run on) and followed by the interrupt.

    ``graph`` must be the run's own task graph (:func:`~hts.models.graphs.program_graph`
    of the same programs and timing, or the graph a :func:`~hts.models.graphs.graph_program`
    came from): the slots then end exactly one interrupt latency before the run does.
    """
    slots, now = {}, 0
    for task in graph.tasks:
        accel_class = classes[task] if classes else next(iter(graph.cost(task)))
        finish = now + graph.cost(task)[accel_class]
        slots[task] = Slot(instance_name(accel_class, 0), 0, now, finish)
        now = finish + interrupt_latency
    if now != result.cycles:
        raise ValueError(f"{graph.name}: the naive run took {result.cycles} cycles; its task graph adds up to {now}")
    return Schedule(result.scheduler, slots, result.cycles)


def run_graph(graph: TaskGraph, instances: Mapping[str, int], base: SystemConfig, scheduler: str = "hts",
              seed: int = 0) -> tuple[Schedule, GraphProgram]:
    """``graph`` run on the HTS model (``scheduler`` ``hts``, ``hts-nospec`` or ``runtime``)."""
    program = graph_program(graph, instances, base)
    result = simulate(program.config, [program.program], initial_memory(program.config, seed), scheduler,
                      timing=program.timing)
    return trace_schedule(result, lambda pid, pc: program.task_of_pc[pc]), program
