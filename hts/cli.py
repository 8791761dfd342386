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


def cmd_demo(args) -> int:
    """Assemble and disassemble the paper's listings; show the malformed one's error."""
    from .assembler import assemble, disassemble
    config = load_config(args.config)
    examples = resources.files("hts.examples")
    for name in ("paper_independent", "paper_loop", "paper_branch", "labels"):
        text = examples.joinpath(f"{name}.s").read_text()
        program = assemble(text, config, f"examples/{name}.s")
        print(f"== examples/{name}.s: {len(program)} instructions")
        for word, line in zip(program.words, disassemble(program, config)):
            print(f"  {word:032x}  {line}")
    print("== examples/paper_branch_malformed.s (the paper's listing as printed)")
    try:
        assemble(examples.joinpath("paper_branch_malformed.s").read_text(), config,
                 "examples/paper_branch_malformed.s")
    except HTSError as err:
        print(f"  rejected, as it must be:\n  {err}")
    else:
        raise AssertionError("the malformed listing assembled")
    return 0


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

    p = sub.add_parser("config", help="show a validated system configuration",
                       description="Validate a configuration and print its accelerator classes (with the "
                                   "accelerator IDs programs are assembled with) and every scheduler parameter.")
    _add_config(p)
    p.set_defaults(run=cmd_config)

    p = sub.add_parser("tools", help="show the versions of the bundled tools",
                       description="Print the versions of the tools the toolkit runs, found without any "
                                   "PATH set-up by the user.")
    p.set_defaults(run=cmd_tools)

    p = sub.add_parser("demo", help="the demo: assemble and disassemble the paper's example programs",
                       description="Assemble the paper's example listings, print their words and their "
                                   "disassembly, and show the error for the malformed listing.")
    _add_config(p)
    p.set_defaults(run=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
