"""docs/results.md's tables, each rewritten in place by the flow that measures it.

    python -m hts.flows.results [PAGE] [--list] [--table NAME ...] [--check]

The page is prose around tables that sit between markers::

    <!-- results:bench-large -->
    Measured 2026-11-29 by `hts bench -c large ...`; regenerate: `python -m hts.flows.results --table bench-large`.

    | benchmark | naive | ... |
    <!-- /results -->

Every marker names a :class:`Table` of :data:`TABLES`: the command whose output the
table is, and a function that measures it through that command's Python API, formats it
as Markdown and redraws its PNG beside the page (``img/``). A run rewrites only what lies
between a pair of markers, heading line included (the command and the date measured), so
the prose around the tables stays byte for byte.

Cheap tables (cycle-model runs, seconds to a minute each) are what a plain run rewrites.
Expensive ones (synthesis, minutes to an hour each, and co-simulation with its Verilator
build) are rewritten only when named with ``--table``: a figure of the RTL changes when
someone chose to spend that time, and keeps the date it was measured until then. Tables
of wall time (model and co-simulation speed) differ on every run, so ``--check``, which
measures the other cheap tables and compares them with the page (their dates aside),
leaves them out. The page is written whole, with its PNGs, or not at all.
"""

import argparse
import datetime
import functools
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hts.base.config import load_config
from hts.base.errors import HTSError, Location, display_path
from hts.base.files import PAGE_BYTES, read_text
from hts.base.output import all_or_none, atomic_path

__all__ = ["Table", "TABLES", "Block", "Run", "parse_blocks", "replace_blocks", "heading", "measured_date",
           "regenerate", "stale_tables", "main"]

DEFAULT_PAGE = Path("docs/results.md")
START = re.compile(r"<!-- results:(?P<name>[^ ]*) -->")
END = "<!-- /results -->"
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_DATE = re.compile(r"^Measured (\d{4}-\d{2}-\d{2}) ")

# The default's Fmax as `hts synth --json` measured it (nextpnr seed 1): the clock at which
# the throughput tables give ns. It moves only when the table "synth-default" is re-measured.
DEFAULT_FMAX_MHZ = 55.48
# `hts scaling`'s bands and instances per function (the paper's Figure 10).
SCALING_BANDS = (4, 8, 16, 32)
SCALING_INSTANCES = (1, 2, 3, 4, 6, 8)


# ---- the registry ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """What a table's function may use: where to draw its PNG (None: draw nothing, as
    ``--check``) and where to report progress."""
    images: Path | None
    progress: Callable[[str], None]

    def plot(self, name: str, draw: Callable[[Path], None]):
        """Draw the table's PNG ``name`` beside the page, unless drawing is off."""
        if self.images is not None:
            draw(self.images / name)


@dataclass(frozen=True)
class Table:
    """One table of the page: the command it is the output of, and how to measure it."""
    name: str
    command: str
    make: Callable[[Run], str]        # the table as Markdown (and its PNG through Run.plot)
    expensive: bool = False           # synthesis or co-simulation: rewritten only when named
    timed: bool = False               # wall-time figures: never equal twice, so --check skips them
    duration: str = ""                # how long a run takes, for the heading of an expensive table

    @property
    def kind(self) -> str:
        return ("expensive" if self.expensive else "cheap") + (", timed" if self.timed else "")


def heading(table: Table, date: str) -> str:
    """The line above a table: when it was measured, by what, and how to rewrite it."""
    regenerate = f"regenerate{f' ({table.duration})' if table.duration else ''}"
    return (f"Measured {date} by `{table.command}`; {regenerate}: "
            f"`python -m hts.flows.results --table {table.name}`.")


def block_text(table: Table, date: str, body: str) -> str:
    """What goes between a table's markers: the heading, the table, and a blank line that
    ends the table before the closing marker in every Markdown reader."""
    return f"{heading(table, date)}\n\n{body.rstrip()}\n\n"


# ---- the page ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Block:
    """A pair of markers: the table's name and the 0-based lines of its two markers."""
    name: str
    start: int
    end: int


