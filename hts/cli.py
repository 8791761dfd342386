"""The ``hts`` command: one entry point, a subcommand per job.

Errors caused by the user's input (:class:`~hts.errors.HTSError`) are printed as
``file:line:col: message`` on stderr with exit status 1; nothing else is caught.
"""

import argparse
import sys
from importlib import resources
from pathlib import Path

from . import __version__
from .config import DEFAULT_STEP_LIMIT, PRESETS, describe, load_config
from .errors import HTSError
from .fanout import add_arguments as add_fanout_arguments

MAX_RANDOM_PROGRAMS = 10_000      # hts explore --random
_CONFIG_HELP = f"system configuration: a preset ({', '.join(PRESETS)}) or a YAML file (default: default)"


def _add_config(parser: argparse.ArgumentParser):
    parser.add_argument("-c", "--config", metavar="CFG", default="default", help=_CONFIG_HELP)


def _add_rtl_accelerator(parser: argparse.ArgumentParser):
    parser.add_argument("--rtl-accelerator", metavar="CLASS", action="append", default=[],
                        help="the class's RTL core stands in for its Python accelerator, timed exactly by the "
                             "model (repeatable; cores exist for vector_add classes: hts.hdl.hls; a build of its own)")


def _system(spec):
    """The configuration ``spec`` names, with every accelerator's function checked to exist."""
    from .models.accelerator import AcceleratorFunctions
    config = load_config(spec)
    AcceleratorFunctions(config)
    return config


def cmd_asm(args) -> int:
    from .assembler import assemble_file, write_image
    from .output import check_outputs
    config = _system(args.config)
    program = assemble_file(args.program, config)
    output = Path(args.output) if args.output else Path(args.program).with_suffix(".hex")
    check_outputs([output], [args.program])
    write_image(output, program)
    print(f"{args.program}: {len(program)} instructions -> {output}")
    return 0


def cmd_disasm(args) -> int:
    from .assembler import check_image, disassemble, read_image
    config = _system(args.config)
    print("\n".join(disassemble(check_image(read_image(args.image), config), config)))
    return 0


def cmd_config(args) -> int:
    config = _system(args.config)
    print(f"configuration {config.source}")
    print(f"\n{'accelerator':<16}{'id':>5}{'count':>7}{'latency':>10}")
    for acc in config.accelerators:
        print(f"{acc.name:<16}{acc.id:>#5x}{acc.count:>7}{acc.latency:>10}")
    print()
    for key, value, doc in describe(config):
        print(f"{key:<24}{str(value).lower() if isinstance(value, bool) else value:>8}  {doc}")
    return 0


def cmd_tools(args) -> int:
    import amaranth
    from .toolchain import verilator_root, verilator_version
    print(f"hts         {__version__}")
    print(f"amaranth    {amaranth.__version__}")
    print(f"verilator   {verilator_version()} (VERILATOR_ROOT={verilator_root()})")
    return 0


def cmd_verilog(args) -> int:
    from .synth import default_block, module_name, write_verilog
    config = _system(args.config)
    block = args.block or default_block()
    if args.soc_top and block != "axi_hts":
        raise HTSError(f"--soc-top wraps the block axi_hts, not {block!r} (add --block axi_hts)")
    warnings = write_verilog(config, block, args.output)
    for warning in warnings:
        print(warning, file=sys.stderr)
    lint = f"{len(warnings)} Verilator warning(s)" if warnings else "lints clean"
    print(f"{block} on {config.source}: module {module_name(block)} -> {args.output} ({lint})")
    if args.soc_top:
        from .soc_top import SOC_TOP, write_soc_top
        write_soc_top(args.output, args.soc_top)
        print(f"SoC top: module {SOC_TOP} (AXI4-Lite s_axi_control, aclk, aresetn, interrupt) -> {args.soc_top}")
    return 0


def _print_synth_table(result: dict):
    print(f"{result['block']} (module {result['module']}) on {result['config']}: "
          f"{result['device']} ({result['target']}), out of context")
    rows = [("LUTs", "LUT4", result["luts"], ""),
            ("carry", "CCU2C", result["carry_cells"], "2 LUT4 sites each"),
            ("LUT RAM", "DPR16X4", result["lut_rams"], f"6 LUT4 sites each: {result['lut_sites']} LUT4 sites in all"),
            ("FFs", "TRELLIS_FF", result["ffs"], ""),
            ("block RAM", "DP16KD", result["brams"], ""),
            ("DSPs", "MULT18X18D", result["dsps"], ""),
            ("Fmax", "MHz", "-" if result["fmax_mhz"] is None else f"{result['fmax_mhz']:.1f}",
             f"ports registered; clock constraint {result['fmax_constraint_mhz']:g} MHz" if result["placed"]
             else f"not placed: the logic does not fit the {result['device']}" if not result["fits"]
             else "not placed: --no-place")]
    print(f"{'resource':<12}{'cells':<12}{'count':>8}")
    for name, cells, count, note in rows:
        print(f"{name:<12}{cells:<12}{count:>8}  {note}".rstrip())
    if result["placed"]:
        print("placed: " + ", ".join(f"{cell} {use['used']}/{use['available']}"
                                     for cell, use in result["utilization"].items()) + " (port registers included)")
    levels = result.get("logic_levels")
    if levels:
        print("register inputs by logic levels in front of them: "
              + ", ".join(f"{depth}: {count}" for depth, count in levels["histogram"].items()))
        print("deepest by block: " + ", ".join(f"{block} {max(histogram)}"
                                               for block, histogram in levels["by_block"].items()))
        deep = levels["deep_routes"]
        print(f"routes of the inputs at {deep['from_levels']} levels or more, launching block → capturing block: "
              + ", ".join(f"{route} {count}" for route, count in list(deep["routes"].items())[:8]))
    path = result.get("critical_path")
    if path:
        print(f"critical path: {path['delay_ns']:.1f} ns ({path['routing_ns']:.1f} routing, {path['logic_ns']:.1f} "
              f"logic, {path['logic_steps']} logic cells, each half of a carry cell counted) "
              f"from {path['cells'][0]} to {path['cells'][-1]}")


