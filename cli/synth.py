"""``hts synth``: an RTL block through Yosys and nextpnr, its resources and Fmax."""

import json

from hts.base.arguments import Role, add_argument

from .arguments import add_config, positive_float, system
from .command import Command
from .verilog import add_block_argument


def _add_arguments(parser):
    from hts.flows.synth import TARGETS
    add_config(parser)
    add_block_argument(parser)
    parser.add_argument("--target", choices=TARGETS, default="ecp5", help="FPGA family (default ecp5: LFE5U-85F)")
    parser.add_argument("--freq", metavar="MHZ", type=positive_float, default=100.0,
                        help="clock constraint for place and route, in MHz (default 100)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    add_argument(parser, Role.OUTPUT, "--plot", metavar="FILE.png",
                 help="also draw the register inputs by the logic levels in front of them, by block (PNG)")
    parser.add_argument("--no-place", action="store_true",
                        help="Yosys only: the counts and the logic levels, no place and route and no Fmax "
                             "(a few minutes on the default instead of 10 to 20)")


def _resource_rows(result: dict) -> list[tuple]:
    if result["placed"]:
        fmax_note = f"ports registered; clock constraint {result['fmax_constraint_mhz']:g} MHz"
    elif not result["fits"]:
        fmax_note = f"not placed: the logic does not fit the {result['device']}"
    else:
        fmax_note = "not placed: --no-place"
    return [("LUTs", "LUT4", result["luts"], ""),
            ("carry", "CCU2C", result["carry_cells"], "2 LUT4 sites each"),
            ("LUT RAM", "DPR16X4", result["lut_rams"], f"6 LUT4 sites each: {result['lut_sites']} LUT4 sites in all"),
            ("FFs", "TRELLIS_FF", result["ffs"], ""),
            ("block RAM", "DP16KD", result["brams"], ""),
            ("DSPs", "MULT18X18D", result["dsps"], ""),
            ("Fmax", "MHz", "-" if result["fmax_mhz"] is None else f"{result['fmax_mhz']:.1f}", fmax_note)]


def _print_levels(levels: dict):
    print("register inputs by logic levels in front of them: "
          + ", ".join(f"{depth}: {count}" for depth, count in levels["histogram"].items()))
    print("deepest by block: " + ", ".join(f"{block} {max(histogram)}"
                                           for block, histogram in levels["by_block"].items()))
    deep = levels["deep_routes"]
    print(f"routes of the inputs at {deep['from_levels']} levels or more, launching block → capturing block: "
          + ", ".join(f"{route} {count}" for route, count in list(deep["routes"].items())[:8]))


def print_table(result: dict):
    print(f"{result['block']} (module {result['module']}) on {result['config']}: "
          f"{result['device']} ({result['target']}), out of context")
    print(f"{'resource':<12}{'cells':<12}{'count':>8}")
    for name, cells, count, note in _resource_rows(result):
        print(f"{name:<12}{cells:<12}{count:>8}  {note}".rstrip())
    if result["placed"]:
        print("placed: " + ", ".join(f"{cell} {use['used']}/{use['available']}"
                                     for cell, use in result["utilization"].items()) + " (port registers included)")
    if result.get("logic_levels"):
        _print_levels(result["logic_levels"])
    path = result.get("critical_path")
    if path:
        print(f"critical path: {path['delay_ns']:.1f} ns ({path['routing_ns']:.1f} routing, {path['logic_ns']:.1f} "
              f"logic, {path['logic_steps']} logic cells, each half of a carry cell counted) "
              f"from {path['cells'][0]} to {path['cells'][-1]}")


def run(args) -> int:
    from hts.flows.plots import plot_logic_levels
    from hts.flows.synth import DEFAULT_BLOCK, synthesize
    config = system(args.config)
    block = args.block or DEFAULT_BLOCK
    result = synthesize(config, block, args.target, args.freq, place=not args.no_place)
    if args.plot and "logic_levels" in result:
        plot_logic_levels(result["logic_levels"]["by_block"], args.plot,
                          f"{block} on {config.source}: register inputs by logic levels ({result['target']})")
        result["plot"] = args.plot
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
        if "plot" in result:
            print(f"plot: {args.plot}")
    return 0


SYNTH = Command(
    "synth", help="synthesize an RTL block for an FPGA: LUTs, FFs, BRAM, DSPs, Fmax",
    description="Synthesize an RTL block with Yosys and place and route it out of context with nextpnr (both "
                "from YoWASP), and report LUT4s, CCU2C carry cells, flip-flops, block RAMs, DSPs and Fmax, read "
                "from the tools' JSON reports. Fmax is measured with a register on every port of the block. "
                "Progress goes to stderr; the first run of each tool compiles it (about a minute).",
    add_arguments=_add_arguments, run=run)
