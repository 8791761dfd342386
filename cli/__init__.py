"""The ``hts`` command: one entry point, a subcommand per job.

Each subcommand is a :class:`~hts.cli.command.Command` in a module of its own, which adds its
arguments beside the code that runs it; this module only lists them and runs one:

- every file the command line names is checked before any work
  (:func:`hts.base.output.check_files`), and its outputs appear all together or not at all
  (:func:`hts.base.output.all_or_none`);
- errors caused by the user's input (a usage error, an :class:`~hts.base.errors.HTSError`)
  are printed as ``file:line:col: message`` on stderr with exit status 1; nothing else is
  caught;
- a reader that stops reading (``hts disasm P.bin | head``) ends the printing quietly; the
  command still finishes and writes its files;
- SIGTERM, SIGHUP and Ctrl-C end the command's child processes, remove its temporaries
  and exit with 128 + the signal (:func:`hts.base.processes.ending_cleanly`).
"""

import argparse
import os
import sys
from contextlib import contextmanager

from hts import __version__
from hts.base.errors import HTSError
from hts.base.output import all_or_none, check_files
from hts.base.processes import ending_cleanly

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


class _QuietOnBrokenPipe:
    """``sys.stdout`` that, once its reader has gone (a broken pipe), drops what is printed
    instead of raising, and points the descriptor at /dev/null for the final flush."""

    def __init__(self, stream):
        self._stream = stream
        self._reader_gone = False

    def write(self, text: str) -> int:
        if not self._reader_gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self._reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_left()

    def _reader_left(self) -> None:
        self._reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def _quiet_when_the_reader_leaves():
    stdout, sys.stdout = sys.stdout, _QuietOnBrokenPipe(sys.stdout)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = stdout


def _run(args: argparse.Namespace) -> int:
    files = args.files(args)
    check_files(files.outputs, files.inputs, files.output_directories)
    with all_or_none():
        return args.run(args)


def main(argv: list[str] | None = None) -> int:
    with ending_cleanly(), _quiet_when_the_reader_leaves():
        # ending_cleanly: SIGTERM, SIGHUP or Ctrl-C end the children, remove the temporaries
        # and exit with 128 + the signal.
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit:      # --help and --version (0), or a usage error (1, not argparse's 2)
            return 1 if exit.code else 0
        try:
            return _run(args)
        except HTSError as err:
            print(err, file=sys.stderr)
            return 1