def cmd_synth(args) -> int:
    import json
    from .output import check_plot_directory
    from .plots import plot_logic_levels
    from .synth import default_block, synthesize
    config = _system(args.config)
    block = args.block or default_block()
    if args.plot:
        check_plot_directory(args.plot)
    result = synthesize(config, block, args.target, args.freq, place=not args.no_place)
    if args.plot and "logic_levels" in result:
        plot_logic_levels(result["logic_levels"]["by_block"], args.plot,
                          f"{block} on {config.source}: register inputs by logic levels ({result['target']})")
        result["plot"] = args.plot
    if args.json:
        print(json.dumps(result))
    else:
        _print_synth_table(result)
        if "plot" in result:
            print(f"plot: {args.plot}")
    return 0


def _print_prove_table(results):
    print(f"{'config':<8}{'block':<21}{'properties':<12}{'mode':<7}{'depth':>6}  {'result':<8}{'seconds':>8}  covers")
    for r in results:
        print(f"{r.config:<8}{r.block:<21}{r.group:<12}{r.mode:<7}{r.depth:>6}  {r.result:<8}{r.seconds:>8.1f}  "
              f"{r.covers_reached}/{r.covers_total}")
    for r in results:
        if not r.ok:
            where = f"; counterexample {r.trace}" if r.trace else ""
            print(f"{r.config} {r.block} {r.group}: {r.result}{where}", file=sys.stderr)
            for line in r.failed or r.log_tail:
                print(f"  {line}", file=sys.stderr)


def cmd_prove(args) -> int:
    import json
    from .prove import CONFIGS, BLOCKS, prove
    configs = args.config or list(CONFIGS)
    results = prove(configs, args.block or list(BLOCKS), timeout_s=args.timeout,
                    trace_dir=Path(args.traces) if args.traces else None)
    if args.json:
        print(json.dumps([r.as_dict() for r in results]))
    else:
        _print_prove_table(results)
    return 0 if all(r.ok for r in results) else 1


def _load_programs(paths: list[str], config):
    from .assembler import load_program
    return [load_program(path, config) for path in paths]


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _random_program_count(text: str) -> int:
    # Every program is held in memory and is a point of its own: a bound keeps a typo from
    # asking for unbounded memory.
    value = _nonnegative_int(text)
    if value > MAX_RANDOM_PROGRAMS:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_RANDOM_PROGRAMS}, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected integers >= 1")
    return values


def cmd_run(args) -> int:
    import json
    from .models.memory import initial_memory
    from .models.coverage import StateCoverage, coverage_table, model_coverage
    from .models.hts import SCHEDULERS as CYCLE_SCHEDULERS
    from .models.report import run_summary
    from .models.simulate import simulate
    from .output import atomic_path
    config = _system(args.config)
    programs = _load_programs(args.programs, config)
    if args.coverage and args.scheduler not in CYCLE_SCHEDULERS:
        raise HTSError(f"--coverage needs a cycle model ({', '.join(CYCLE_SCHEDULERS)}), "
                       f"not --scheduler {args.scheduler}")
    if args.timeline_png and not args.timeline:
        raise HTSError("--timeline-png draws the timeline: give --timeline FILE.json too")
    if args.timeline and args.scheduler not in CYCLE_SCHEDULERS:
        raise HTSError(f"--timeline needs a cycle model's trace ({', '.join(CYCLE_SCHEDULERS)}), "
                       f"not --scheduler {args.scheduler}")
    state = StateCoverage() if args.coverage else None
    result = simulate(config, programs, initial_memory(config, args.seed), args.scheduler,
                      max_steps=args.max_steps, observer=state.observe if state else None)
    summary = {"programs": args.programs, "config": config.source, "seed": args.seed, **run_summary(result)}
    coverage = model_coverage(result.trace, state) if state else None
    if coverage is not None:
        summary["coverage"] = coverage.as_dict()
    if args.trace:
        with atomic_path(args.trace) as tmp, open(tmp, "w") as out:
            result.trace.write_jsonl(out)
    if args.timeline:
        from .timeline import write_timeline
        write_timeline(args.timeline, [event.as_dict() for event in result.trace.events], config, len(programs),
                       plot=args.timeline_png)
    if args.json:
        print(json.dumps(summary))
        return _report_faults(result.faults)
    print(f"programs     {' '.join(args.programs)}")
    print(f"config       {config.source}    scheduler {args.scheduler}    seed {args.seed}")
    print(f"cycles       {result.cycles}")
    print(f"tasks        {result.tasks}")
    print(f"memory       {summary['memory_digest']}  (digest of home memory)")
    print("utilization  " + "  ".join(f"{name} {value:.1%}" for name, value in result.utilization.items()))
    if result.stalls:
        print("stalls       " + "  ".join(f"{reason} {count}" for reason, count in sorted(result.stalls.items())))
        print("             (cycles a process decoded nothing, by reason, summed over processes)")
    if coverage is not None:
        print(coverage_table(coverage))
    return _report_faults(result.faults)


def _report_faults(faults) -> int:
    """Each fault as an error at its source line; the exit status (1 if any)."""
    for fault in faults:
        print(fault.error(), file=sys.stderr)
    return 1 if faults else 0


def _compare_inputs(args, config):
    """(system, programs, timing, task graph, label of a task by pid and pc, class of each
    task or None, extra dependences).

    A single .graphml file is a task graph, run as the program :func:`graph_program`
    makes of it on ``--instances`` instances of each of its classes; anything else is
    programs, whose task graph (None here) :func:`cmd_compare` makes once it knows they
    run a task.
    """
    from .errors import Location
    from .models.graphs import graph_program, read_graphml
    graphs = [path for path in args.programs if Path(path).suffix.lower() == ".graphml"]
    if graphs and len(args.programs) > 1:
        raise HTSError("a task graph is compared on its own, not with other programs or graphs", Location(graphs[0]))
    if graphs:
        graph = read_graphml(graphs[0])
        made = graph_program(graph, {c: args.instances for c in graph.classes}, config)
        return (made.config, [made.program], made.timing, graph, lambda pid, pc: made.task_of_pc[pc],
                made.accel_class, sorted(made.extra_dependences))
    return config, _load_programs(args.programs, config), None, None, lambda pid, pc: f"{pid}.{pc}", None, []


