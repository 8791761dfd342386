"""Scheduler throughput: cycles per decoded task and decode-to-dispatch latency, model and RTL.

    python -m hts.flows.throughput [-n 64] [-c CFG] [--fmax-mhz MHZ] [--deep N] [--no-rtl] [--plot FILE.png]

Two generated programs of the configuration's shortest accelerator class: N independent
tasks (every region disjoint) and a chain of N tasks, each reading what the previous one
wrote. Every figure comes from a run's trace, its ``decode`` and ``dispatch`` events
matched per task by (pid, pc, tag), so stages added between the two leave the measure
valid. The RTL's figures come from its own trace port, read by the co-simulation
(``hts cosim --trace`` writes the same events). For ns, give the Fmax that
``hts synth --json`` measured (its ``fmax_mhz``) as ``--fmax-mhz``.
"""

import argparse
import bisect
import statistics
import sys
from collections import defaultdict, deque
from dataclasses import dataclass

from hts.assembler import Program, assemble
from hts.base.config import AcceleratorClass, SystemConfig, load_config
from hts.base.errors import HTSError
from hts.cosim.run import cosimulate
from hts.cosim.scoreboard import Job, RunOutcome, RunSpec
from hts.isa import FIELDS
from hts.models.dispatch import START_DELAY
from hts.models.hts import HTSModel, RunResult
from hts.models.memory import initial_memory
from hts.models.wakeup import WAKE_DELAY

from .plots import plot_decode_times

__all__ = ["PROGRAMS", "shortest_class", "program_text", "TaskTimes", "task_times", "Throughput", "measure",
           "default_deep", "in_flight_limit", "back_end_cycles_per_task", "assembled_programs", "model_results",
           "rtl_outcomes", "report_tables"]

PROGRAMS = ("independent", "chain")
TASK_IDS = 1 << {name: width for name, _, width in FIELDS}["task_id"]

# Etsion et al., "Task Superscalar: An Out-of-Order Task Pipeline", MICRO-43, 2010, abstract:
# "our pipeline can maintain a decode rate faster than 60ns per task".
TASK_SUPERSCALAR_NS = 60.0
TASK_SUPERSCALAR = "Task Superscalar (Etsion et al., MICRO 2010): decodes faster than 60 ns per task"


# ---- the programs ---------------------------------------------------------------------------

def shortest_class(config: SystemConfig) -> AcceleratorClass:
    """The class with the fewest cycles per task: the one that asks most of the front end."""
    return min(config.accelerators, key=lambda acc: acc.latency)


def _blocks_needed(kind: str, tasks: int) -> int:
    return 2 * tasks if kind == "independent" else tasks + 1


def program_text(kind: str, config: SystemConfig, tasks: int) -> str:
    """Assembly of ``tasks`` one-block tasks: ``independent`` or a ``chain``.

    Independent task i reads block i and writes block tasks + i, so no two regions meet;
    chain task i reads block i and writes block i + 1, which task i + 1 reads. The data
    computed does not matter: a task takes its class's table latency whatever it reads.
    """
    if kind not in PROGRAMS:
        raise ValueError(f"unknown program {kind!r} (known: {', '.join(PROGRAMS)})")
    if tasks > config.hts.program_words:
        raise HTSError(f"{tasks} tasks do not fit the program memory ({config.hts.program_words} instructions)")
    if _blocks_needed(kind, tasks) > config.memory.blocks:
        raise HTSError(f"{kind}: {tasks} tasks need {_blocks_needed(kind, tasks)} memory blocks, "
                       f"the configuration has {config.memory.blocks}")
    acc = shortest_class(config)
    output = (lambda i: tasks + i) if kind == "independent" else (lambda i: i + 1)
    lines = [f"; {kind}: {tasks} tasks of {acc.name} ({acc.latency} cycles), one block in, one block out"]
    lines += [f"{acc.name} {i:x} 1 {output(i):x} 1 {i % TASK_IDS:x} 0 0 0" for i in range(tasks)]
    return "\n".join(lines) + "\n"


# ---- the measure ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TaskTimes:
    decode: int
    dispatch: int | None     # None: never dispatched (squashed)