def parse_blocks(text: str, path: str | Path) -> list[Block]:
    """The marked tables of a page, in order; a marker out of place is an error at its line."""
    blocks, open_block, seen = [], None, {}
    where = display_path(path)
    for index, line in enumerate(text.splitlines()):
        start = START.fullmatch(line.strip())
        if start:
            name = start["name"]
            if open_block is not None:
                raise HTSError(f"table {name!r} starts inside table {open_block[0]!r} (line {open_block[1] + 1}): "
                               f"close it with {END}", Location(where, index + 1))
            if not _NAME.fullmatch(name):
                raise HTSError(f"table name {name!r}: lower-case words joined by '-'", Location(where, index + 1))
            if name in seen:
                raise HTSError(f"table {name!r} is marked twice (first at line {seen[name]})",
                               Location(where, index + 1))
            seen[name] = index + 1
            open_block = (name, index)
        elif line.strip() == END:
            if open_block is None:
                raise HTSError(f"{END} without a table open", Location(where, index + 1))
            blocks.append(Block(open_block[0], open_block[1], index))
            open_block = None
    if open_block is not None:
        raise HTSError(f"table {open_block[0]!r} is not closed with {END}", Location(where, open_block[1] + 1))
    return blocks


def block_contents(text: str, blocks: list[Block]) -> dict[str, str]:
    """Name -> the text between its markers, as :func:`block_text` writes it."""
    lines = text.splitlines(keepends=True)
    return {block.name: "".join(lines[block.start + 1:block.end]) for block in blocks}


def replace_blocks(text: str, blocks: list[Block], contents: dict[str, str]) -> str:
    """The page with the text between the markers of each table in ``contents`` replaced;
    every other line, markers included, as it was."""
    lines = text.splitlines(keepends=True)
    for block in sorted(blocks, key=lambda block: block.start, reverse=True):
        if block.name in contents:
            lines[block.start + 1:block.end] = contents[block.name].splitlines(keepends=True)
    return "".join(lines)


def measured_date(content: str) -> str | None:
    """The date in the heading line of a table's content, if it has one."""
    match = _DATE.match(content)
    return match[1] if match else None


def read_page(path: Path) -> tuple[str, list[Block]]:
    """The page's text and marked tables; a page without any is refused (it is not a results page)."""
    text = read_text(path, PAGE_BYTES, "results page")
    blocks = parse_blocks(text, path)
    if not blocks:
        raise HTSError("no <!-- results:NAME --> markers: not a results page, nothing to rewrite",
                       Location(display_path(path)))
    return text, blocks


def check_names(blocks: list[Block], path: Path, tables: dict[str, Table]):
    """Every table the page marks must be one the flow knows."""
    for block in blocks:
        if block.name not in tables:
            raise HTSError(f"unknown table {block.name!r} (tables: {', '.join(tables)})",
                           Location(display_path(path), block.start + 1))


def chosen(names: list[str] | None, blocks: list[Block], path: Path, tables: dict[str, Table],
           check: bool) -> list[str]:
    """The tables to measure, in the page's order: those named, or else every cheap one on
    the page (without the timed ones for ``--check``)."""
    on_page = [block.name for block in blocks]
    if names:
        for name in names:
            if name not in tables:
                raise HTSError(f"--table: unknown table {name!r} (tables: {', '.join(tables)})")
            if name not in on_page:
                raise HTSError(f"table {name!r} has no <!-- results:{name} --> marker on the page",
                               Location(display_path(path)))
        return [name for name in on_page if name in names]
    return [name for name in on_page
            if not tables[name].expensive and not (check and tables[name].timed)]


# ---- measuring ---------------------------------------------------------------------------------

def _progress(message: str):
    print(message, file=sys.stderr, flush=True)


def measure(names: list[str], tables: dict[str, Table], run: Run) -> dict[str, str]:
    """Name -> Markdown body of each named table, measured one after the other."""
    bodies = {}
    for number, name in enumerate(names, start=1):
        table = tables[name]
        run.progress(f"[{number}/{len(names)}] {name}: {table.command}")
        started = time.monotonic()
        bodies[name] = table.make(run)
        run.progress(f"[{number}/{len(names)}] {name}: done in {time.monotonic() - started:.0f} s")
    return bodies


