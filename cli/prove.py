"""``hts prove``: formal proofs of the RTL blocks' harnesses."""

import json
import sys
from pathlib import Path

from hts.base.arguments import Role, add_argument
from hts.base.config import PRESETS

from .arguments import positive_float
from .command import Command


def _add_arguments(parser):
    add_argument(parser, Role.CONFIGURATION, "-c", "--config", metavar="CFG", action="append",
                 help="system configuration: small (the formal four-entry system), a preset "
                      f"({', '.join(PRESETS)}) or a YAML file (repeatable; default: tiny and small)")
    add_argument(parser, Role.NO_FILE, "--block", metavar="NAME", action="append",
                 help="block to prove (repeatable; default: every block with a harness)")
    parser.add_argument("--timeout", metavar="S", type=positive_float, default=600.0,
                        help="seconds one proof may take before it counts as failed (default 600)")
    add_argument(parser, Role.OUTPUT_DIRECTORY, "--traces", metavar="DIR",
                 help="keep counterexample VCDs in this directory")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON array")


def _print_table(results):
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


def run(args) -> int:
    from hts.flows.prove import BLOCKS, CONFIGS, prove
    configs = args.config or list(CONFIGS)
    results = prove(configs, args.block or list(BLOCKS), timeout_s=args.timeout,
                    trace_dir=Path(args.traces) if args.traces else None)
    if args.json:
        print(json.dumps([r.as_dict() for r in results]))
    else:
        _print_table(results)
    return 0 if all(r.ok for r in results) else 1


PROVE = Command(
    "prove", help="formal proofs of RTL blocks (SymbiYosys): age orders, grants, tags",
    description="Prove the properties of the RTL blocks' formal harnesses (hts.formal) with SymbiYosys and "
                "Yices: k-induction, or a bounded check where stated, then a search for every cover. Prints one "
                "row per block and property group; exits 1 if a proof fails or a cover is not reached. Progress "
                "goes to stderr. docs/verification.md lists the properties.",
    add_arguments=_add_arguments, run=run)