def task_times(events: list[dict]) -> list[TaskTimes]:
    """Decode and dispatch cycle of every decoded task, in decode order.

    A dispatch belongs to the oldest undispatched decode with its (pid, pc, tag). A tag is
    held from decode to completion, so the same key cannot be decoded again meanwhile;
    the queue only matters for a loop that decodes one pc many times.
    """
    decodes: list[int] = []
    dispatches: dict[int, int] = {}
    waiting: dict[tuple[int, int, int], deque[int]] = defaultdict(deque)
    for event in events:
        if event["event"] not in ("decode", "dispatch"):
            continue
        key = (event["pid"], event["pc"], event["tag"])
        if event["event"] == "decode":
            waiting[key].append(len(decodes))
            decodes.append(event["cycle"])
        elif waiting[key]:
            dispatches[waiting[key].popleft()] = event["cycle"]
    return [TaskTimes(cycle, dispatches.get(index)) for index, cycle in enumerate(decodes)]


def _cycles_per_task(cycles: list[int]) -> float | None:
    """Mean interval between consecutive decodes: (last - first) / (decodes - 1)."""
    return (cycles[-1] - cycles[0]) / (len(cycles) - 1) if len(cycles) > 1 else None


@dataclass(frozen=True)
class Throughput:
    """Decode times and latencies of one run, split at the first completion.

    Before any task completes nothing in the back end has been freed, so the decodes up
    to then (the *burst*) go at the front end's own rate until the tracker's tags run
    out. The decodes after it are the *steady state*, where a completion frees
    the room each one needs when the back end is the limit.
    """
    decodes: list[int]                  # cycle of every decode, in order
    latencies: list[int]                # decode to dispatch, per dispatched task
    first_completion: int | None
    in_flight: list[int]                # per decode: tasks decoded before it and not completed

    def intervals_in_flight(self, at_least: int) -> list[int]:
        """Cycles from a decode to the next, made with ``at_least`` tasks already in flight
        and no completion in between: the front end's own rate, not waiting for room."""
        return [b - a for a, b, before, held in zip(self.decodes, self.decodes[1:], self.in_flight, self.in_flight[1:])
                if held >= at_least and held == before + 1]

    def deep_median_interval(self, at_least: int) -> float | None:
        intervals = self.intervals_in_flight(at_least)
        return statistics.median(intervals) if intervals else None

    @property
    def burst(self) -> list[int]:
        # A slot freed by a completion is usable the cycle after it: decodes in the
        # completion's own cycle did not need it.
        if self.first_completion is None:
            return self.decodes
        return [cycle for cycle in self.decodes if cycle <= self.first_completion]

    @property
    def steady(self) -> list[int]:
        return self.decodes[len(self.burst):]

    @property
    def burst_cycles_per_task(self) -> float | None:
        return _cycles_per_task(self.burst)

    @property
    def steady_median_interval(self) -> float | None:
        steady = self.steady
        return statistics.median(b - a for a, b in zip(steady, steady[1:])) if len(steady) > 1 else None

    @property
    def steady_cycles_per_task(self) -> float | None:
        return _cycles_per_task(self.steady)

    @property
    def overall_cycles_per_task(self) -> float | None:
        return _cycles_per_task(self.decodes)


def measure(events: list[dict]) -> Throughput:
    """The throughput figures of a trace (event dicts, by cycle: the model's ``as_dict()`` or the RTL's)."""
    times = task_times(events)
    completions = sorted(event["cycle"] for event in events if event["event"] == "complete")
    decodes = [task.decode for task in times]
    return Throughput(decodes=decodes,
                      latencies=[task.dispatch - task.decode for task in times if task.dispatch is not None],
                      first_completion=completions[0] if completions else None,
                      in_flight=[index - bisect.bisect_left(completions, cycle) for index, cycle in enumerate(decodes)])


# ---- what throttles -------------------------------------------------------------------------

def in_flight_limit(config: SystemConfig) -> int:
    """Tasks decoded and not yet completed at which decode stalls: the tags, each held from
    decode to the broadcast of its task's completion."""
    return config.hts.tracker_entries


def back_end_cycles_per_task(kind: str, config: SystemConfig) -> float:
    """The accelerators' best rate: an instance is busy latency + 3 cycles per task.

    A task starts ``START_DELAY`` (one) cycle after its dispatch grant; its completion is
    granted latency cycles after the start and broadcast the cycle after; the instance
    is freed at the end of the broadcast's cycle, so the next task dispatches two cycles
    after the completion. A chain's next task waits for that broadcast and for the walk of
    its producer's list (``WAKE_DELAY`` cycles more).
    """
    acc = shortest_class(config)
    if kind == "independent":
        return (acc.latency + START_DELAY + 2) / acc.count
    return acc.latency + START_DELAY + 2 + WAKE_DELAY


