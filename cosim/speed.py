"""Co-simulation speed: cocotb-driven against the same Verilated model clocked from C++ alone.

``python -m hts.cosim.speed [-c CFG] [--cycles N]`` prints two figures for a configuration:

- **cocotb**: ``hts cosim benchmarks/audio_compression.s``, simulated cycles per second
  of the whole run (Python woken only on events);
- **C++ alone**: the same ``hts_cosim`` Verilog inside a small SystemVerilog wrapper that
  generates the clock itself (``verilator --binary --timing``), run for ``--cycles``
  cycles with no program and no Python. An idle scheduler is the cheapest for Verilator
  to evaluate, so this is an upper bound on what C++ alone reaches, and the ratio is a
  lower bound on the share of it the testbench keeps.
"""

import argparse
import subprocess
import time

from hts import benchmarks
from hts.assembler import assemble
from hts.config import load_config
from hts.synth import verilog_text
from hts.toolchain import tool_env

from .run import MAKE_FIX, build_key, cache_root, cosimulate
from .scoreboard import Job, RunSpec
from .top import TOPLEVEL, CosimTop

__all__ = ["cpp_cycles_per_s", "cocotb_cycles_per_s"]

_WRAPPER = """\
`timescale 1ns/1ps
module hts_speed;
  reg clk = 0;
  reg rst = 1;
  always #5 clk = ~clk;
  hts_cosim dut(.clk(clk), .rst(rst));
  initial begin
    #20 rst = 0;
    #({cycles} * 10);
    $finish;
  end
endmodule
"""


def cpp_cycles_per_s(config, cycles: int) -> float:
    """Cycles per second of the Verilated model clocked inside Verilog, no Python at all."""
    folder = cache_root() / f"speed-{build_key(config, False, 'cpp')}-{cycles}"
    binary = folder / "obj_dir" / "Vhts_speed"
    if not binary.exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{TOPLEVEL}.v").write_text(verilog_text(CosimTop(config), TOPLEVEL))
        (folder / "hts_speed.sv").write_text(_WRAPPER.format(cycles=cycles))
        subprocess.run(["verilator", "--binary", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
                        "--x-assign", "fast", "--x-initial", "fast", "-CFLAGS", "-O1 -std=c++20 -fcoroutines",
                        "-MAKEFLAGS", MAKE_FIX, "--top-module", "hts_speed", "hts_speed.sv", f"{TOPLEVEL}.v", "-j", "2"],
                       cwd=folder, env=tool_env(), check=True, stdout=subprocess.DEVNULL)
    started = time.perf_counter()
    subprocess.run([str(binary)], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return cycles / (time.perf_counter() - started)


def cocotb_cycles_per_s(config) -> tuple[float, bool]:
    """Simulated cycles per second of the audio-compression benchmark under cocotb, and whether it matched."""
    program = assemble(benchmarks.source("audio_compression"), config, "audio_compression.s")
    [outcome] = cosimulate(Job(config, (RunSpec(name="audio_compression", programs=(program,)),)))
    return outcome.sim_cycles_per_s, outcome.match


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hts.cosim.speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--config", default="default", help="preset or YAML file (default: default)")
    parser.add_argument("--cycles", type=int, default=200_000, help="cycles of the C++-only run")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    cocotb_speed, matched = cocotb_cycles_per_s(config)
    cpp_speed = cpp_cycles_per_s(config, args.cycles)
    print(f"config {config.source}")
    print(f"cocotb + Verilator, audio_compression: {cocotb_speed:12,.0f} cycles/s (traces match: {matched})")
    print(f"Verilator alone, idle, clock in HDL:   {cpp_speed:12,.0f} cycles/s")
    print(f"ratio                                  {cocotb_speed / cpp_speed:12.2f}")


if __name__ == "__main__":
    main()