# Added dependences the text table names before "and N more".
_EXTRA_SHOWN = 10


def _compare_note(row: dict) -> str:
    from .models.report import LOWER_BOUND
    if "memory_matches_sequential" in row:
        check = "matches sequential" if row["memory_matches_sequential"] else "DIFFERS from sequential"
        return f"{row['memory_digest']} {check}"
    if row["proven_optimal"] is True:
        return "offline: optimal (proven)"
    if row["proven_optimal"] is False:
        return "offline: best found in the time limit (not proven optimal)"
    return "no schedule is shorter" if row["scheduler"] == LOWER_BOUND else "offline schedule of the task graph"


def cmd_compare(args) -> int:
    import json
    from .models.graphs import program_graph
    from .models.memory import initial_memory
    from .models.report import compare_rows, compare_runs, reference_rows, reference_schedules
    from .models.schedulers.cycle_model import naive_schedule, trace_schedule
    from .models.schedulers.machine import machine_of_config
    from .output import all_or_none, check_outputs
    from .plots import plot_compare, plot_gantt
    config, programs, timing, graph, label, classes, extra = _compare_inputs(args, _system(args.config))
    runs = compare_runs(config, programs, args.seed, timing)
    faults = runs["hts"].faults
    if faults:
        # Every scheduler stops the process at the same instruction; one report is enough.
        raise faults[0].error()
    rows = compare_rows(runs)
    if graph is None and runs["sequential"].tasks:
        # The path the programs take from the seeded memory.
        graph = program_graph(programs, config, initial_memory(config, args.seed))
    machine = machine_of_config(config)
    offline = {} if graph is None else reference_schedules(graph, machine, args.time_limit, args.optimal_max_tasks)
    reference = [] if graph is None else reference_rows(graph, machine, offline, runs["naive"].cycles)
    plot = Path(args.plot) if args.plot else Path(f"{Path(args.programs[0]).stem}_compare.png")
    title = f"{' '.join(Path(p).name for p in args.programs)} on {config.source}"
    schedules = {name: trace_schedule(runs[name], label) for name in ("hts", "hts-nospec", "runtime")}
    if graph is not None:
        schedules["naive"] = naive_schedule(runs["naive"], graph, config.timing.interrupt_latency, classes)
    schedules.update(offline)
    gantt = {name: str(plot.with_name(f"{plot.stem}_gantt_{name}.png")) for name in schedules}
    check_outputs([plot, *gantt.values()], _named_files(args, _INPUT_ARGS))
    with all_or_none():
        plot_compare(rows, plot, title)
        for name, schedule in schedules.items():
            plot_gantt(schedule.slots, schedule.makespan, gantt[name], f"{title}: {name}")
    if args.json:
        tasks, edges = (0, 0) if graph is None else (len(graph), len(graph.edges))
        print(json.dumps({"programs": args.programs, "config": config.source, "plot": str(plot), "schedulers": rows,
                          "graph": {"tasks": tasks, "edges": edges, "extra_dependences": [list(e) for e in extra]},
                          "reference": reference, "gantt": gantt}))
    else:
        print(title)
        print(f"{'scheduler':<12}{'cycles':>10}{'vs naive':>10}{'tasks':>7}  memory")
        for row in rows + reference:
            print(f"{row['scheduler']:<12}{row['cycles']:>10}{row['speedup_vs_naive']:>9.2f}x{row['tasks']:>7}  "
                  f"{_compare_note(row)}")
        if extra:
            shown = ", ".join(f"{u}->{v}" for u, v in extra[:_EXTRA_SHOWN])
            more = f" and {len(extra) - _EXTRA_SHOWN} more (--json lists them all)" if len(extra) > _EXTRA_SHOWN else ""
            print(f"note: the HTS program orders {len(extra)} task pair(s) the graph leaves free (one input "
                  f"region per instruction): {shown}{more}")
        print(f"plot: {plot}")
        print(f"gantt charts: {', '.join(gantt.values())}")
    return 0 if all(row["memory_matches_sequential"] for row in rows) else 1


def _to_stderr(message: str):
    """Progress lines: on stderr, so that --json output stays one object on stdout."""
    print(message, file=sys.stderr, flush=True)


def _print_outcome_failure(outcome):
    print(f"MISMATCH {outcome.name}: {outcome.difference}", file=sys.stderr)
    print(f"  reproduce: {outcome.reproduce}", file=sys.stderr)


def _write_events(path: str, events: list[dict]):
    """A trace as JSON lines, the format of ``hts run --trace``."""
    import json
    from .output import atomic_path
    with atomic_path(path) as tmp, open(tmp, "w") as out:
        out.writelines(json.dumps(event) + "\n" for event in events)