def throttle_note(kind: str, config: SystemConfig, tasks: int, model: RunResult) -> str:
    """What limits the decode rate of ``kind``, from the configuration and the model's stall counts."""
    acc, limit = shortest_class(config), in_flight_limit(config)
    bound = f"at best {back_end_cycles_per_task(kind, config):.2f} cycles/task"
    if kind == "independent":
        limiter = "accelerators"
        lines = [f"back end: {acc.count} {acc.name} instances, each busy {acc.latency} + {START_DELAY + 2} cycles "
                 f"a task: {bound}"]
    else:
        limiter = "chain"
        lines = [f"dependences: each task dispatches once the previous one's broadcast has woken it "
                 f"({2 + WAKE_DELAY} cycles after its completion): {bound}"]
    if tasks > limit:
        lines.append(f"decode stalls at {limit} tasks in flight (the tracker's tags): after the burst the "
                     f"{limiter}, not the front end, set the rate")
    else:
        lines.append(f"all {tasks} tasks fit in flight ({limit}): decode never waits for the back end")
    stalls = ", ".join(f"{reason} {count}" for reason, count in sorted(model.stalls.items()))
    lines.append(f"model's cycles without a decode, by reason: {stalls or 'none'}")
    return "\n".join(f"  {line}" for line in lines)


# ---- running ----------------------------------------------------------------------------------

def model_run(config: SystemConfig, program: Program) -> RunResult:
    return HTSModel(config, [program], initial_memory(config)).run()


def rtl_outcomes(config: SystemConfig, programs: dict[str, Program], command: str) -> dict[str, RunOutcome]:
    """Each program on the Verilated RTL (one simulator process); its outcome, trace included."""
    specs = tuple(RunSpec(name=kind, programs=(program,), reproduce=command) for kind, program in programs.items())
    outcomes = cosimulate(Job(config, specs, keep_trace=True),
                          progress=lambda message: print(message, file=sys.stderr, flush=True))
    return dict(zip(programs, outcomes))


# ---- the report -----------------------------------------------------------------------------

COLUMNS = ("program", "side", "tasks", "burst tasks", "burst /task", "steady median", "steady /task",
           "deep median", "overall /task", "latency min", "latency median", "latency max")


def default_deep(config: SystemConfig) -> int:
    """Tasks in flight from which a decode counts as *deep*: 100, or three quarters of the
    tags (12 on the default)."""
    return min(100, 3 * in_flight_limit(config) // 4)


def _number(value: float | None, scale: float) -> str:
    return "-" if value is None else f"{value * scale:.2f}".rstrip("0").rstrip(".")


def _spread(values: list[int]) -> tuple:
    return (min(values), statistics.median(values), max(values)) if values else (None, None, None)


def table_rows(results: dict[tuple[str, str], Throughput], scale: float, deep: int) -> list[list[str]]:
    """One row per (program, side); times multiplied by ``scale`` (1 for cycles, ns per cycle for ns)."""
    rows = []
    for (kind, side), result in results.items():
        times = [result.burst_cycles_per_task, result.steady_median_interval, result.steady_cycles_per_task,
                 result.deep_median_interval(deep), result.overall_cycles_per_task, *_spread(result.latencies)]
        rows.append([kind, side, str(len(result.decodes)), str(len(result.burst)),
                     *(_number(value, scale) for value in times)])
    return rows


def reference_row(reference: str) -> list[str]:
    per_task = COLUMNS.index("burst /task")
    row = ["Task Superscalar", "reference", "-", "-"] + ["-"] * (len(COLUMNS) - 4)
    row[per_task:per_task + 5] = [reference] * 5
    return row


def markdown_table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [list(COLUMNS), *rows]) for i in range(len(COLUMNS))]

    def line(cells):
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths)) + " |"

    return "\n".join([line(COLUMNS), line(["-" * width for width in widths]), *map(line, rows)])


def report_tables(results: dict[tuple[str, str], Throughput], fmax_mhz: float | None,
                  deep: int) -> tuple[str, str | None]:
    """The report's Markdown tables, each ending with Task Superscalar's row: in cycles, and
    in ns at ``fmax_mhz`` (None without a clock); ``deep``: the deep median's tasks in flight."""
    reference_ns = f"< {TASK_SUPERSCALAR_NS:g}"
    in_cycles = f"< {_number(TASK_SUPERSCALAR_NS * fmax_mhz / 1000, 1)}" if fmax_mhz else f"{reference_ns} ns"
    cycles = markdown_table(table_rows(results, 1.0, deep) + [reference_row(in_cycles)])
    if not fmax_mhz:
        return cycles, None
    return cycles, markdown_table(table_rows(results, 1000 / fmax_mhz, deep) + [reference_row(reference_ns)])


