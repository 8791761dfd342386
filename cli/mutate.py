"""``hts mutate``: every catalogued RTL mutant against the verification stack, the kill matrix."""

import json
from pathlib import Path

from hts.base.arguments import Role, add_argument
from hts.base.errors import HTSError

from .arguments import add_config, int_in, system, to_stderr
from .fuzz import MAX_SEEDS
from .command import Command


def _add_arguments(parser):
    from hts.flows.mutate import CHECKS
    add_config(parser)
    add_argument(parser, Role.NO_FILE, "--mutant", action="append", metavar="NAME",
                 help="run only this mutant (repeatable)")
    parser.add_argument("--check", action="append", choices=CHECKS, help="run only this check (repeatable, in order)")
    parser.add_argument("--every-check", action="store_true", help="run every check on every mutant")
    parser.add_argument("--fuzz-seeds", type=int_in(1, MAX_SEEDS), default=50,
                        help="random programs per mutant (default 50)")
    add_argument(parser, Role.INPUT_DIRECTORY, "--tests", metavar="DIR",
                 help="the tests/ folder of a clone (default ./tests)")
    add_argument(parser, Role.OUTPUT, "--json", metavar="FILE", help="write the matrix as JSON")
    add_argument(parser, Role.OUTPUT, "--plot", metavar="PNG", help="write the matrix as a PNG")
    parser.add_argument("--list", action="store_true", help="print the catalogue and exit")


def _tests_folder(args) -> Path | None:
    tests = Path(args.tests) if args.tests else Path("tests")
    if (tests / "hdl").is_dir():
        return tests.resolve()
    if args.tests:
        raise HTSError(f"--tests {args.tests}: no hdl/ folder of block tests there")
    to_stderr("[mutate] no tests/ folder here: the block and system checks are n/a (run from a clone)")
    return None


def _print_matrix(rows, checks):
    print(f"| mutant | block | {' | '.join(checks)} | killed |")
    print(f"|---|---|{'---|' * len(checks)}---|")
    for row in rows:
        cells = [row["verdicts"][check]["status"] for check in checks]
        print(f"| {row['name']} | {row['block']} | {' | '.join(cells)} | {'yes' if row['killed'] else 'NO'} |")


def run(args) -> int:
    from hts.base.output import atomic_path
    from hts.flows.mutate import CHECKS, kill_matrix
    from hts.flows.plots import plot_kill_matrix
    from hts.hdl.mutation import CATALOGUE
    if args.list:
        for mutant in CATALOGUE.values():
            print(f"{mutant.name:32s} {mutant.block:20s} {mutant.bug}")
        return 0
    config = system(args.config)
    tests = _tests_folder(args)
    checks = args.check or list(CHECKS)
    rows = kill_matrix(config, args.mutant or list(CATALOGUE), checks, tests, args.fuzz_seeds, args.every_check,
                       to_stderr)
    if args.plot:
        plot_kill_matrix(rows, checks, args.plot, f"RTL mutants on {config.source}")
    if args.json:
        with atomic_path(args.json) as tmp:
            Path(tmp).write_text(json.dumps({"config": config.source, "checks": checks, "rows": rows}, indent=1))
    _print_matrix(rows, checks)
    killed = sum(row["killed"] for row in rows)
    print(f"{killed} of {len(rows)} mutants killed")
    return 0 if killed == len(rows) else 1


MUTATE = Command(
    "mutate", help="inject each catalogued RTL bug and run the checks: the kill matrix",
    description="For each mutant of the catalogue (hts.hdl.mutation), elaborate the RTL with that bug and run "
                "the checks cheapest first: the block's formal proofs (hts prove), the block's lockstep tests, "
                "the whole scheduler's lockstep tests (both from the tests/ folder of a clone), and random "
                "programs co-simulated on Verilator. A mutant stops at the first check that catches it unless "
                "--every-check. Prints the kill matrix; exits non-zero if a mutant survives.",
    add_arguments=_add_arguments, run=run)
