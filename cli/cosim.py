"""``hts cosim``: programs on the Verilated RTL under cocotb, checked against the model."""

import json
import sys

from hts.base.arguments import Role, add_argument

from .arguments import add_config, add_rtl_accelerator, load_programs, nonnegative_int, print_outcome_failure, \
    rtl_flags, system, to_stderr, write_events
from .command import Command


def _add_arguments(parser):
    add_config(parser)
    add_argument(parser, Role.INPUT, "programs", nargs="+", metavar="PROG",
                 help="one program per process (.s, .hex or .bin)")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="initial memory and CPU load pauses (default 0)")
    add_argument(parser, Role.OUTPUT, "--waves", metavar="FILE.vcd",
                 help="write a VCD waveform of the run (builds a traced model)")
    add_argument(parser, Role.OUTPUT, "--timeline", metavar="FILE.json",
                 help="write the RTL's events as a Chrome trace-event timeline, as `hts run --timeline` does")
    parser.add_argument("--axi", action="store_true",
                        help="the scheduler behind its AXI4-Lite control registers (hts.hdl.axi_hts): cocotbext-axi "
                             "loads and starts the programs, the run ends on the interrupt, and the status "
                             "registers are checked against the model (a build of its own)")
    add_rtl_accelerator(parser)
    add_argument(parser, Role.OUTPUT, "--trace", metavar="FILE",
                 help="write the RTL's event trace as JSON lines, as `hts run --trace` writes the model's "
                      "(within a cycle in canonical order, hts.hdl.trace.canonical)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object: cycles, match, memory_digest, sim_cycles_per_s, ...")


def _summary(args, config, outcome, rtl_classes) -> dict:
    return {"programs": args.programs, "config": config.source, "seed": args.seed, "cycles": outcome.cycles,
            "model_cycles": outcome.model_cycles, "match": outcome.match, "difference": outcome.difference,
            "axi": args.axi, "rtl_accelerators": list(rtl_classes), "memory_digest": outcome.memory_digest,
            "sim_cycles_per_s": round(outcome.sim_cycles_per_s),
            "wall_s": round(outcome.wall_s, 3), "python_wakes": outcome.wakes,
            "faults": [dict(zip(("cycle", "pid", "pc", "cause"), fault)) for fault in outcome.faults]}


def _print_summary(args, config, outcome):
    print(f"programs     {' '.join(args.programs)}")
    print(f"config       {config.source}    seed {args.seed}")
    print(f"cycles       {outcome.cycles} (model: {outcome.model_cycles})")
    print(f"traces       {'match, cycle for cycle' if outcome.match else 'DIFFER'}")
    if args.axi:
        print(f"control      AXI4-Lite (cocotbext-axi): loaded, started, ended on the interrupt; "
              f"status registers {'as the model' if outcome.match else 'checked only if all else matched'}")
    print(f"memory       {outcome.memory_digest}  (digest of home memory)")
    print(f"speed        {outcome.sim_cycles_per_s:,.0f} simulated cycles/s "
          f"({outcome.wakes} of the cycles woke Python)")


def run(args) -> int:
    from hts.cosim.run import cosimulate
    from hts.cosim.scoreboard import Job, RunSpec
    config = system(args.config)
    programs = tuple(load_programs(args.programs, config))
    rtl_classes = tuple(args.rtl_accelerator)
    command = " ".join(["hts cosim", *args.programs, "-c", args.config, "--seed", str(args.seed),
                        *(["--axi"] if args.axi else []), *rtl_flags(rtl_classes)])
    spec = RunSpec(name=" ".join(args.programs), programs=programs, seed=args.seed, reproduce=command)
    keep_trace = args.trace is not None or args.timeline is not None
    job = Job(config, (spec,), keep_trace=keep_trace, axi=args.axi, rtl_classes=rtl_classes)
    [outcome] = cosimulate(job, waves=args.waves, progress=to_stderr)
    if args.trace:
        write_events(args.trace, outcome.trace)
    if args.timeline:
        from hts.flows.timeline import write_timeline
        write_timeline(args.timeline, outcome.trace, config, len(programs))
    if args.json:
        print(json.dumps(_summary(args, config, outcome, rtl_classes)))
    else:
        _print_summary(args, config, outcome)
    if not outcome.match:
        print_outcome_failure(outcome)
        return 1
    # The CPU port's faults matched the model's: report each at its source line.
    for cycle, pid, pc, cause in outcome.faults:
        print(f"{programs[pid].location(pc)}: process {pid} faulted at pc {pc} in cycle {cycle}, cause {cause} "
              f"(on the CPU port, as in the model; `hts run` gives the region)", file=sys.stderr)
    return 1 if outcome.faults else 0


COSIM = Command(
    "cosim", help="run programs on the Verilated RTL under cocotb, checked against the model",
    description="Co-simulate: the scheduler's Verilog, compiled by Verilator (once per configuration, cached), "
                "runs the programs while cocotb plays the CPU, the memory and Python accelerators. Every cycle's "
                "events are compared with the cycle model's, and the final home memory with the sequential "
                "executor's. Exits 1 on any mismatch, printing the first one and the command to repeat it.",
    add_arguments=_add_arguments, run=run)