def cmd_cosim(args) -> int:
    import json
    from .cosim.run import cosimulate
    from .cosim.scoreboard import Job, RunSpec
    config = _system(args.config)
    programs = tuple(_load_programs(args.programs, config))
    rtl_classes = tuple(args.rtl_accelerator)
    command = " ".join(["hts cosim", *args.programs, "-c", args.config, "--seed", str(args.seed),
                        *(["--axi"] if args.axi else []), *_rtl_flags(rtl_classes)])
    spec = RunSpec(name=" ".join(args.programs), programs=programs, seed=args.seed, reproduce=command)
    keep_trace = args.trace is not None or args.timeline is not None
    job = Job(config, (spec,), keep_trace=keep_trace, axi=args.axi, rtl_classes=rtl_classes)
    [outcome] = cosimulate(job, waves=args.waves, progress=_to_stderr)
    if args.trace:
        _write_events(args.trace, outcome.trace)
    if args.timeline:
        from .timeline import write_timeline
        write_timeline(args.timeline, outcome.trace, config, len(programs))
    summary = {"programs": args.programs, "config": config.source, "seed": args.seed, "cycles": outcome.cycles,
               "model_cycles": outcome.model_cycles, "match": outcome.match, "difference": outcome.difference,
               "axi": args.axi, "rtl_accelerators": list(rtl_classes), "memory_digest": outcome.memory_digest,
               "sim_cycles_per_s": round(outcome.sim_cycles_per_s),
               "wall_s": round(outcome.wall_s, 3), "python_wakes": outcome.wakes,
               "faults": [dict(zip(("cycle", "pid", "pc", "cause"), fault)) for fault in outcome.faults]}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"programs     {' '.join(args.programs)}")
        print(f"config       {config.source}    seed {args.seed}")
        print(f"cycles       {outcome.cycles} (model: {outcome.model_cycles})")
        print(f"traces       {'match, cycle for cycle' if outcome.match else 'DIFFER'}")
        if args.axi:
            print(f"control      AXI4-Lite (cocotbext-axi): loaded, started, ended on the interrupt; "
                  f"status registers {'as the model' if outcome.match else 'checked only if all else matched'}")
        print(f"memory       {outcome.memory_digest}  (digest of home memory)")
        print(f"speed        {outcome.sim_cycles_per_s:,.0f} simulated cycles/s "
              f"({outcome.wakes} of the cycles woke Python)")
    if not outcome.match:
        _print_outcome_failure(outcome)
        return 1
    # The CPU port's faults matched the model's: report each at its source line.
    for cycle, pid, pc, cause in outcome.faults:
        print(f"{programs[pid].location(pc)}: process {pid} faulted at pc {pc} in cycle {cycle}, cause {cause} "
              f"(on the CPU port, as in the model; `hts run` gives the region)", file=sys.stderr)
    return 1 if outcome.faults else 0


def cmd_explore(args) -> int:
    import csv
    import io
    import json
    from .explore import COLUMNS, SYNTH_COLUMNS, SweepSpec, cheapest_within, explore, load_sweep, parse_key, \
        pareto_front, points, random_programs
    from .output import atomic_path
    from .plots import plot_explore
    base = _system(args.config)
    spec = load_sweep(args.sweep) if args.sweep else SweepSpec({}, {})
    keys = {**spec.keys, **dict(parse_key(text) for text in args.key or [])}
    programs = {**spec.programs, **{path: _read_text(path) for path in args.programs},
                **random_programs(base, args.random)}
    if not keys or not programs:
        raise HTSError("hts explore needs at least one --key (or a --sweep file with keys) and one program "
                       "(or --random N)")
    result = explore(points(base, SweepSpec(keys, programs), args.synth), args.scheduler, args.workers,
                     progress=_to_stderr)
    columns = ["point", *COLUMNS, *(SYNTH_COLUMNS if args.synth else ())]
    rows = [{"point": o.point.label(), **dict(o.point.values), **o.row} for o in result.outcomes if o.row]
    failed = [o for o in result.outcomes if o.error]
    widths = {name: max([len(name), *(len(str(row.get(name, ""))) for row in rows)]) + 2 for name in columns}
    print(f"{'point':<{widths['point']}}" + "".join(f"{name:>{widths[name]}}" for name in columns[1:]))
    for row in rows:
        print(f"{row['point']:<{widths['point']}}"
              + "".join(f"{str(row.get(name, '')):>{widths[name]}}" for name in columns[1:]))
    for outcome in failed:
        print(f"FAILED {outcome.point.label()} {outcome.point.program}: {outcome.error}", file=sys.stderr)
    print(f"reused {result.reused} of {len(result.outcomes)} points from the cache "
          f"({result.jobs_reused} of {result.jobs} jobs)")
    for program in programs:
        best = cheapest_within(result.outcomes, args.within, program)
        if best:
            cost = f"{best.row['lut_sites']} LUT4 sites" if args.synth else "smallest swept values (no synthesis)"
            print(f"{program}: cheapest within {args.within:g}% of the best cycles: {best.point.label()} "
                  f"({best.row['cycles']} cycles; {cost})")
    header = ["point", *keys, *columns[1:]]
    if args.csv:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        with atomic_path(args.csv) as tmp:
            tmp.write_text(buffer.getvalue())
    if args.json:
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps({"keys": keys, "rows": rows,
                                       "failed": [{"point": o.point.label(), "program": o.point.program,
                                                   "error": o.error} for o in failed]}, indent=1))
    if args.plot and rows:
        front = {(o.point.label(), program) for program in programs for o in pareto_front(result.outcomes, program)}
        plot_explore(rows, front, args.plot, f"hts explore on {base.source}")
    return 1 if failed else 0


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise HTSError(f"{path}: {error.strerror}") from None


def _rtl_flags(rtl_classes) -> list[str]:
    return [flag for name in rtl_classes for flag in ("--rtl-accelerator", name)]


