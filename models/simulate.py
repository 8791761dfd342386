"""One entry point for every scheduler the toolkit compares.

- ``hts``: the cycle model with speculation (as configured);
- ``hts-nospec``: the same hardware with speculation off;
- ``runtime``: the same out-of-order policy run in software on the CPU;
- ``naive``: the CPU runs one task at a time and waits for its interrupt;
- ``sequential``: in-order execution with no scheduling cost at all (the reference
  for the final memory; its cycle count is the sum of the task latencies).
"""

from typing import Callable

from hts.assembler import Program
from hts.base.config import DEFAULT_STEP_LIMIT, SystemConfig

from .executor import ExecutionResult, run_sequential
from .hts import SCHEDULERS as CYCLE_SCHEDULERS, HTSModel, RunResult
from .memory import Memory
from .observation import CycleView
from .timing import DeviceTiming, TableLatency
from .trace import Trace

__all__ = ["SCHEDULERS", "simulate", "naive_cycles"]

SCHEDULERS = (*CYCLE_SCHEDULERS, "naive", "sequential")


def naive_cycles(execution: ExecutionResult, programs: list[Program], config: SystemConfig,
                 timing: DeviceTiming, interrupt: bool = True) -> tuple[int, list[int]]:
    """Total cycles of one-task-at-a-time execution, and busy cycles per class."""
    classes = {acc.id: (index, acc) for index, acc in enumerate(config.accelerators)}
    total, busy = 0, [0] * len(config.accelerators)
    for task in execution.tasks:
        index, acc = classes[task.accel_id]
        cycles = timing.cycles(acc, programs[task.pid].decoded[task.pc])
        busy[index] += cycles
        total += cycles + (config.timing.interrupt_latency if interrupt else 0)
    return total, busy


def simulate(config: SystemConfig, programs: list[Program], memory: Memory, scheduler: str = "hts",
             timing: DeviceTiming | None = None, max_steps: int = DEFAULT_STEP_LIMIT,
             observer: Callable[[CycleView], None] | None = None) -> RunResult:
    """``max_steps``: the instructions one process may execute before the run is given up,
    on every scheduler (a loop that never exits). ``observer``: see :class:`HTSModel`; the
    cycle schedulers only, as the others have no cycles to observe."""
    timing = timing or TableLatency()
    if scheduler in CYCLE_SCHEDULERS:
        return HTSModel(config, programs, memory, timing, scheduler, observer).run(max_steps)
    if scheduler not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {scheduler!r} (known: {', '.join(SCHEDULERS)})")
    if observer is not None:
        raise ValueError(f"scheduler {scheduler!r} has no cycles to observe")
    execution = run_sequential(programs, config, memory, max_steps)
    cycles, busy = naive_cycles(execution, programs, config, timing, interrupt=scheduler == "naive")
    cycles = max(cycles, 1)
    utilization = {acc.name: busy[i] / (acc.count * cycles) for i, acc in enumerate(config.accelerators)}
    committed = [(task.pid, task.pc, task.data) for task in execution.tasks]
    return RunResult(scheduler, cycles, len(execution.tasks), memory, Trace(), utilization, {},
                     execution.registers, 0, committed, execution.faults)
