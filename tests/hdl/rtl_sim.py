"""Running RTL blocks in the Amaranth simulator, cycle by cycle, beside their models."""

import os
import random

import pytest
from amaranth.sim import Simulator


__all__ = ["run", "seeds", "region_value", "drive_retarget", "assert_caught"]


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


def drive_retarget(ctx, dut, retarget, copy_port=None, arriving_reads=None):
    """A retarget of TLB entry ``retarget`` (or none) on a block's retarget inputs.

    Blocks that rewrite by producer tag have ``retarget_producer``; the others ignore it.
    Blocks that take a task from decode also have ``retarget_slot``: the entry is in TLB
    slot 0, and ``copy_port`` gets the slot the arriving task's ``arriving_reads`` were
    remapped through: slot 0 if they are the retargeted copy, else slot 1 where there is
    one (a copy the retarget must leave alone; to it, home is the same).
    """
    ctx.set(dut.retarget, retarget is not None)
    tm = None if retarget is None else (retarget.tm_base, retarget.home[1])
    if copy_port is not None:
        other = 0b10 if len(copy_port) > 1 else 0
        ctx.set(copy_port, 0b01 if tm is not None and arriving_reads == tm else other)
    if retarget is None:
        return
    if hasattr(dut, "retarget_slot"):
        ctx.set(dut.retarget_slot, 0b01)
    ctx.set(dut.retarget_tm, region_value(tm))
    ctx.set(dut.retarget_home, region_value(retarget.home))
    if hasattr(dut, "retarget_producer"):
        ctx.set(dut.retarget_producer, retarget.producer)


def assert_caught(dut, ports, match: str):
    """Raising ``ports`` together for one cycle trips the block's simulation assert."""
    async def bench(ctx):
        for port in ports:
            ctx.set(getattr(dut, port), 1)
        await ctx.tick()

    with pytest.raises(AssertionError, match=match):
        run(dut, bench)
