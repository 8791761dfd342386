"""Resources of every block of the whole scheduler: ``python -m hts.flows.synth_blocks``.

Yosys synthesizes the top level ``hts`` for ECP5 with the script of ``hts synth``
(:func:`hts.flows.synth.yosys_script`), but with ``-noflatten``: every Amaranth submodule stays
a module of its own, named after its place in the hierarchy (``hts.tracker``,
``hts.decode.gpr0``, ``hts.shell3.core``), and ``stat -json`` counts the cells of each.
Each module is charged to the block of ``hdl/hts.py`` it lies in, the submodule of the
top named first in its path, with the numbered instances of one kind taken together
(``shell0``, ``shell1``, ... are the block ``shell``). The cells of the module
``hts`` itself are the top-level glue. Nothing is optimized across block boundaries, so
the total is above the flattened count of ``hts synth``.
"""

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hts.base.config import PRESETS, SystemConfig, load_config
from hts.base.errors import HTSError
from hts.base.output import check_files
from hts.base.progress import heartbeat

from .plots import plot_synth_blocks
from .synth import TARGETS, Target, build, count_cells, module_name, run_yosys, verilog_text, yosys_script

__all__ = ["TOP", "NOTE", "block_of", "instances", "group_blocks", "design_total", "synthesize_blocks", "main"]

TOP = module_name("hts")

NOTE = ("Yosys -noflatten: nothing is optimized across block boundaries, so these counts are above "
        "the flattened total of `hts synth`.")


def block_of(module: str) -> str:
    """The block a module is charged to: ``hts.shell3.core`` -> ``shell``; ``hts`` -> ``hts``."""
    submodule = module.removeprefix(f"{TOP}.").split(".")[0]
    # hdl/hts.py numbers the instances of a kind: queue{pid}, shell{i}.
    return re.fullmatch(r"(.*?)\d*", submodule).group(1)


def _cells_by_module(stat: dict) -> dict[str, dict[str, int]]:
    # stat names a module `\hts.tlb` but an instance of it a cell of type `hts.tlb`.
    return {name.removeprefix("\\"): module["num_cells_by_type"] for name, module in stat["modules"].items()}


def instances(cells: dict[str, dict[str, int]], module: str = TOP) -> Counter:
    """How many times each module occurs in the design under ``module``."""
    counts = Counter({module: 1})
    for cell, number in cells[module].items():
        if cell in cells:
            counts.update({name: number * times for name, times in instances(cells, cell).items()})
    return counts


def _is_block_instance(module: str) -> bool:
    """The top or a submodule of it, not a module nested deeper (decode's ``hts.decode.gpr0``)."""
    return "." not in module.removeprefix(f"{TOP}.")


def _own_cells(cells: dict[str, dict[str, int]], module: str) -> Counter:
    """The cells of a module other than instances of modules (those count in their own module)."""
    return Counter({cell: number for cell, number in cells[module].items() if cell not in cells})


def group_blocks(stat: dict, target: Target) -> list[dict]:
    """One row per block from ``stat -json`` of the hierarchical design, most LUT4 sites first."""
    cells = _cells_by_module(stat)
    block_cells, block_instances, block_modules = {}, Counter(), {}
    for module, times in instances(cells).items():
        block = block_of(module)
        own = _own_cells(cells, module)
        block_cells.setdefault(block, Counter()).update({cell: number * times for cell, number in own.items()})
        block_modules.setdefault(block, []).append(module)
        if _is_block_instance(module):
            block_instances[block] += times
    rows = [{"block": block, "instances": block_instances[block], "modules": sorted(block_modules[block]),
             **count_cells(block_cells[block], target)} for block in block_cells]
    return sorted(rows, key=lambda row: (-row["lut_sites"], row["block"]))


def design_total(stat: dict, target: Target) -> dict:
    """Counts of the whole design, as Yosys sums them over the hierarchy (instances of modules left out)."""
    modules = _cells_by_module(stat)
    return count_cells({cell: number for cell, number in stat["design"]["num_cells_by_type"].items()
                        if cell not in modules}, target)


def synthesize_blocks(config: SystemConfig, target: str = "ecp5") -> dict:
    """Synthesize the whole scheduler without flattening; its resources block by block.
    Progress goes to stderr."""
    fpga = TARGETS[target]
    started = time.monotonic()

    def step(message: str):
        print(f"  [{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    step(f"Verilog of the whole scheduler ({TOP}) on {config.source}")
    # Amaranth writes Verilog with its own WebAssembly Yosys: the first start compiles it.
    with heartbeat("Verilog", step):
        text = verilog_text(build(config, "hts"), TOP)
    with tempfile.TemporaryDirectory(prefix="hts_synth_blocks_") as tmp:
        workdir = Path(tmp)
        (workdir / "hts.v").write_text(text)
        (workdir / "hts.ys").write_text(yosys_script(fpga, "hts.v", TOP, "hts.stat.json", flatten=False))
        step(f"yosys: {fpga.synth} -noflatten of {TOP}, one module per submodule "
             "(the long step: a few minutes on the default configuration)")
        run_yosys("hts.ys", "hts.log", workdir, "yosys -noflatten", step)
        stat = json.loads((workdir / "hts.stat.json").read_text())
    step("done")
    return {"config": config.source, "target": fpga.name, "top": TOP, "note": NOTE,
            "blocks": group_blocks(stat, fpga), "total": design_total(stat, fpga)}


_COLUMNS = (("instances", "instances"), ("LUT4", "luts"), ("CCU2C", "carry_cells"), ("DPR16X4", "lut_rams"),
            ("LUT4 sites", "lut_sites"),
            ("FFs", "ffs"), ("DP16KD", "brams"), ("DSP", "dsps"))


def _block_label(block: str) -> str:
    return f"{block} (top-level glue)" if block == TOP else block


def _print_table(result: dict):
    widths = [max(len(title), 6) + 2 for title, _ in _COLUMNS]
    print(f"{result['top']} on {result['config']}, {result['target']}, block by block")
    print(f"{'block':<24}" + "".join(f"{title:>{width}}" for (title, _), width in zip(_COLUMNS, widths)))
    total = {**result["total"], "instances": ""}
    for label, row in [*((_block_label(row["block"]), row) for row in result["blocks"]), ("total", total)]:
        print(f"{label:<24}" + "".join(f"{row[key]:>{width}}" for (_, key), width in zip(_COLUMNS, widths)))
    print(result["note"])


def _plot(result: dict, path: str):
    sites = {_block_label(row["block"]) + (f" x{row['instances']}" if row["instances"] > 1 else ""): row["lut_sites"]
             for row in result["blocks"]}
    plot_synth_blocks(sites, path, f"{result['top']} on {result['config']}: LUT4 sites by block "
                                   f"({result['target']}, Yosys -noflatten)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hts.flows.synth_blocks",
        description="Synthesize the whole scheduler for ECP5 without flattening (Yosys -noflatten) and print "
                    "its resources block by block. Progress goes to stderr.")
    parser.add_argument("-c", "--config", metavar="CFG", default="default",
                        help=f"system configuration: a preset ({', '.join(PRESETS)}) or a YAML file (default: default)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: blocks and total")
    parser.add_argument("--plot", metavar="FILE.png", help="also draw the LUT4 sites of each block (PNG)")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        if args.plot:
            check_files([args.plot], [])
        result = synthesize_blocks(config)
        if args.plot:
            _plot(result, args.plot)
            result["plot"] = args.plot
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
    else:
        _print_table(result)
        if args.plot:
            print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
