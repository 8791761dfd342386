"""``hts bench``: every benchmark on every scheduler, the paper's Figures 7-9 as a table and a chart."""

import json
import sys

from hts.base.arguments import Role, add_argument
from hts.flows.fanout import add_arguments as add_fanout_arguments

from .arguments import add_config, nonnegative_int, system, to_stderr
from .command import Command


def _add_arguments(parser):
    add_config(parser)
    add_argument(parser, Role.OUTPUT, "--plot", metavar="FILE.png", default="benchmarks.png",
                 help="chart (default benchmarks.png)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="seed of the initial memory contents (default 0)")
    add_fanout_arguments(parser)


def run(args) -> int:
    from hts.flows.bench import bench, bench_cases, markdown_table
    from hts.flows.plots import plot_benchmarks
    config = system(args.config)
    table, errors = bench(bench_cases(config, args.seed), args.scheduler, args.workers, progress=to_stderr)
    for error in errors:
        print(f"FAILED to run {error}", file=sys.stderr)
    plot_benchmarks(table, args.plot, f"benchmarks on {config.source}")
    if args.json:
        print(json.dumps({"config": config.source, "plot": str(args.plot), "rows": table, "errors": errors}))
    else:
        print(markdown_table(table))
        print(f"plot: {args.plot}")
    return 0 if not errors and all(row["memory_matches_sequential"] for row in table) else 1


BENCH = Command(
    "bench", help="every benchmark on every scheduler: table and chart",
    description="Run the paper's nine synthetic benchmarks and the audio compression (both branch outcomes) on "
                "every scheduler; print a Markdown table of cycles and naive/HTS ratios, check every final "
                "memory against sequential execution (exit 1 if any differs), and draw a chart normalised to "
                "naive.",
    add_arguments=_add_arguments, run=run)