def cmd_fuzz(args) -> int:
    import json
    from .cosim.fuzz import FuzzBatch, run_batch
    from .fanout import fan_out
    from .models.coverage import Coverage, coverage_table
    from .output import atomic_path
    batches = [FuzzBatch(args.system, first, min(args.batch, args.first + args.seeds - first), args.coverage,
                         args.axi, tuple(args.rtl_accelerator))
               for first in range(args.first, args.first + args.seeds, args.batch)]
    outcomes, errors, coverage = {}, [], Coverage()
    for batch, result, error in fan_out(run_batch, batches, args.scheduler, args.workers):
        if error:
            errors.append(f"seeds {batch.first}..{batch.first + batch.count - 1}: {error}")
            continue
        for seed, outcome in enumerate(result, start=batch.first):
            outcomes[seed] = outcome
            if outcome.coverage is not None:
                coverage.merge(outcome.coverage)
        failing = sum(not outcome.match for outcome in outcomes.values())
        cycles = sum(outcome.cycles or 0 for outcome in result)
        _to_stderr(f"[fuzz] {len(outcomes)}/{args.seeds} seeds on system {args.system}, {failing} failing "
                   f"({cycles:,} cycles in the batch from seed {batch.first})")
    failures = [outcomes[seed] for seed in sorted(outcomes) if not outcomes[seed].match]
    for outcome in failures:
        _print_outcome_failure(outcome)
    for error in errors:
        print(f"FAILED to run {error}", file=sys.stderr)
    if args.json:
        rows = [{"seed": seed, "match": o.match, "cycles": o.cycles, "model_cycles": o.model_cycles,
                 "memory_digest": o.memory_digest, "faults": [list(fault) for fault in o.faults]}
                for seed, o in sorted(outcomes.items())]
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(rows))
    if args.coverage:
        print(coverage_table(coverage))
    faulted = sum(bool(outcome.faults) for outcome in outcomes.values())
    print(f"{len(outcomes) - len(failures)} of {args.seeds} random programs match the model "
          f"(system {args.system}, seeds {args.first}..{args.first + args.seeds - 1}); "
          f"{faulted} of them faulted a process")
    return 1 if failures or errors else 0


def cmd_scaling(args) -> int:
    import json
    from .assembler import assemble
    from .benchmarks import audio_compression
    from .models.report import scaling
    from .plots import plot_scaling
    config = _system(args.config)
    outcome = "taken: frequency domain" if args.taken else "not taken: time domain"

    def program(bands, system):
        return assemble(audio_compression(bands, args.taken), system, f"audio_compression(bands={bands})")

    print(f"audio compression, branch {outcome}, scheduler {args.scheduler}, on {config.source}", file=sys.stderr)
    rows = scaling(config, program, args.bands, args.instances, args.scheduler)
    plot = Path(args.plot)
    plot_scaling(rows, plot, f"Audio compression ({outcome}), {args.scheduler}")
    if args.json:
        print(json.dumps({"config": config.source, "taken": args.taken, "plot": str(plot), "rows": rows}))
        return 0
    print(f"{'bands':>6}" + "".join(f"{f'{n} inst.':>12}" for n in args.instances))
    for bands in args.bands:
        cycles = {row["instances"]: row["cycles"] for row in rows if row["bands"] == bands}
        print(f"{bands:>6}" + "".join(f"{cycles[n]:>12}" for n in args.instances))
    print(f"plot: {plot}")
    return 0


