"""What several subcommands share: argument types, the configuration option, loading programs,
progress and failure lines."""

import argparse
import sys

from hts.base.arguments import Role, add_argument
from hts.base.config import PRESETS, load_config
from hts.base.errors import shown
from hts.base.output import atomic_path
from hts.base.progress import to_stderr

__all__ = ["add_config", "add_rtl_accelerator", "int_in", "positive_int", "nonnegative_int", "positive_float",
           "int_list",
           "system", "load_programs", "to_stderr", "report_faults", "print_outcome_failure",
           "write_events", "rtl_flags"]

_CONFIG_HELP = f"system configuration: a preset ({', '.join(PRESETS)}) or a YAML file (default: default)"

def add_config(parser: argparse.ArgumentParser):
    add_argument(parser, Role.CONFIGURATION, "-c", "--config", metavar="CFG", default="default", help=_CONFIG_HELP)


def add_rtl_accelerator(parser: argparse.ArgumentParser):
    add_argument(parser, Role.NO_FILE, "--rtl-accelerator", metavar="CLASS", action="append", default=[],
                 help="the class's RTL core stands in for its Python accelerator, timed exactly by the "
                      "model (repeatable; cores exist for vector_add classes: hts.hdl.hls; a build of its own)")


# The largest value a count or a seed may take where nothing smaller bounds it: far past any
# use, and short of the sizes at which Python's integers or NumPy's seeds stop being cheap.
MAX_COUNT = 2**63 - 1
# Seconds, megahertz: a float past this is a typo.
MAX_FLOAT = 1e6


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{shown(text)}'") from None


def int_in(low: int, high: int = MAX_COUNT):
    """An argument type: an integer from ``low`` to ``high``."""
    def integer(text: str) -> int:
        value = _integer(text)
        if not low <= value <= high:
            top = "2^63 - 1" if high == MAX_COUNT else f"{high:,}"
            raise argparse.ArgumentTypeError(f"must be {low:,} to {top}, got {shown(text)}")
        return value
    return integer


positive_int, nonnegative_int = int_in(1), int_in(0)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{shown(text)}'") from None
    if not 0 < value <= MAX_FLOAT:
        raise argparse.ArgumentTypeError(f"must be > 0 and at most {MAX_FLOAT:,.0f}, got {shown(text)}")
    return value


def int_list(high: int):
    """An argument type: comma-separated integers from 1 to ``high``."""
    def integers(text: str) -> list[int]:
        values = [_integer(part) for part in text.split(",") if part.strip()]
        if not values or not all(1 <= value <= high for value in values):
            raise argparse.ArgumentTypeError(f"expected integers from 1 to {high:,}, got '{shown(text)}'")
        return values
    return integers


def system(spec):
    """The configuration ``spec`` names, with every accelerator's function checked to exist."""
    from hts.models.accelerator import AcceleratorFunctions
    config = load_config(spec)
    AcceleratorFunctions(config)
    return config


def load_programs(paths: list[str], config):
    from hts.assembler import load_program
    return [load_program(path, config) for path in paths]


def report_faults(faults) -> int:
    """Each fault as an error at its source line; the exit status (1 if any)."""
    for fault in faults:
        print(fault.error(), file=sys.stderr)
    return 1 if faults else 0


def print_outcome_failure(outcome):
    print(f"MISMATCH {outcome.name}: {outcome.difference}", file=sys.stderr)
    print(f"  reproduce: {outcome.reproduce}", file=sys.stderr)


def write_events(path: str, events: list[dict]):
    """A trace as JSON lines, the format of ``hts run --trace``."""
    import json
    with atomic_path(path) as tmp, open(tmp, "w") as out:
        out.writelines(json.dumps(event) + "\n" for event in events)


def rtl_flags(rtl_classes) -> list[str]:
    return [flag for name in rtl_classes for flag in ("--rtl-accelerator", name)]