def regenerate(path: Path, names: list[str] | None = None, tables: dict[str, Table] | None = None,
               today: str | None = None, progress: Callable[[str], None] = _progress) -> list[str]:
    """Measure the chosen tables (see :func:`chosen`) and rewrite them in the page, with
    their PNGs, all at once; the names rewritten."""
    tables = TABLES if tables is None else tables
    text, blocks = read_page(path)
    check_names(blocks, path, tables)
    names = chosen(names, blocks, path, tables, check=False)
    today = today or datetime.date.today().isoformat()
    with all_or_none():
        bodies = measure(names, tables, Run(path.parent / "img", progress))
        contents = {name: block_text(tables[name], today, body) for name, body in bodies.items()}
        with atomic_path(path) as tmp:
            tmp.write_text(replace_blocks(text, blocks, contents))
    return names


def stale_tables(path: Path, names: list[str] | None = None, tables: dict[str, Table] | None = None,
                 progress: Callable[[str], None] = _progress) -> list[str]:
    """Measure the chosen tables (the cheap, untimed ones by default) without writing
    anything; the names of those whose page content differs, the date in the heading aside."""
    tables = TABLES if tables is None else tables
    text, blocks = read_page(path)
    check_names(blocks, path, tables)
    names = chosen(names, blocks, path, tables, check=True)
    on_page = block_contents(text, blocks)
    bodies = measure(names, tables, Run(None, progress))
    today = datetime.date.today().isoformat()
    return [name for name, body in bodies.items()
            if on_page[name] != block_text(tables[name], measured_date(on_page[name]) or today, body)]


# ---- the tables: cycle model -------------------------------------------------------------------

def _bench(preset: str) -> Callable[[Run], str]:
    def make(run: Run) -> str:
        from .bench import bench, bench_cases, markdown_table
        from .plots import plot_benchmarks
        config = load_config(preset)
        rows, errors = bench(bench_cases(config, seed=0), workers=0, progress=run.progress)
        if errors:
            raise HTSError(f"hts bench -c {preset}: " + "; ".join(errors))
        if not all(row["memory_matches_sequential"] for row in rows):
            raise HTSError(f"hts bench -c {preset}: a final memory differs from in-order execution")
        run.plot(f"benchmarks_{preset}.png", lambda path: plot_benchmarks(rows, path, f"benchmarks on {config.source}"))
        return markdown_table(rows)
    return make


def _cycle_budget(run: Run) -> str:
    from .cycle_budget import budget_rows, markdown_table, within_budget
    rows = budget_rows(progress=run.progress)
    if not all(row["memory_matches_sequential"] for row in rows):
        raise HTSError("python -m hts.flows.cycle_budget: a final memory differs from in-order execution")
    over = [f"{row['preset']} {row['benchmark']}" for row in rows if not within_budget(row)]
    if over:
        raise HTSError("python -m hts.flows.cycle_budget: over budget: " + ", ".join(over))
    return markdown_table(rows)


def scaling_markdown(rows: list[dict]) -> str:
    """``hts scaling``'s rows as a table: a row per band count, a column per instance count."""
    instances = sorted({row["instances"] for row in rows})
    lines = ["| bands | " + " | ".join(f"{count} inst." for count in instances) + " |",
             "|---:|" + "---:|" * len(instances)]
    for bands in sorted({row["bands"] for row in rows}):
        cycles = {row["instances"]: row["cycles"] for row in rows if row["bands"] == bands}
        # Thousands separated: a seven-digit count reads as a number, not as a commit hash.
        lines.append(f"| {bands} | " + " | ".join(f"{cycles[count]:,}" for count in instances) + " |")
    return "\n".join(lines)


