"""``hts verilog``: an RTL block as linted Verilog, and the SoC wrapper."""

import sys

from hts.base.arguments import Role, add_argument
from hts.base.errors import HTSError

from .arguments import add_config, system
from .command import Command


def add_block_argument(parser):
    from hts.flows.synth import DEFAULT_BLOCK
    add_argument(parser, Role.NO_FILE, "--block", metavar="NAME", help=f"RTL block (default: {DEFAULT_BLOCK})")


def _add_arguments(parser):
    add_config(parser)
    add_block_argument(parser)
    add_argument(parser, Role.OUTPUT, "-o", "--output", metavar="FILE.v", required=True, help="Verilog file to write")
    add_argument(parser, Role.OUTPUT, "--soc-top", metavar="FILE.v",
                 help="with --block axi_hts: also write module hts_axi_top, the scheduler with SoC port "
                      "names (s_axi_control_*, aclk, aresetn, interrupt) and Vivado interface attributes")


def run(args) -> int:
    from hts.base.progress import heartbeat
    from hts.flows.synth import DEFAULT_BLOCK, module_name, write_verilog
    config = system(args.config)
    block = args.block or DEFAULT_BLOCK
    if args.soc_top and block != "axi_hts":
        raise HTSError(f"--soc-top wraps the block axi_hts, not {block!r} (add --block axi_hts)")
    # Elaborating the whole scheduler and Amaranth's WebAssembly Yosys (compiled on its first
    # start) leave this silent for a minute or more: say that it still runs, on stderr.
    with heartbeat(f"Verilog of {block}"):
        verilog, warnings = write_verilog(config, block, args.output)
    for warning in warnings:
        print(warning, file=sys.stderr)
    lint = f"{len(warnings)} Verilator warning(s)" if warnings else "lints clean"
    print(f"{block} on {config.source}: module {module_name(block)} -> {args.output} ({lint})")
    if args.soc_top:
        from hts.flows.soc_top import SOC_TOP, write_soc_top
        write_soc_top(verilog, args.soc_top)
        print(f"SoC top: module {SOC_TOP} (AXI4-Lite s_axi_control, aclk, aresetn, interrupt) -> {args.soc_top}")
    return 0


def _description() -> str:
    from hts.flows.synth import LINT_WAIVERS
    return ("Convert an RTL block, sized by the configuration, to Verilog (module hts_BLOCK) and lint it with "
            "`verilator --lint-only -Wall`, leaving out the warnings Amaranth's output always gives ("
            + ", ".join(LINT_WAIVERS) + "). Other warnings are printed; on a lint error nothing is written.")


VERILOG = Command(
    "verilog", help="write an RTL block as Verilog and lint it with Verilator",
    description=_description(), add_arguments=_add_arguments, run=run)
