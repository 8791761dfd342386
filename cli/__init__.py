"""The ``hts`` command: one entry point, a subcommand per job.

Each subcommand is a :class:`~hts.cli.command.Command` in a module of its own, which adds its
arguments beside the code that runs it; this module only lists them. Errors caused by the
user's input (:class:`~hts.base.errors.HTSError`) are printed as ``file:line:col: message`` on
stderr with exit status 1; nothing else is caught.
"""

import argparse
import sys

from hts import __version__
from hts.base.errors import HTSError
from hts.base.output import check_outputs
from hts.base.processes import ending_cleanly

from .arguments import INPUT_ARGS, OUTPUT_ARGS, named_files
from .asm import ASM, DISASM
from .bench import BENCH
from .compare import COMPARE
from .config import CONFIG, TOOLS
from .cosim import COSIM
from .demo import DEMO
from .examples import EXAMPLES
from .explore import EXPLORE
from .fuzz import FUZZ
from .mutate import MUTATE
from .prove import PROVE
from .run import RUN
from .scaling import SCALING
from .synth import SYNTH
from .verilog import VERILOG

__all__ = ["COMMANDS", "build_parser", "main"]

# In the order ``hts --help`` lists them: the three jobs first, then what architects ask of them.
COMMANDS = (ASM, DISASM, RUN, COMPARE, SCALING, BENCH, VERILOG, SYNTH, PROVE, COSIM, EXPLORE, FUZZ, MUTATE,
            CONFIG, TOOLS, DEMO, EXAMPLES)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hts",
        description="HTS toolkit: assemble task programs for the hardware task scheduler, run them "
                    "on reference models and RTL, generate and synthesize Verilog.")
    parser.add_argument("--version", action="version", version=f"hts {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    with ending_cleanly():      # SIGTERM, SIGHUP, Ctrl-C: children ended, files removed, exit 128 + signal
        args = build_parser().parse_args(argv)
        try:
            check_outputs(named_files(args, OUTPUT_ARGS), named_files(args, INPUT_ARGS))
            return args.run(args)
        except HTSError as err:
            print(err, file=sys.stderr)
            return 1
