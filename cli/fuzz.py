"""``hts fuzz``: random programs on the Verilated RTL against the model (soak)."""

import json
import sys

from hts.base.arguments import Role, add_argument
from hts.flows.fanout import add_arguments as add_fanout_arguments

from .arguments import MAX_COUNT, add_rtl_accelerator, int_in, print_outcome_failure, to_stderr
from .command import Command

# A soak of this many seeds runs for weeks on this machine.
MAX_SEEDS = 10_000_000


def _add_arguments(parser):
    from hts.cosim.fuzz import SYSTEMS
    parser.add_argument("--seeds", type=int_in(1, MAX_SEEDS), default=100,
                        help=f"how many seeds (default 100, at most {MAX_SEEDS:,})")
    parser.add_argument("--first", type=int_in(-MAX_COUNT - 1, MAX_COUNT), default=0, help="first seed (default 0)")
    parser.add_argument("--system", choices=SYSTEMS, default="small", help="fuzz system (default small)")
    parser.add_argument("--batch", type=int_in(1, MAX_SEEDS), default=100,
                        help="seeds per simulator process (default 100)")
    parser.add_argument("--axi", action="store_true",
                        help="load, start and end every run through the AXI4-Lite control registers "
                             "(as hts cosim --axi)")
    add_fanout_arguments(parser)
    add_argument(parser, Role.OUTPUT, "--json", metavar="FILE",
                 help="write every seed's verdict, cycles and memory digest as JSON")
    add_rtl_accelerator(parser)
    parser.add_argument("--coverage", action="store_true",
                        help="print the functional coverage: hits per bin (hts.models.coverage), event bins "
                             "counted on the RTL's trace, state bins on the model run beside it")


def _write_json(path, outcomes):
    from hts.base.output import atomic_path
    rows = [{"seed": seed, "match": o.match, "cycles": o.cycles, "model_cycles": o.model_cycles,
             "memory_digest": o.memory_digest, "faults": [list(fault) for fault in o.faults]}
            for seed, o in sorted(outcomes.items())]
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(rows))


def run(args) -> int:
    from hts.cosim.fuzz import FuzzBatch, run_batch
    from hts.flows.fanout import fan_out
    from hts.models.coverage import Coverage, coverage_table
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
        to_stderr(f"[fuzz] {len(outcomes)}/{args.seeds} seeds on system {args.system}, {failing} failing "
                  f"({cycles:,} cycles in the batch from seed {batch.first})")
    failures = [outcomes[seed] for seed in sorted(outcomes) if not outcomes[seed].match]
    for outcome in failures:
        print_outcome_failure(outcome)
    for error in errors:
        print(f"FAILED to run {error}", file=sys.stderr)
    if args.json:
        _write_json(args.json, outcomes)
    if args.coverage:
        print(coverage_table(coverage))
    faulted = sum(bool(outcome.faults) for outcome in outcomes.values())
    print(f"{len(outcomes) - len(failures)} of {args.seeds} random programs match the model "
          f"(system {args.system}, seeds {args.first}..{args.first + args.seeds - 1}); "
          f"{faulted} of them faulted a process")
    return 1 if failures or errors else 0


FUZZ = Command(
    "fuzz", help="random programs on the Verilated RTL against the model (soak test)",
    description="Randomized differential testing: for each seed, random programs (tasks over overlapping "
                "regions, loops, every branch kind, two processes) with random accelerator latencies run on the "
                "RTL under cocotb and on the cycle model; traces and memory must agree. Prints progress per "
                "batch and, for a failing seed, the command that replays it.",
    add_arguments=_add_arguments, run=run)