def model_results(config: SystemConfig, programs: dict[str, Program]) -> tuple[dict, dict[str, RunResult]]:
    """Each program on the cycle model: its figures keyed (program, "model"), and its run."""
    models = {kind: model_run(config, program) for kind, program in programs.items()}
    results = {(kind, "model"): measure([event.as_dict() for event in model.trace.events])
               for kind, model in models.items()}
    return results, models


def assembled_programs(config: SystemConfig, tasks: int) -> dict[str, Program]:
    """The benchmark's programs of ``tasks`` tasks, assembled for ``config``."""
    return {kind: assemble(program_text(kind, config, tasks), config, f"{kind}.s") for kind in PROGRAMS}


def print_report(results: dict, notes: dict[str, str], rtl_match: dict[str, bool], fmax_mhz: float | None,
                 config: SystemConfig, tasks: int, deep: int):
    acc = shortest_class(config)
    print(f"throughput on {config.source}: {tasks} tasks of {acc.name} ({acc.latency} cycles, {acc.count} instances)")
    for kind in PROGRAMS:
        print(f"{kind}:\n{notes[kind]}")
        if kind in rtl_match:
            verdict = "equals the model's, cycle for cycle" if rtl_match[kind] else "DIFFERS from the model's"
            print(f"  RTL trace {verdict}")
    print("\nburst: decodes up to the first completion (the front end alone); steady: the decodes after it;"
          "\n/task: mean interval between decodes, (last - first) / (decodes - 1); median: of those intervals"
          "\n(decodes that come in bunches, one per freed instance, show as a small median beside a large mean);"
          f"\ndeep median: of the intervals ending in a decode made with at least {deep} tasks in flight"
          "\n(decoded, not completed) and no completion in between: the front end's own rate with that"
          "\nmuch to compare against;"
          "\nlatency: decode to dispatch of each task\n")
    in_cycles, in_ns = report_tables(results, fmax_mhz, deep)
    print("in cycles:")
    print(in_cycles)
    if in_ns:
        print(f"\nin ns at {fmax_mhz:g} MHz:")
        print(in_ns)
    print(f"\nreference: {TASK_SUPERSCALAR}")
    if not fmax_mhz:
        print("for ns, give --fmax-mhz: the Fmax `hts synth --json` measured (its fmax_mhz)")


def _at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"need at least 2 tasks for an interval, got {value}")
    return value


def _tasks_in_flight(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a number of tasks in flight is >= 0, got {value}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m hts.flows.throughput", description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--tasks", type=_at_least_two, default=64, help="tasks per program (default 64)")
    parser.add_argument("-c", "--config", metavar="CFG", default="default",
                        help="preset or YAML file (default: default)")
    parser.add_argument("--fmax-mhz", type=_positive, metavar="MHZ",
                        help="also print ns at this clock; the measured Fmax is `hts synth --json`'s fmax_mhz")
    parser.add_argument("--no-rtl", action="store_true", help="model only: skip the Verilator co-simulation")
    parser.add_argument("--deep", type=_tasks_in_flight, metavar="N",
                        help="tasks in flight from which a decode is deep (default: 100, or 3/4 of what the "
                             "configuration holds in flight if less)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="write decode cycle against task index, and decode interval against tasks in flight, "
                             "as a PNG")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> bool:
    """Measure, print and plot; whether the RTL (if run) agreed with the model."""
    config = load_config(args.config)
    programs = assembled_programs(config, args.tasks)
    results, models = model_results(config, programs)
    notes = {kind: throttle_note(kind, config, args.tasks, model) for kind, model in models.items()}
    rtl_match = {}
    if not args.no_rtl:
        command = f"python -m hts.flows.throughput -c {args.config} -n {args.tasks}"
        for kind, outcome in rtl_outcomes(config, programs, command).items():
            results[kind, "RTL"] = measure(outcome.trace)
            rtl_match[kind] = outcome.match
    results = {key: results[key] for key in sorted(results, key=lambda key: PROGRAMS.index(key[0]))}
    deep = args.deep if args.deep is not None else default_deep(config)
    print_report(results, notes, rtl_match, args.fmax_mhz, config, args.tasks, deep)
    if args.plot:
        plot_decode_times({key: (result.decodes, result.in_flight) for key, result in results.items()}, args.plot,
                          f"decodes on {config.source}")
        print(f"plot: {args.plot}")
    return all(rtl_match.values())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        agreed = run(args)
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
    return 0 if agreed else 1


if __name__ == "__main__":
    sys.exit(main())
