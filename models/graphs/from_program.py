"""Task program -> task graph: the dependences the memory tracker would find, made explicit.

The programs run in order on the functional executor, so loops come out unrolled and
each branch takes the way the initial memory sends it: the graph is that of the path
the program takes. Every executed task is a node; an edge joins two tasks whose block
regions conflict, as the scheduler's tracker sees them (any overlapping block):

- RAW: a task reads a block whose last writer is an earlier task;
- WAR: a task writes a block that earlier tasks read since its last write;
- WAW: a task writes a block whose last writer is an earlier task.

Only the last writer of a block and the readers since it are tracked, so an edge stands
for an ordering no other edge already implies through that block.
"""

from collections import defaultdict
from collections.abc import Collection, Sequence

import networkx as nx

from hts.assembler import Program
from hts.base.config import SystemConfig
from hts.models.executor import run_sequential
from hts.models.memory import Memory
from hts.models.timing import DeviceTiming, TableLatency

from .taskgraph import TaskGraph

__all__ = ["dependences", "program_graph", "task_name", "region_blocks"]

Region = tuple[int, int]


def region_blocks(region: Region) -> range:
    base, count = region
    return range(base, base + count)


def dependences(accesses: Sequence[tuple[Collection[int], Collection[int]]]) -> dict[tuple[int, int], set[str]]:
    """Dependences between tasks given as ``(blocks read, blocks written)``, in program order.

    Returns ``{(earlier, later): {"raw", "war", "waw"}}`` over task indices.
    """
    last_writer: dict[int, int] = {}
    readers: dict[int, set[int]] = defaultdict(set)
    found: dict[tuple[int, int], set[str]] = defaultdict(set)
    for task, (reads, writes) in enumerate(accesses):
        for block in reads:
            if block in last_writer and last_writer[block] != task:
                found[last_writer[block], task].add("raw")
        for block in writes:
            if block in last_writer and last_writer[block] != task:
                found[last_writer[block], task].add("waw")
            for reader in readers[block] - {task}:
                found[reader, task].add("war")
        for block in reads:
            readers[block].add(task)
        for block in writes:
            last_writer[block] = task
            readers[block] = set()
    return dict(found)


def task_name(index: int) -> str:
    """Name of the ``index``-th executed task (program order)."""
    return f"t{index}"


def program_graph(programs: list[Program], config: SystemConfig, memory: Memory,
                  timing: DeviceTiming | None = None, name: str | None = None) -> TaskGraph:
    """The task graph of ``programs`` run in order from ``memory`` (which the run changes).

    Each task costs the cycles ``timing`` gives it on its own class; the toolkit's
    accelerators share home memory, so edges carry no communication cost.
    """
    timing = timing or TableLatency()
    execution = run_sequential(programs, config, memory)
    graph = nx.DiGraph(name=name or " ".join(program.source for program in programs))
    for index, task in enumerate(execution.tasks):
        accelerator = config.accelerator_by_id(task.accel_id)
        word = programs[task.pid].decoded[task.pc]
        graph.add_node(task_name(index), kind=accelerator.name, pid=task.pid, pc=task.pc,
                       cost={accelerator.name: timing.cycles(accelerator, word)})
    accesses = [(region_blocks((in_base, in_blocks)), region_blocks((out_base, out_blocks)))
                for in_base, in_blocks, out_base, out_blocks in (task.regions for task in execution.tasks)]
    for (earlier, later), kinds in sorted(dependences(accesses).items()):
        graph.add_edge(task_name(earlier), task_name(later), comm=0, dependence=",".join(sorted(kinds)))
    return TaskGraph(graph, graph.graph["name"])