def _scaling(taken: bool) -> Callable[[Run], str]:
    def make(run: Run) -> str:
        from hts.assembler import assemble
        from hts.benchmarks import audio_compression
        from hts.models.report import scaling
        from .plots import plot_scaling
        config = load_config("default")

        def program(bands, system):
            return assemble(audio_compression(bands, taken), system, f"audio_compression(bands={bands})")

        rows = scaling(config, program, list(SCALING_BANDS), list(SCALING_INSTANCES), "hts", progress=None)
        outcome = "taken: frequency domain" if taken else "not taken: time domain"
        run.plot(f"scaling_{'taken' if taken else 'not_taken'}.png",
                 lambda path: plot_scaling(rows, path, f"Audio compression ({outcome}), hts"))
        return scaling_markdown(rows)
    return make


@functools.cache
def _gap_study() -> dict:
    # One study gives three tables: measured once a process.
    from .gap_study import run_study
    return run_study(progress=sys.stderr)


def _gap(part: int) -> Callable[[Run], str]:
    def make(run: Run) -> str:
        from .gap_study import markdown_tables, plot_study
        result = _gap_study()
        run.plot("gap_study.png", lambda path: plot_study(result, path))
        return markdown_tables(result["summary"], result["benchmarks"], result["generated"])[part]
    return make


@functools.cache
def _throughput_model(preset: str, tasks: int) -> tuple[dict, dict]:
    from .throughput import assembled_programs, model_results
    config = load_config(preset)
    return model_results(config, assembled_programs(config, tasks))


def _throughput(part: int) -> Callable[[Run], str]:
    def make(run: Run) -> str:
        from .plots import plot_decode_times
        from .throughput import default_deep, report_tables
        results, _ = _throughput_model("default", 64)
        config = load_config("default")
        run.plot("throughput.png", lambda path: plot_decode_times(
            {key: (result.decodes, result.in_flight) for key, result in results.items()}, path,
            f"decodes on {config.source}"))
        return report_tables(results, DEFAULT_FMAX_MHZ, default_deep(config))[part]
    return make


def _throughput_rtl(run: Run) -> str:
    from .throughput import PROGRAMS, assembled_programs, default_deep, measure as measure_trace, model_results, \
        report_tables, rtl_outcomes
    config = load_config("default")
    programs = assembled_programs(config, 64)
    results, _ = model_results(config, programs)
    for kind, outcome in rtl_outcomes(config, programs, "python -m hts.flows.throughput").items():
        if not outcome.match:
            raise HTSError(f"throughput: the RTL's run of {kind} differs from the model's")
        results[kind, "RTL"] = measure_trace(outcome.trace)
    sides = ("model", "RTL")
    ordered = {key: results[key] for key in sorted(results, key=lambda key: (PROGRAMS.index(key[0]),
                                                                              sides.index(key[1])))}
    return report_tables(ordered, DEFAULT_FMAX_MHZ, default_deep(config))[0]


