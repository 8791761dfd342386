"""The ``hts`` command: one entry point, a subcommand per job.

Errors caused by the user's input (:class:`~hts.errors.HTSError`) are printed as
``file:line:col: message`` on stderr with exit status 1; nothing else is caught.
"""

import argparse
import sys
from importlib import resources
from pathlib import Path

from . import __version__
from .config import PRESETS, describe, load_config
from .errors import HTSError

_CONFIG_HELP = f"system configuration: a preset ({', '.join(PRESETS)}) or a YAML file (default: default)"


def _add_config(parser: argparse.ArgumentParser):
    parser.add_argument("-c", "--config", metavar="CFG", default="default", help=_CONFIG_HELP)


def cmd_asm(args) -> int:
    from .assembler import assemble_file, write_image
    config = load_config(args.config)
    program = assemble_file(args.program, config)
    output = Path(args.output) if args.output else Path(args.program).with_suffix(".hex")
    write_image(output, program)
    print(f"{args.program}: {len(program)} instructions -> {output}")
    return 0


def cmd_disasm(args) -> int:
    from .assembler import disassemble, read_image
    config = load_config(args.config)
    print("\n".join(disassemble(read_image(args.image), config)))
    return 0


def cmd_config(args) -> int:
    config = load_config(args.config)
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
    config = load_config(args.config)
    block = args.block or default_block()
    warnings = write_verilog(config, block, args.output)
    for warning in warnings:
        print(warning, file=sys.stderr)
    lint = f"{len(warnings)} Verilator warning(s)" if warnings else "lints clean"
    print(f"{block} on {config.source}: module {module_name(block)} -> {args.output} ({lint})")
    return 0


def _print_synth_table(result: dict):
    print(f"{result['block']} (module {result['module']}) on {result['config']}: "
          f"{result['device']} ({result['target']}), out of context")
    rows = [("LUTs", "LUT4", result["luts"], ""),
            ("carry", "CCU2C", result["carry_cells"], f"2 LUT4s each: {result['lut_sites']} LUT4 sites in all"),
            ("FFs", "TRELLIS_FF", result["ffs"], ""),
            ("block RAM", "DP16KD", result["brams"], ""),
            ("DSPs", "MULT18X18D", result["dsps"], ""),
            ("Fmax", "MHz", "-" if result["fmax_mhz"] is None else f"{result['fmax_mhz']:.1f}",
             f"ports registered; clock constraint {result['fmax_constraint_mhz']:g} MHz" if result["fits"]
             else f"not placed: the logic does not fit the {result['device']}")]
    print(f"{'resource':<12}{'cells':<12}{'count':>8}")
    for name, cells, count, note in rows:
        print(f"{name:<12}{cells:<12}{count:>8}  {note}".rstrip())
    if result["fits"]:
        print("placed: " + ", ".join(f"{cell} {use['used']}/{use['available']}"
                                     for cell, use in result["utilization"].items()) + " (port registers included)")


def cmd_synth(args) -> int:
    import json
    from .synth import default_block, synthesize
    config = load_config(args.config)
    block = args.block or default_block()
    result = synthesize(config, block, args.target, args.freq)
    if args.json:
        print(json.dumps(result))
    else:
        _print_synth_table(result)
    return 0


def _load_programs(paths: list[str], config):
    from .assembler import load_program
    return [load_program(path, config) for path in paths]


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
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
    from .models.report import run_summary
    from .models.simulate import simulate
    from .output import atomic_path
    config = load_config(args.config)
    programs = _load_programs(args.programs, config)
    result = simulate(config, programs, initial_memory(config, args.seed), args.scheduler,
                      max_cycles=args.max_cycles)
    summary = {"programs": args.programs, "config": config.source, "seed": args.seed, **run_summary(result)}
    if args.trace:
        with atomic_path(args.trace) as tmp, open(tmp, "w") as out:
            result.trace.write_jsonl(out)
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"programs     {' '.join(args.programs)}")
    print(f"config       {config.source}    scheduler {args.scheduler}    seed {args.seed}")
    print(f"cycles       {result.cycles}")
    print(f"tasks        {result.tasks}")
    print(f"memory       {summary['memory_digest']}  (digest of home memory)")
    print("utilization  " + "  ".join(f"{name} {value:.1%}" for name, value in result.utilization.items()))
    if result.stalls:
        print("stalls       " + "  ".join(f"{reason} {count}" for reason, count in sorted(result.stalls.items())))
        print("             (cycles a process decoded nothing, by reason, summed over processes)")
    return 0


