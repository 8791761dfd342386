"""``hts scaling``: the paper's Figure 10, cycles against instances per function."""

import json
import sys
from pathlib import Path

from hts.base.arguments import Role, add_argument
from hts.base.config import MAX_INSTANCES

from .arguments import add_config, int_list, system
from .command import Command

# Bands of the audio compression: its loop count is a 16-bit field.
MAX_BANDS = 0xFFFF


def _add_arguments(parser):
    add_config(parser)
    parser.add_argument("--bands", type=int_list(MAX_BANDS), default=[4, 8, 16, 32],
                        help="band counts (default 4,8,16,32)")
    parser.add_argument("--instances", type=int_list(MAX_INSTANCES), default=[1, 2, 3, 4, 6, 8],
                        help="instances per function (default 1,2,3,4,6,8)")
    parser.add_argument("--taken", action="store_true", help="make the branch taken (frequency domain, FFTs)")
    parser.add_argument("--scheduler", choices=("hts", "hts-nospec", "runtime"), default="hts")
    add_argument(parser, Role.OUTPUT, "--plot", metavar="FILE.png", default="scaling.png",
                 help="line chart (default scaling.png)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")


def run(args) -> int:
    from hts.assembler import assemble
    from hts.benchmarks import audio_compression
    from hts.flows.plots import plot_scaling
    from hts.models.report import scaling
    config = system(args.config)
    outcome = "taken: frequency domain" if args.taken else "not taken: time domain"

    def program(bands, system):
        return assemble(audio_compression(bands, args.taken), system, f"audio_compression(bands={bands})")

    print(f"audio compression, branch {outcome}, scheduler {args.scheduler}, on {config.source}", file=sys.stderr)
    rows = scaling(config, program, args.bands, args.instances, args.scheduler)
    plot = Path(args.plot)
    plot_scaling(rows, plot, f"Audio compression ({outcome}), {args.scheduler}")
    if args.json:
        print(json.dumps({"config": config.source, "taken": args.taken, "plot": str(plot), "rows": rows}))
        return 0
    print(f"{'bands':>6}" + "".join(f"{f'{n} inst.':>12}" for n in args.instances))
    for bands in args.bands:
        cycles = {row["instances"]: row["cycles"] for row in rows if row["bands"] == bands}
        print(f"{bands:>6}" + "".join(f"{cycles[n]:>12}" for n in args.instances))
    print(f"plot: {plot}")
    return 0


SCALING = Command(
    "scaling", help="audio compression: cycles against instances per function (Fig. 10)",
    description="Run the audio-compression benchmark for several band counts and numbers of accelerator "
                "instances per function, as the paper's Figure 10; print the table and draw it. Progress goes "
                "to stderr.",
    add_arguments=_add_arguments, run=run)