def _tasks_in_flight(run: Run) -> str:
    """A stream of 256 tasks of one class on the default and on inflight128: what 128 tags change."""
    from .plots import plot_decode_times
    from .throughput import PROGRAMS, default_deep, in_flight_limit
    grown, _ = _throughput_model("inflight128", 256)
    run.plot("throughput_inflight128.png", lambda path: plot_decode_times(
        {key: (result.decodes, result.in_flight) for key, result in grown.items()}, path,
        f"decodes on {load_config('inflight128').source}"))
    lines = ["| program | preset | cycles | decode stops at (tasks in flight) | then waits on (cycles) | burst tasks "
             "| steady /task | deep median | decode → dispatch median | max |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for kind in PROGRAMS:
        for preset in ("default", "inflight128"):
            results, models = _throughput_model(preset, 256)
            result, model = results[kind, "model"], models[kind]
            config = load_config(preset)
            lines.append(f"| {kind} | {preset} | {model.cycles:,} | {in_flight_limit(config)} "
                         f"| {_room_stall(model.stalls)} | {len(result.burst)} "
                         f"| {_decimal(result.steady_cycles_per_task)} "
                         f"| {_decimal(result.deep_median_interval(default_deep(config)))} "
                         f"| {_decimal(statistics.median(result.latencies))} | {max(result.latencies):,} |")
    return "\n".join(lines)


# Decode stalls that are not for room: the program's own fetch, and its end (every task decoded).
_NOT_ROOM = ("fetch", "drain")


def _room_stall(stalls: dict[str, int]) -> str:
    """The structure decode waited on most for room, with its cycles: "tracker full (3,071)"."""
    room = {reason: cycles for reason, cycles in stalls.items() if reason not in _NOT_ROOM}
    if not room:
        return "-"
    reason, cycles = max(room.items(), key=lambda item: item[1])
    return f"{reason.replace('_', ' ')} ({cycles:,})"


def _decimal(value: float) -> str:
    """A figure with at most two decimals and thousands separators: 1,641 or 23.93."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _model_speed(run: Run) -> str:
    from .model_speed import measure as measure_speed
    lines = ["| audio compression, 32 bands, default | cycles | stepped cycles | fastest of 3 runs "
             "| simulated cycles/s | stepped cycles/s |",
             "|---|---:|---:|---:|---:|---:|"]
    for taken in (False, True):
        cycles, stepped, seconds = measure_speed(32, taken, 3, "default")
        lines.append(f"| branch {'taken' if taken else 'not taken'} | {cycles:,} | {stepped:,} | {seconds:.3f} s "
                     f"| {cycles / seconds:,.0f} | {stepped / seconds:,.0f} |")
    return "\n".join(lines)


def _timeline(run: Run) -> str:
    from hts import benchmarks
    from hts.assembler import assemble
    from hts.models.memory import initial_memory
    from hts.models.simulate import simulate
    from .plots import plot_timeline
    from .timeline import timeline
    config = load_config("default")
    program = assemble(benchmarks.source("audio_compression"), config, "audio_compression.s")
    result = simulate(config, [program], initial_memory(config), "hts")
    trace = timeline([event.as_dict() for event in result.trace.events], config, 1)
    run.plot("timeline_audio_compression.png",
             lambda path: plot_timeline(trace, path, f"audio_compression.json: {config.source}"))
    phases = [event["ph"] for event in trace["traceEvents"]]
    return ("| program | cycles | trace events | track names (metadata) | slices | instants |\n"
            "|---|---:|---:|---:|---:|---:|\n"
            f"| benchmarks/audio_compression.s, default | {result.cycles:,} | {len(phases)} | {phases.count('M')} "
            f"| {phases.count('X')} | {phases.count('i')} |")


# ---- the tables: RTL ---------------------------------------------------------------------------

def _levels(levels: dict | None) -> str:
    """The two deepest levels of the register inputs, and how many inputs each: "11: 10, 10: 705"."""
    histogram = (levels or {}).get("histogram", {})
    deepest = sorted(((int(depth), count) for depth, count in histogram.items() if count), reverse=True)[:2]
    return ", ".join(f"{depth}: {count:,}" for depth, count in deepest) or "-"


def _fmax(result: dict) -> str:
    return "not placed" if result.get("fmax_mhz") is None else f"{result['fmax_mhz']:g} MHz"


def _path(result: dict) -> str:
    path = result.get("critical_path")
    if not path:
        return "-"
    routing = f" ({path['routing_ns']:.2f} ns)" if path.get("routing_ns") is not None else ""
    return f"{path['delay_ns']:.2f} ns{routing}"


def synth_markdown(runs: Iterable[tuple[str, str, dict]]) -> str:
    """``hts synth --json`` results, one row per (block, configuration, result)."""
    lines = ["| block | configuration | LUT4 | CCU2C | DPR16X4 | LUT4 sites | FFs | DP16KD | DSP | Fmax "
             "| critical path (routing) | deepest register inputs (levels: inputs) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    from .synth import TARGETS
    for block, preset, result in runs:
        share = f"{result['lut_sites'] / TARGETS[result.get('target', 'ecp5')].lut_capacity:.0%}"
        lines.append(f"| `{block}` | {preset} | {result['luts']:,} | {result['carry_cells']:,} "
                     f"| {result['lut_rams']:,} | {result['lut_sites']:,} ({share}) | {result['ffs']:,} "
                     f"| {result['brams']} | {result['dsps']} "
                     f"| {_fmax(result)} | {_path(result)} | {_levels(result.get('logic_levels'))} |")
    return "\n".join(lines)


def _synth(runs: tuple[tuple[str, str], ...], levels_png: str | None = None) -> Callable[[Run], str]:
    """``hts synth --block B -c P --json`` for each (block, preset); the first run's logic
    levels drawn by block as ``levels_png``."""
    def make(run: Run) -> str:
        from .plots import plot_logic_levels
        from .synth import synthesize
        results = [(block, preset, synthesize(load_config(preset), block, progress=run.progress))
                   for block, preset in runs]
        block, preset, first = results[0]
        if levels_png and first.get("logic_levels"):
            run.plot(levels_png, lambda path: plot_logic_levels(
                first["logic_levels"]["by_block"], path,
                f"{block} on {first['config']}: register inputs by logic levels ({first['target']})"))
        return synth_markdown(results)
    return make


# Each block alone, every port registered: the units that miss a clock on their own.
BLOCK_CLOCKS = (("lists_and_dispatch", "default"), ("decode", "default"), ("decode", "tiny"), ("tlb", "default"),
                ("ready_lists", "default"), ("task_queue", "default"), ("memory_tracker", "default"),
                ("dispatch", "default"), ("cdb", "default"), ("branch_unit", "default"), ("gpr", "default"),
                ("copy_back", "default"), ("wakeup", "default"), ("loop_stack", "default"),
                ("enqueue", "default"), ("asr", "default"))


def block_clocks_markdown(runs: Iterable[tuple[str, str, dict]]) -> str:
    """One row per block synthesized alone: its size and its own clock."""
    lines = ["| block | configuration | LUT4 sites | FFs | Fmax | critical path (routing) |",
             "|---|---|---:|---:|---:|---:|"]
    lines += [f"| `{block}` | {preset} | {result['lut_sites']:,} | {result['ffs']:,} | {_fmax(result)} "
              f"| {_path(result)} |" for block, preset, result in runs]
    return "\n".join(lines)


def _block_clocks(run: Run) -> str:
    from .synth import synthesize
    return block_clocks_markdown((block, preset, synthesize(load_config(preset), block, progress=run.progress))
                                 for block, preset in BLOCK_CLOCKS)


def cosim_speed_markdown(rows: Iterable[tuple[str, float, float, bool]]) -> str:
    lines = ["| configuration | cocotb + Verilator | the same build, C++ replay | ratio | traces match |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {preset} | {cocotb:,.0f} cycles/s | {cpp:,.0f} cycles/s | {cocotb / cpp:.2f} "
              f"| {'yes' if matched else 'NO'} |" for preset, cocotb, cpp, matched in rows]
    return "\n".join(lines)


def _cosim_speed(run: Run) -> str:
    from hts.cosim.speed import speeds
    return cosim_speed_markdown((preset, *speeds(load_config(preset), 5)) for preset in ("default", "tiny"))


def _tables(*tables: Table) -> dict[str, Table]:
    return {table.name: table for table in tables}


#: Every table the page may mark, by name.
TABLES = _tables(
    Table("bench-default", "hts bench --plot docs/img/benchmarks_default.png", _bench("default")),
    Table("bench-large", "hts bench -c large --plot docs/img/benchmarks_large.png", _bench("large")),
    Table("bench-tiny", "hts bench -c tiny --plot docs/img/benchmarks_tiny.png", _bench("tiny")),
    Table("cycle-budget", "python -m hts.flows.cycle_budget", _cycle_budget),
    Table("scaling-not-taken", "hts scaling --plot docs/img/scaling_not_taken.png", _scaling(taken=False)),
    Table("scaling-taken", "hts scaling --taken --plot docs/img/scaling_taken.png", _scaling(taken=True)),
    Table("gap-layers", "python -m hts.flows.gap_study --plot docs/img/gap_study.png", _gap(0)),
    Table("gap-benchmarks", "python -m hts.flows.gap_study --plot docs/img/gap_study.png", _gap(1)),
    Table("gap-generated", "python -m hts.flows.gap_study --plot docs/img/gap_study.png", _gap(2)),
    Table("throughput-cycles", f"python -m hts.flows.throughput --no-rtl --fmax-mhz {DEFAULT_FMAX_MHZ:g} "
                               "--plot docs/img/throughput.png", _throughput(0)),
    Table("throughput-ns", f"python -m hts.flows.throughput --no-rtl --fmax-mhz {DEFAULT_FMAX_MHZ:g}",
          _throughput(1)),
    Table("throughput-rtl", f"python -m hts.flows.throughput --fmax-mhz {DEFAULT_FMAX_MHZ:g}", _throughput_rtl,
          expensive=True, duration="a few minutes: a Verilator build"),
    Table("tasks-in-flight", "python -m hts.flows.throughput -c default|inflight128 --no-rtl -n 256 "
                             "--plot docs/img/throughput_inflight128.png",
          _tasks_in_flight),
    Table("model-speed", "python -m hts.flows.model_speed", _model_speed, timed=True),
    Table("timeline", "hts run benchmarks/audio_compression.s --timeline audio_compression.json "
                      "--timeline-png docs/img/timeline_audio_compression.png", _timeline),
    Table("synth-default", "hts synth --json", _synth((("hts", "default"),)), expensive=True,
          duration="about 15 minutes"),
    Table("synth-tiny", "hts synth -c tiny --json --plot docs/img/logic_levels_tiny.png",
          _synth((("hts", "tiny"),), "logic_levels_tiny.png"), expensive=True, duration="about 5 minutes"),
    Table("synth-blocks", "hts synth --block B [-c tiny] --json", _block_clocks, expensive=True,
          duration="about 10 minutes"),
    Table("synth-axi", "hts synth --block axi_hts|control [-c tiny] --json",
          _synth((("axi_hts", "default"), ("axi_hts", "tiny"), ("control", "default"))), expensive=True,
          duration="about 20 minutes"),
    Table("cosim-speed", "python -m hts.cosim.speed -c default|tiny", _cosim_speed, expensive=True, timed=True,
          duration="minutes; more for two Verilator builds"),
)


# ---- the command -------------------------------------------------------------------------------

def print_list(path: Path, tables: dict[str, Table]):
    """Every table: its kind, the date the page has it from (if it has it), its command."""
    try:
        text, blocks = read_page(path)
        on_page = block_contents(text, blocks)
    except HTSError:
        on_page = {}
    width = max(map(len, tables))
    for name, table in tables.items():
        date = (measured_date(on_page[name]) or "undated") if name in on_page else "not on the page"
        print(f"{name:<{width}}  {table.kind:<16}  {date:<15}  {table.command}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hts.flows.results", description=__doc__.split("\n\n")[0],
        epilog="A plain run rewrites every cheap table of the page; expensive ones (synthesis, co-simulation) "
               "only when named. Progress goes to stderr.")
    parser.add_argument("page", nargs="?", type=Path, default=DEFAULT_PAGE,
                        help=f"the results page (default {DEFAULT_PAGE})")
    parser.add_argument("--list", action="store_true", help="list the tables: kind, date on the page, command")
    parser.add_argument("--table", metavar="NAME", action="append",
                        help="measure and rewrite this table only (repeatable; expensive ones must be named)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing: measure the cheap, untimed tables (or those named) and exit 1 if "
                             "the page differs from them, the dates aside")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.list:
            print_list(args.page, TABLES)
            return 0
        if args.check:
            stale = stale_tables(args.page, args.table)
            for name in stale:
                print(f"{display_path(args.page)}: table {name!r} differs from what "
                      f"`{TABLES[name].command}` gives now", file=sys.stderr)
            return 1 if stale else 0
        names = regenerate(args.page, args.table)
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"{display_path(args.page)}: rewrote {', '.join(names) or 'no table'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
