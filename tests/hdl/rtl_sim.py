"""Running RTL blocks in the Amaranth simulator, cycle by cycle, beside their models."""

import os
import random

from amaranth.sim import Simulator

__all__ = ["run", "seeds", "region_value"]


def run(dut, bench, waves: str | None = None):
    """Simulate ``dut`` with one clock and the async testbench ``bench(ctx)``.

    Set ``HTS_WAVES=dir`` to keep a VCD of every run there, named after the testbench.
    """
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    folder = waves or os.environ.get("HTS_WAVES")
    if folder:
        os.makedirs(folder, exist_ok=True)
        with sim.write_vcd(os.path.join(folder, f"{bench.__name__}.vcd")):
            sim.run()
    else:
        sim.run()


def seeds(count: int) -> list[random.Random]:
    """Seeded generators, so that a failure names the seed that reproduces it."""
    return [random.Random(seed) for seed in range(count)]


def region_value(region: tuple[int, int]) -> dict:
    return {"base": region[0], "blocks": region[1]}