def cmd_bench(args) -> int:
    """Every benchmark on every scheduler: the paper's Figures 7-9 as a table and a chart."""
    import json
    from .bench import bench, bench_cases
    from .plots import plot_benchmarks
    config = _system(args.config)
    table, errors = bench(bench_cases(config, args.seed), args.scheduler, args.workers, progress=_to_stderr)
    for error in errors:
        print(f"FAILED to run {error}", file=sys.stderr)
    plot_benchmarks(table, args.plot, f"benchmarks on {config.source}")
    if args.json:
        print(json.dumps({"config": config.source, "plot": str(args.plot), "rows": table, "errors": errors}))
    else:
        print("| benchmark | naive | runtime | hts-nospec | hts | naive/hts | memory = sequential |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for row in table:
            print(f"| {row['benchmark']} | {row['naive']} | {row['runtime']} | {row['hts-nospec']} | {row['hts']} "
                  f"| {row['naive_over_hts']:.2f} | {'yes' if row['memory_matches_sequential'] else 'NO'} |")
        print(f"plot: {args.plot}")
    return 0 if not errors and all(row["memory_matches_sequential"] for row in table) else 1


def cmd_mutate(args) -> int:
    """Every catalogued RTL mutant against the verification stack: the kill matrix."""
    import json
    from .hdl.mutation import CATALOGUE
    from .mutate import CHECKS, kill_matrix
    from .output import all_or_none, atomic_path, check_outputs
    from .plots import plot_kill_matrix
    if args.list:
        for mutant in CATALOGUE.values():
            print(f"{mutant.name:32s} {mutant.block:20s} {mutant.bug}")
        return 0
    config = _system(args.config)
    tests = Path(args.tests) if args.tests else Path("tests")
    if not (tests / "hdl").is_dir():
        if args.tests:
            raise HTSError(f"--tests {args.tests}: no hdl/ folder of block tests there")
        _to_stderr("[mutate] no tests/ folder here: the block and system checks are n/a (run from a clone)")
        tests = None
    check_outputs([args.json, args.plot], [])
    checks = args.check or list(CHECKS)
    rows = kill_matrix(config, args.mutant or list(CATALOGUE), checks, tests.resolve() if tests else None,
                       args.fuzz_seeds, args.every_check, _to_stderr)
    with all_or_none():
        if args.plot:
            plot_kill_matrix(rows, checks, args.plot, f"RTL mutants on {config.source}")
        if args.json:
            with atomic_path(args.json) as tmp:
                Path(tmp).write_text(json.dumps({"config": config.source, "checks": checks, "rows": rows}, indent=1))
    print(f"| mutant | block | {' | '.join(checks)} | killed |")
    print(f"|---|---|{'---|' * len(checks)}---|")
    for row in rows:
        cells = [row["verdicts"][check]["status"] for check in checks]
        print(f"| {row['name']} | {row['block']} | {' | '.join(cells)} | {'yes' if row['killed'] else 'NO'} |")
    killed = sum(row["killed"] for row in rows)
    print(f"{killed} of {len(rows)} mutants killed")
    return 0 if killed == len(rows) else 1


def cmd_demo(args) -> int:
    """The audio compression of the paper on every scheduler, then the assembler round trip."""
    from .assembler import assemble, disassemble
    config = _system(args.config)
    audio = resources.files("hts.benchmarks").joinpath("audio_compression.s")
    print("== hts compare benchmarks/audio_compression.s (Algorithm 1 of the HTS paper, 8 bands)")
    status = cmd_compare(argparse.Namespace(config=args.config, programs=[str(audio)], seed=0, plot=args.plot,
                                            json=False, instances=2, time_limit=5.0, optimal_max_tasks=40))
    examples = resources.files("hts.examples")
    print("\n== the paper's branch listing, assembled and disassembled")
    program = assemble(examples.joinpath("paper_branch.s").read_text(), config, "examples/paper_branch.s")
    for word, line in zip(program.words, disassemble(program, config)):
        print(f"  {word:032x}  {line}")
    try:
        assemble(examples.joinpath("paper_branch_malformed.s").read_text(), config,
                 "examples/paper_branch_malformed.s")
    except HTSError as err:
        print(f"== the listing as the paper printed it is rejected, as it must be:\n  {err}")
    else:
        raise AssertionError("the malformed listing assembled")
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hts",
        description="HTS toolkit: assemble task programs for the hardware task scheduler, run them "
                    "on reference models and RTL, generate and synthesize Verilog.")
    parser.add_argument("--version", action="version", version=f"hts {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("asm", help="assemble a task program into a .hex or .bin image",
                       description="Assemble PROG (assembly source) into a program image. The output format "
                                   "follows the suffix: .hex is one 32-hex-digit word per line ($readmemh), "
                                   ".bin is 16 little-endian bytes per instruction. On any error nothing is "
                                   "written and the errors are printed as file:line:col: message.")
    p.add_argument("program", metavar="PROG.s", help="assembly source")
    p.add_argument("-o", "--output", metavar="OUT", help="image to write (default: PROG with suffix .hex)")
    _add_config(p)
    p.set_defaults(run=cmd_asm)

    p = sub.add_parser("disasm", help="print a .hex or .bin image back as assembly",
                       description="Disassemble a program image into the paper's plain assembly form "
                                   "(every field hex), which assembles back to the same words.")
    p.add_argument("image", metavar="IMAGE", help="program image (.hex or .bin)")
    _add_config(p)
    p.set_defaults(run=cmd_disasm)

    from .models.simulate import SCHEDULERS

    p = sub.add_parser("run", help="run programs on a scheduler model; cycles, utilization, stalls",
                       description="Run one program per process on the reference model of a scheduler and "
                                   "print total cycles, tasks, utilization per accelerator class, the stall "
                                   "breakdown and a digest of home memory at the end.")
    p.add_argument("programs", metavar="PROG", nargs="+",
                   help="assembly source or image (.hex/.bin); the n-th runs as process n")
    _add_config(p)
    p.add_argument("--scheduler", choices=SCHEDULERS, default="hts",
                   help="hts (default), hts-nospec, runtime (software), naive, or sequential (in order)")
    p.add_argument("--trace", metavar="FILE", help="write the event trace as JSON lines")
    p.add_argument("--timeline", metavar="FILE.json",
                   help="write the run as a Chrome trace-event timeline (open it in Perfetto): a track per "
                        "accelerator instance, per process, and for copy-back and retarget")
    p.add_argument("--timeline-png", metavar="FILE.png", help="with --timeline: also draw it with matplotlib")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="seed of the initial memory contents (default 0)")
    p.add_argument("--max-steps", type=_positive_int, default=DEFAULT_STEP_LIMIT,
                   help="give up once a process has executed this many instructions, on every scheduler "
                        f"(default {DEFAULT_STEP_LIMIT:,})")
    p.add_argument("--coverage", action="store_true",
                   help="print the functional coverage of the run (hits per bin; under \"coverage\" with --json)")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("compare", help="run programs on every scheduler, against HEFT, REFT and the optimum",
                       description="Run the programs on naive, runtime, hts-nospec, hts and sequential "
                                   "scheduling from the same initial memory, print cycles and speed-up over "
                                   "naive, check that every final memory equals the sequential one (exit 1 if "
                                   "not), and draw a bar chart. Then schedule the same tasks offline on the "
                                   "same accelerators with HEFT, REFT and CP-SAT (optimal, for small graphs), "
                                   "beside a lower bound on any schedule, and draw a Gantt chart per schedule "
                                   "(FILE_gantt_SCHEDULER.png beside the bar chart). A single .graphml file is "
                                   "taken as a task graph and run as the program its graph makes.")
    p.add_argument("programs", metavar="PROG", nargs="+",
                   help="assembly source or image, one per process; or one task graph (.graphml)")
    _add_config(p)
    p.add_argument("--plot", metavar="FILE.png", help="bar chart to write (default: PROG_compare.png)")
    p.add_argument("--time-limit", metavar="SECONDS", type=_positive_float, default=10.0,
                   help="CP-SAT's time for the optimal schedule (default 10); past it, the best found, not proven")
    p.add_argument("--optimal-max-tasks", metavar="N", type=_positive_int, default=40,
                   help="skip CP-SAT for task graphs of more tasks (default 40)")
    p.add_argument("--instances", metavar="N", type=_positive_int, default=2,
                   help="instances of each accelerator class a .graphml graph runs on (default 2)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="seed of the initial memory contents (default 0)")
    p.set_defaults(run=cmd_compare)

    p = sub.add_parser("scaling", help="audio compression: cycles against instances per function (Fig. 10)",
                       description="Run the audio-compression benchmark for several band counts and numbers of "
                                   "accelerator instances per function, as the paper's Figure 10; print the "
                                   "table and draw it. Progress goes to stderr.")
    _add_config(p)
    p.add_argument("--bands", type=_int_list, default=[4, 8, 16, 32], help="band counts (default 4,8,16,32)")
    p.add_argument("--instances", type=_int_list, default=[1, 2, 3, 4, 6, 8],
                   help="instances per function (default 1,2,3,4,6,8)")
    p.add_argument("--taken", action="store_true", help="make the branch taken (frequency domain, FFTs)")
    p.add_argument("--scheduler", choices=("hts", "hts-nospec", "runtime"), default="hts")
    p.add_argument("--plot", metavar="FILE.png", default="scaling.png", help="line chart (default scaling.png)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.set_defaults(run=cmd_scaling)

    p = sub.add_parser("bench", help="every benchmark on every scheduler: table and chart",
                       description="Run the paper's nine synthetic benchmarks and the audio compression (both "
                                   "branch outcomes) on every scheduler; print a Markdown table of cycles and "
                                   "naive/HTS ratios, check every final memory against sequential execution "
                                   "(exit 1 if any differs), and draw a chart normalised to naive.")
    _add_config(p)
    p.add_argument("--plot", metavar="FILE.png", default="benchmarks.png", help="chart (default benchmarks.png)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="seed of the initial memory contents (default 0)")
    add_fanout_arguments(p)
    p.set_defaults(run=cmd_bench)

    from .synth import LINT_WAIVERS, TARGETS, default_block
    block_help = f"RTL block (default: {default_block()})"
    if default_block() != "hts":
        block_help += "; the top level, hts, becomes the default once hdl/hts.py exists"

    p = sub.add_parser("verilog", help="write an RTL block as Verilog and lint it with Verilator",
                       description="Convert an RTL block, sized by the configuration, to Verilog (module "
                                   "hts_BLOCK) and lint it with `verilator --lint-only -Wall`, leaving out "
                                   "the warnings Amaranth's output always gives (" + ", ".join(LINT_WAIVERS)
                                   + "). Other warnings are printed; on a lint error nothing is written.")
    _add_config(p)
    p.add_argument("--block", metavar="NAME", help=block_help)
    p.add_argument("-o", "--output", metavar="FILE.v", required=True, help="Verilog file to write")
    p.add_argument("--soc-top", metavar="FILE.v",
                   help="with --block axi_hts: also write module hts_axi_top, the scheduler with SoC port names "
                        "(s_axi_control_*, aclk, aresetn, interrupt) and Vivado interface attributes")
    p.set_defaults(run=cmd_verilog)

    p = sub.add_parser("synth", help="synthesize an RTL block for an FPGA: LUTs, FFs, BRAM, DSPs, Fmax",
                       description="Synthesize an RTL block with Yosys and place and route it out of context "
                                   "with nextpnr (both from YoWASP), and report LUT4s, CCU2C carry cells, "
                                   "flip-flops, block RAMs, DSPs and Fmax, read from the tools' JSON reports. "
                                   "Fmax is measured with a register on every port of the block. Progress goes "
                                   "to stderr; the first run of each tool compiles it (about a minute).")
    _add_config(p)
    p.add_argument("--block", metavar="NAME", help=block_help)
    p.add_argument("--target", choices=TARGETS, default="ecp5", help="FPGA family (default ecp5: LFE5U-85F)")
    p.add_argument("--freq", metavar="MHZ", type=_positive_float, default=100.0,
                   help="clock constraint for place and route, in MHz (default 100)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw the register inputs by the logic levels in front of them, by block (PNG)")
    p.add_argument("--no-place", action="store_true",
                   help="Yosys only: the counts and the logic levels, no place and route and no Fmax "
                        "(a few minutes on the default instead of 10 to 20)")
    p.set_defaults(run=cmd_synth)

    p = sub.add_parser("prove", help="formal proofs of RTL blocks (SymbiYosys): age orders, grants, tags",
                       description="Prove the properties of the RTL blocks' formal harnesses (hts.formal) "
                                   "with SymbiYosys and Yices: k-induction, or a bounded check where stated, "
                                   "then a search for every cover. Prints one row per block and property "
                                   "group; exits 1 if a proof fails or a cover is not reached. Progress goes "
                                   "to stderr. docs/verification.md lists the properties.")
    p.add_argument("-c", "--config", metavar="CFG", action="append",
                   help="system configuration: small (the formal four-entry system), a preset "
                        f"({', '.join(PRESETS)}) or a YAML file (repeatable; default: tiny and small)")
    p.add_argument("--block", metavar="NAME", action="append",
                   help="block to prove (repeatable; default: every block with a harness)")
    p.add_argument("--timeout", metavar="S", type=_positive_float, default=600.0,
                   help="seconds one proof may take before it counts as failed (default 600)")
    p.add_argument("--traces", metavar="DIR", help="keep counterexample VCDs in this directory")
    p.add_argument("--json", action="store_true", help="print the results as one JSON array")
    p.set_defaults(run=cmd_prove)

    p = sub.add_parser("cosim", help="run programs on the Verilated RTL under cocotb, checked against the model",
                       description="Co-simulate: the scheduler's Verilog, compiled by Verilator (once per "
                                   "configuration, cached), runs the programs while cocotb plays the CPU, the "
                                   "memory and Python accelerators. Every cycle's events are compared with the "
                                   "cycle model's, and the final home memory with the sequential executor's. "
                                   "Exits 1 on any mismatch, printing the first one and the command to repeat it.")
    _add_config(p)
    p.add_argument("programs", nargs="+", metavar="PROG", help="one program per process (.s, .hex or .bin)")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="initial memory and CPU load pauses (default 0)")
    p.add_argument("--waves", metavar="FILE.vcd", help="write a VCD waveform of the run (builds a traced model)")
    p.add_argument("--timeline", metavar="FILE.json",
                   help="write the RTL's events as a Chrome trace-event timeline, as `hts run --timeline` does")
    p.add_argument("--axi", action="store_true",
                   help="the scheduler behind its AXI4-Lite control registers (hts.hdl.axi_hts): cocotbext-axi "
                        "loads and starts the programs, the run ends on the interrupt, and the status "
                        "registers are checked against the model (a build of its own)")
    _add_rtl_accelerator(p)
    p.add_argument("--trace", metavar="FILE",
                   help="write the RTL's event trace as JSON lines, as `hts run --trace` writes the model's "
                        "(within a cycle in canonical order, hts.hdl.trace.canonical)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: cycles, match, memory_digest, sim_cycles_per_s, ...")
    p.set_defaults(run=cmd_cosim)

    p = sub.add_parser("explore", help="sweep configuration keys over programs on Dask: table, CSV/JSON, Pareto PNG",
                       description="Design-space exploration: every combination of the swept configuration "
                                   "values, on every program, runs the cycle model (and with --synth the ECP5 "
                                   "synthesis) as a Dask task, on a LocalCluster here or on --scheduler's "
                                   "cluster. Finished points are cached ($HTS_EXPLORE_CACHE) and reused.")
    _add_config(p)
    p.add_argument("programs", nargs="*", metavar="PROG.s", help="assembly programs, each a point of its own")
    p.add_argument("--key", action="append", metavar="SECTION.NAME=V1,V2|LO..HI",
                   help="a key to sweep, with its values or a power-of-two range (repeatable): section.name "
                        "(hts.window), accelerators.FIELD for every class (accelerators.count) or "
                        "accelerators.CLASS.FIELD for one")
    p.add_argument("--sweep", metavar="FILE.yaml", help="keys (and programs) from a sweep file")
    p.add_argument("--random", type=_random_program_count, default=0, metavar="N",
                   help="also N random programs of one process (hts.progen, seeds 0 to N-1, three items in ten "
                        "a speculated loop), named random/SEED")
    p.add_argument("--synth", action="store_true", help="also synthesize each configuration (LUT4 sites, Fmax)")
    add_fanout_arguments(p)
    p.add_argument("--within", type=float, default=5.0, metavar="PCT",
                   help="report the cheapest point within PCT%% of the best cycles (default 5)")
    p.add_argument("--csv", metavar="FILE", help="write the rows as CSV")
    p.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="Pareto front of cycles against LUT4 sites (with --synth)")
    p.set_defaults(run=cmd_explore)

    from .cosim.fuzz import SYSTEMS
    p = sub.add_parser("fuzz", help="random programs on the Verilated RTL against the model (soak test)",
                       description="Randomized differential testing: for each seed, random programs (tasks "
                                   "over overlapping regions, loops, every branch kind, two processes) with "
                                   "random accelerator latencies run on the RTL under cocotb and on the cycle "
                                   "model; traces and memory must agree. Prints progress per batch and, for a "
                                   "failing seed, the command that replays it.")
    p.add_argument("--seeds", type=_positive_int, default=100, help="how many seeds (default 100)")
    p.add_argument("--first", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--system", choices=SYSTEMS, default="small", help="fuzz system (default small)")
    p.add_argument("--batch", type=_positive_int, default=100, help="seeds per simulator process (default 100)")
    p.add_argument("--axi", action="store_true",
                   help="load, start and end every run through the AXI4-Lite control registers (as hts cosim --axi)")
    add_fanout_arguments(p)
    p.add_argument("--json", metavar="FILE", help="write every seed's verdict, cycles and memory digest as JSON")
    _add_rtl_accelerator(p)
    p.add_argument("--coverage", action="store_true",
                   help="print the functional coverage: hits per bin (hts.models.coverage), event bins counted "
                        "on the RTL's trace, state bins on the model run beside it")
    p.set_defaults(run=cmd_fuzz)

    from .mutate import CHECKS
    p = sub.add_parser("mutate", help="inject each catalogued RTL bug and run the checks: the kill matrix",
                       description="For each mutant of the catalogue (hts.hdl.mutation), elaborate the RTL with "
                                   "that bug and run the checks cheapest first: the block's formal proofs (hts prove), "
                                   "the block's lockstep tests, the "
                                   "whole scheduler's lockstep tests (both from the tests/ folder of a clone), "
                                   "and random programs co-simulated on Verilator. A mutant stops at the first "
                                   "check that catches it unless --every-check. Prints the kill matrix; exits "
                                   "non-zero if a mutant survives.")
    _add_config(p)
    p.add_argument("--mutant", action="append", metavar="NAME", help="run only this mutant (repeatable)")
    p.add_argument("--check", action="append", choices=CHECKS, help="run only this check (repeatable, in order)")
    p.add_argument("--every-check", action="store_true", help="run every check on every mutant")
    p.add_argument("--fuzz-seeds", type=_positive_int, default=50, help="random programs per mutant (default 50)")
    p.add_argument("--tests", metavar="DIR", help="the tests/ folder of a clone (default ./tests)")
    p.add_argument("--json", metavar="FILE", help="write the matrix as JSON")
    p.add_argument("--plot", metavar="PNG", help="write the matrix as a PNG")
    p.add_argument("--list", action="store_true", help="print the catalogue and exit")
    p.set_defaults(run=cmd_mutate)

    p = sub.add_parser("config", help="show a validated system configuration",
                       description="Validate a configuration and print its accelerator classes (with the "
                                   "accelerator IDs programs are assembled with) and every scheduler parameter.")
    _add_config(p)
    p.set_defaults(run=cmd_config)

    p = sub.add_parser("tools", help="show the versions of the bundled tools",
                       description="Print the versions of the tools the toolkit runs, found without any "
                                   "PATH set-up by the user.")
    p.set_defaults(run=cmd_tools)

    p = sub.add_parser("demo", help="the demo: audio compression on every scheduler, and the assembler",
                       description="Run the paper's audio-compression application through `hts compare` "
                                   "(table and bar chart), then assemble and disassemble the paper's branch "
                                   "listing and show the error for the listing as printed.")
    _add_config(p)
    p.add_argument("--plot", metavar="FILE.png", default="audio_compression_compare.png",
                   help="bar chart to write (default audio_compression_compare.png)")
    p.set_defaults(run=cmd_demo)
    return parser


# Arguments naming files read, and files written, by any command.
_INPUT_ARGS, _OUTPUT_ARGS = ("program", "image", "programs", "config"), ("output", "trace", "plot", "waves")


def _named_files(args, names) -> list[str]:
    files = []
    for name in names:
        value = getattr(args, name, None)
        files += value if isinstance(value, list) else [value]
    # A preset's name (``-c tiny``) names no file.
    return [str(path) for path in files if path is not None and path not in PRESETS]


def main(argv: list[str] | None = None) -> int:
    from .output import check_outputs
    args = build_parser().parse_args(argv)
    try:
        check_outputs(_named_files(args, _OUTPUT_ARGS), _named_files(args, _INPUT_ARGS))
        return args.run(args)
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