def cmd_compare(args) -> int:
    import json
    from .models.report import compare
    from .plots import plot_compare
    config = load_config(args.config)
    programs = _load_programs(args.programs, config)
    rows = compare(config, programs, args.seed)
    plot = Path(args.plot) if args.plot else Path(f"{Path(args.programs[0]).stem}_compare.png")
    title = f"{' '.join(Path(p).name for p in args.programs)} on {config.source}"
    plot_compare(rows, plot, title)
    if args.json:
        print(json.dumps({"programs": args.programs, "config": config.source, "plot": str(plot), "schedulers": rows}))
    else:
        print(title)
        print(f"{'scheduler':<12}{'cycles':>10}{'vs naive':>10}{'tasks':>7}  memory")
        for row in rows:
            check = "matches sequential" if row["memory_matches_sequential"] else "DIFFERS from sequential"
            print(f"{row['scheduler']:<12}{row['cycles']:>10}{row['speedup_vs_naive']:>9.2f}x{row['tasks']:>7}  "
                  f"{row['memory_digest']} {check}")
        print(f"plot: {plot}")
    return 0 if all(row["memory_matches_sequential"] for row in rows) else 1


def cmd_scaling(args) -> int:
    import json
    from .assembler import assemble
    from .benchmarks import audio_compression
    from .models.report import scaling
    from .plots import plot_scaling
    config = load_config(args.config)
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
    from .assembler import assemble
    from .benchmarks import BENCHMARKS, audio_compression, source
    from .models.report import compare
    from .plots import plot_benchmarks
    config = load_config(args.config)
    cases = [(name, source(name)) for name in BENCHMARKS]
    cases.append(("audio_compression_taken", audio_compression(8, taken=True)))
    table = []
    for index, (name, text) in enumerate(cases, start=1):
        print(f"  [{index}/{len(cases)}] {name}", file=sys.stderr, flush=True)
        rows = {row["scheduler"]: row for row in compare(config, [assemble(text, config, f"{name}.s")], args.seed)}
        table.append({"benchmark": name, **{s: rows[s]["cycles"] for s in rows},
                      "naive_over_hts": round(rows["naive"]["cycles"] / rows["hts"]["cycles"], 2),
                      "memory_matches_sequential": all(r["memory_matches_sequential"] for r in rows.values())})
    plot_benchmarks(table, args.plot, f"benchmarks on {config.source}")
    if args.json:
        print(json.dumps({"config": config.source, "plot": str(args.plot), "rows": table}))
    else:
        print("| benchmark | naive | runtime | hts-nospec | hts | naive/hts | memory = sequential |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for row in table:
            print(f"| {row['benchmark']} | {row['naive']} | {row['runtime']} | {row['hts-nospec']} | {row['hts']} "
                  f"| {row['naive_over_hts']:.2f} | {'yes' if row['memory_matches_sequential'] else 'NO'} |")
        print(f"plot: {args.plot}")
    return 0 if all(row["memory_matches_sequential"] for row in table) else 1


def cmd_demo(args) -> int:
    """The audio compression of the paper on every scheduler, then the assembler round trip."""
    from .assembler import assemble, disassemble
    config = load_config(args.config)
    audio = resources.files("hts.benchmarks").joinpath("audio_compression.s")
    print("== hts compare benchmarks/audio_compression.s (Algorithm 1 of the HTS paper, 8 bands)")
    status = cmd_compare(argparse.Namespace(config=args.config, programs=[str(audio)], seed=0,
                                            plot=args.plot, json=False))
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
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial memory contents (default 0)")
    p.add_argument("--max-cycles", type=_positive_int, default=10**9, help="give up after this many cycles")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("compare", help="run programs on every scheduler; table and bar chart",
                       description="Run the programs on naive, runtime, hts-nospec, hts and sequential "
                                   "scheduling from the same initial memory, print cycles and speed-up over "
                                   "naive, check that every final memory equals the sequential one (exit 1 if "
                                   "not), and draw a bar chart.")
    p.add_argument("programs", metavar="PROG", nargs="+", help="assembly source or image, one per process")
    _add_config(p)
    p.add_argument("--plot", metavar="FILE.png", help="bar chart to write (default: PROG_compare.png)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial memory contents (default 0)")
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
    p.add_argument("--seed", type=int, default=0, help="seed of the initial memory contents (default 0)")
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
    p.set_defaults(run=cmd_synth)

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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
