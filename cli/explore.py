"""``hts explore``: configuration keys swept over programs, on Dask."""

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from hts.base.arguments import Files, Role, add_argument
from hts.base.errors import HTSError
from hts.flows.explore import MAX_POINTS
from hts.flows.fanout import add_arguments as add_fanout_arguments

from .arguments import add_config, nonnegative_int, positive_int, system, to_stderr
from .command import Command

MAX_RANDOM_PROGRAMS = 10_000      # hts explore --random


def _random_program_count(text: str) -> int:
    # Every program is held in memory and is a point of its own: a bound keeps a typo from
    # asking for unbounded memory.
    value = nonnegative_int(text)
    if value > MAX_RANDOM_PROGRAMS:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_RANDOM_PROGRAMS}, got {value}")
    return value


def _add_arguments(parser):
    add_config(parser)
    add_argument(parser, Role.INPUT, "programs", nargs="*", metavar="PROG.s",
                 help="assembly programs, each a point of its own")
    add_argument(parser, Role.NO_FILE, "--key", action="append", metavar="SECTION.NAME=V1,V2|LO..HI",
                 help="a key to sweep, with its values or a power-of-two range (repeatable): section.name "
                      "(hts.queue_depth), accelerators.FIELD for every class (accelerators.count) or "
                      "accelerators.CLASS.FIELD for one")
    add_argument(parser, Role.INPUT, "--sweep", metavar="FILE.yaml", help="keys (and programs) from a sweep file")
    parser.add_argument("--random", type=_random_program_count, default=0, metavar="N",
                        help=f"also N random programs of one process (hts.cosim.progen, seeds 0 to N-1, three items "
                             f"in ten a speculated loop), named random/SEED; at most {MAX_RANDOM_PROGRAMS:,}")
    parser.add_argument("--max-points", type=positive_int, default=MAX_POINTS, metavar="N",
                        help=f"refuse a sweep of more than N points, values multiplied by programs, before running "
                             f"any (default {MAX_POINTS:,})")
    parser.add_argument("--synth", action="store_true", help="also synthesize each configuration (LUT4 sites, Fmax)")
    add_fanout_arguments(parser)
    parser.add_argument("--within", type=float, default=5.0, metavar="PCT",
                        help="report the cheapest point within PCT%% of the best cycles (default 5)")
    add_argument(parser, Role.OUTPUT, "--csv", metavar="FILE", help="write the rows as CSV")
    add_argument(parser, Role.OUTPUT, "--json", metavar="FILE", help="write the rows as JSON")
    add_argument(parser, Role.OUTPUT, "--plot", metavar="FILE.png",
                 help="Pareto front of cycles against LUT4 sites (with --synth)")


def _print_rows(columns, rows):
    widths = {name: max([len(name), *(len(str(row.get(name, ""))) for row in rows)]) + 2 for name in columns}
    print(f"{'point':<{widths['point']}}" + "".join(f"{name:>{widths[name]}}" for name in columns[1:]))
    for row in rows:
        print(f"{row['point']:<{widths['point']}}"
              + "".join(f"{str(row.get(name, '')):>{widths[name]}}" for name in columns[1:]))


def _print_cheapest(args, programs, outcomes):
    from hts.flows.explore import cheapest_within
    for program in programs:
        best = cheapest_within(outcomes, args.within, program)
        if best:
            cost = f"{best.row['lut_sites']} LUT4 sites" if args.synth else "smallest swept values (no synthesis)"
            print(f"{program}: cheapest within {args.within:g}% of the best cycles: {best.point.label()} "
                  f"({best.row['cycles']} cycles; {cost})")


def _write_files(args, keys, header, rows, failed):
    from hts.base.output import atomic_path
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


def _sweep_programs(args) -> Files:
    """The programs a sweep file lists are inputs too."""
    from hts.assembler import source_limit
    from hts.flows.explore import load_sweep
    if not args.sweep:
        return Files()
    folder = Path(args.sweep).parent
    listed = load_sweep(args.sweep, source_limit(system(args.config))).programs
    return Files(inputs=[str(folder / name) for name in listed])


def run(args) -> int:
    from hts.assembler import source_limit
    from hts.base.files import read_text
    from hts.flows.explore import COLUMNS, SYNTH_COLUMNS, SweepSpec, check_point_count, combined, explore, \
        load_sweep, pareto_front, parse_keys, points, random_programs
    from hts.flows.plots import plot_explore
    base = system(args.config)
    limit = source_limit(base)
    spec = combined(load_sweep(args.sweep, limit) if args.sweep else SweepSpec({}, {}), parse_keys(args.key or []))
    keys = spec.keys
    listed = {**spec.programs, **{path: read_text(path, limit, "program") for path in args.programs}}
    if not keys or not (listed or args.random):
        raise HTSError("hts explore needs at least one --key (or a --sweep file with keys) and one program "
                       "(or --random N)")
    # Counted before a random program or a configuration is made: a few ranges multiply to millions.
    check_point_count(keys, len(listed) + args.random, args.max_points)
    programs = {**listed, **random_programs(base, args.random)}
    result = explore(points(base, combined(spec, SweepSpec({}, programs)), args.synth, args.max_points),
                     args.scheduler, args.workers, progress=to_stderr)
    columns = ["point", *COLUMNS, *(SYNTH_COLUMNS if args.synth else ())]
    rows = [{"point": o.point.label(), **dict(o.point.values), **o.row} for o in result.outcomes if o.row]
    failed = [o for o in result.outcomes if o.error]
    _print_rows(columns, rows)
    for outcome in failed:
        print(f"FAILED {outcome.point.label()} {outcome.point.program}: {outcome.error}", file=sys.stderr)
    print(f"reused {result.reused} of {len(result.outcomes)} points from the cache "
          f"({result.jobs_reused} of {result.jobs} jobs)")
    _print_cheapest(args, programs, result.outcomes)
    _write_files(args, keys, ["point", *keys, *columns[1:]], rows, failed)
    if args.plot and rows:
        front = {(o.point.label(), program) for program in programs for o in pareto_front(result.outcomes, program)}
        plot_explore(rows, front, args.plot, f"hts explore on {base.source}")
    return 1 if failed else 0


EXPLORE = Command(
    "explore", help="sweep configuration keys over programs on Dask: table, CSV/JSON, Pareto PNG",
    description="Design-space exploration: every combination of the swept configuration values, on every "
                "program, runs the cycle model (and with --synth the ECP5 synthesis) as a Dask task, on a "
                "LocalCluster here or on --scheduler's cluster. Finished points are cached ($HTS_EXPLORE_CACHE) "
                "and reused.",
    add_arguments=_add_arguments, run=run, more_files=_sweep_programs)
