"""What several subcommands share: argument types, the configuration option, loading programs,
progress and failure lines."""

import argparse
import sys

from hts.base.arguments import Role, add_argument
from hts.base.config import PRESETS, load_config
from hts.base.output import atomic_path
from hts.base.progress import to_stderr

__all__ = ["add_config", "add_rtl_accelerator", "positive_int", "nonnegative_int", "positive_float", "int_list",
           "system", "load_programs", "to_stderr", "report_faults", "print_outcome_failure",
           "write_events", "rtl_flags"]

_CONFIG_HELP = f"system configuration: a preset ({', '.join(PRESETS)}) or a YAML file (default: default)"

def add_config(parser: argparse.ArgumentParser):
    add_argument(parser, Role.CONFIGURATION, "-c", "--config", metavar="CFG", default="default", help=_CONFIG_HELP)


def add_rtl_accelerator(parser: argparse.ArgumentParser):
    add_argument(parser, Role.NO_FILE, "--rtl-accelerator", metavar="CLASS", action="append", default=[],
                 help="the class's RTL core stands in for its Python accelerator, timed exactly by the "
                      "model (repeatable; cores exist for vector_add classes: hts.hdl.hls; a build of its own)")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected integers >= 1")
    return values


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

