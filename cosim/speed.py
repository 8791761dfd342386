"""Co-simulation speed: cocotb against the same Verilated model driven from C++ alone.

``python -m hts.cosim.speed [-c CFG] [--repeat N]`` runs ``benchmarks/audio_compression.s``
under cocotb (``hts cosim``) with the testbench recording its inputs, replays them on the
same build from C++ with no Python (:mod:`hts.cosim.replay`, which checks the replay saw
the same wake cycles and events), and prints both speeds in simulated cycles per second
over the same simulated stretch (the run; program loading excluded), and their ratio.
Each is the fastest of ``--repeat`` runs: the runs are short, and a 2-core machine is noisy.
"""

import argparse

from hts import benchmarks
from hts.assembler import assemble
from hts.base.config import load_config

from .replay import replay
from .run import build, cosimulate
from .scoreboard import Job, RunSpec

__all__ = ["speeds"]


def speeds(config, repeat: int) -> tuple[float, float, bool]:
    """Cycles per second of audio compression under cocotb and replayed from C++; whether cocotb's run matched."""
    program = assemble(benchmarks.source("audio_compression"), config, "audio_compression.s")
    runs = tuple(RunSpec(name=f"audio_compression {index}", programs=(program,)) for index in range(repeat))
    outcomes = cosimulate(Job(config, runs, record=True))
    last = outcomes[-1]        # its stimulus holds every write since time 0
    cpp_seconds = min(replay(build(config), last.stimulus) for _ in range(repeat))
    return (max(outcome.sim_cycles_per_s for outcome in outcomes), last.cycles / cpp_seconds,
            all(outcome.match for outcome in outcomes))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hts.cosim.speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--config", default="default", help="preset or YAML file (default: default)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, the fastest counts (default: 5)")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    cocotb_speed, cpp_speed, matched = speeds(config, args.repeat)
    print(f"config {config.source}")
    print(f"cocotb + Verilator, audio_compression:  {cocotb_speed:12,.0f} cycles/s (traces match: {matched})")
    print(f"same model, C++ replay of its inputs:   {cpp_speed:12,.0f} cycles/s")
    print(f"ratio                                   {cocotb_speed / cpp_speed:12.2f}")


if __name__ == "__main__":
    main()
