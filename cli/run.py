"""``hts run``: programs on a scheduler model."""

from hts.base.arguments import Role, add_argument
from hts.base.config import DEFAULT_STEP_LIMIT, MAX_STEP_LIMIT
from hts.base.errors import HTSError

from .arguments import add_config, int_in, load_programs, nonnegative_int, report_faults, system
from .command import Command


def _add_arguments(parser):
    from hts.models.simulate import SCHEDULERS
    add_argument(parser, Role.INPUT, "programs", metavar="PROG", nargs="+",
                 help="assembly source or image (.hex/.bin); the n-th runs as process n")
    add_config(parser)
    parser.add_argument("--scheduler", choices=SCHEDULERS, default="hts",
                        help="hts (default), hts-nospec, runtime (software), naive, or sequential (in order)")
    add_argument(parser, Role.OUTPUT, "--trace", metavar="FILE", help="write the event trace as JSON lines")
    add_argument(parser, Role.OUTPUT, "--timeline", metavar="FILE.json",
                 help="write the run as a Chrome trace-event timeline (open it in Perfetto): a track per "
                      "accelerator instance, per process, and for copy-back and retarget")
    add_argument(parser, Role.OUTPUT, "--timeline-png", metavar="FILE.png",
                 help="with --timeline: also draw it with matplotlib")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="seed of the initial memory contents (default 0)")
    parser.add_argument("--max-steps", type=int_in(1, MAX_STEP_LIMIT), default=DEFAULT_STEP_LIMIT,
                        help="give up once a process has executed this many instructions, on every scheduler "
                             f"(default {DEFAULT_STEP_LIMIT:,}, at most {MAX_STEP_LIMIT:,})")
    parser.add_argument("--coverage", action="store_true",
                        help="print the functional coverage of the run (hits per bin; under \"coverage\" with "
                             "--json)")


def _check_options(args):
    from hts.models.hts import SCHEDULERS as CYCLE_SCHEDULERS
    if args.coverage and args.scheduler not in CYCLE_SCHEDULERS:
        raise HTSError(f"--coverage needs a cycle model ({', '.join(CYCLE_SCHEDULERS)}), "
                       f"not --scheduler {args.scheduler}")
    if args.timeline_png and not args.timeline:
        raise HTSError("--timeline-png draws the timeline: give --timeline FILE.json too")
    if args.timeline and args.scheduler not in CYCLE_SCHEDULERS:
        raise HTSError(f"--timeline needs a cycle model's trace ({', '.join(CYCLE_SCHEDULERS)}), "
                       f"not --scheduler {args.scheduler}")


def run(args) -> int:
    import json

    from hts.base.output import atomic_path
    from hts.models.coverage import StateCoverage, coverage_table, model_coverage
    from hts.models.memory import initial_memory
    from hts.models.report import run_summary
    from hts.models.simulate import simulate
    config = system(args.config)
    programs = load_programs(args.programs, config)
    _check_options(args)
    state = StateCoverage() if args.coverage else None
    result = simulate(config, programs, initial_memory(config, args.seed), args.scheduler,
                      max_steps=args.max_steps, observer=state.observe if state else None)
    summary = {"programs": args.programs, "config": config.source, "seed": args.seed, **run_summary(result)}
    coverage = model_coverage(result.trace, state) if state else None
    if coverage is not None:
        summary["coverage"] = coverage.as_dict()
    if args.trace:
        with atomic_path(args.trace) as tmp, open(tmp, "w") as out:
            result.trace.write_jsonl(out)
    if args.timeline:
        from hts.flows.timeline import write_timeline
        write_timeline(args.timeline, [event.as_dict() for event in result.trace.events], config, len(programs),
                       plot=args.timeline_png)
    if args.json:
        print(json.dumps(summary))
        return report_faults(result.faults)
    print(f"programs     {' '.join(args.programs)}")
    print(f"config       {config.source}    scheduler {args.scheduler}    seed {args.seed}")
    print(f"cycles       {result.cycles}")
    print(f"tasks        {result.tasks}")
    print(f"memory       {summary['memory_digest']}  (digest of home memory)")
    print("utilization  " + "  ".join(f"{name} {value:.1%}" for name, value in result.utilization.items()))
    if result.stalls:
        print("stalls       " + "  ".join(f"{reason} {count}" for reason, count in sorted(result.stalls.items())))
        print("             (cycles a process decoded nothing, by reason, summed over processes)")
    if coverage is not None:
        print(coverage_table(coverage))
    return report_faults(result.faults)


RUN = Command(
    "run", help="run programs on a scheduler model; cycles, utilization, stalls",
    description="Run one program per process on the reference model of a scheduler and print total cycles, "
                "tasks, utilization per accelerator class, the stall breakdown and a digest of home memory at "
                "the end.",
    add_arguments=_add_arguments, run=run)
