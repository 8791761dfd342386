"""The AXI4-Lite control block (``hts.hdl.control``): every register of the map reads back or
acts as documented, the handshakes in any order, and the map in docs/hardware.md is the RTL's."""

import re
from pathlib import Path

import pytest
from amaranth.hdl import Const
from amaranth.sim import Simulator

from hts.base.config import load_config
from hts.hdl.axi_lite import OKAY, SLVERR
from hts.hdl.control import FAULT_IRQ_SHIFT, IDENTIFIER, REGISTERS, AxiLiteControl, offset_of
from hts.isa import FaultCause

pytestmark = pytest.mark.rtl

HARDWARE_DOC = Path(__file__).parents[2] / "docs" / "hardware.md"
CONFIG = load_config("large")           # four processes: the per-process bits mean something
PROCESSES = CONFIG.hts.processes


class Bus:
    """A minimal AXI4-Lite manager in the Amaranth simulator, for one block test.

    ``order`` chooses when a write's data goes out: with its address, before, or after."""

    def __init__(self, ctx, dut):
        self.ctx, self.bus = ctx, dut.bus

    async def write(self, name: str, value: int, strb: int = 0b1111, order: str = "together") -> int:
        ctx, bus = self.ctx, self.bus
        address = offset_of(name) if isinstance(name, str) else name
        if order in ("together", "address_first"):
            ctx.set(bus.awvalid, 1), ctx.set(bus.awaddr, address)
        if order in ("together", "data_first"):
            ctx.set(bus.wvalid, 1), ctx.set(bus.wdata, value), ctx.set(bus.wstrb, strb)
        ctx.set(bus.bready, 1)
        for _ in range(8):
            await ctx.tick()
            if ctx.get(bus.awvalid) == 0 and ctx.get(bus.wvalid) == 0 and ctx.get(bus.bvalid):
                response = ctx.get(bus.bresp)
                await ctx.tick()          # bready high: the response is taken
                return response
            if order == "address_first" and ctx.get(bus.awvalid) == 0:
                ctx.set(bus.wvalid, 1), ctx.set(bus.wdata, value), ctx.set(bus.wstrb, strb)
            if order == "data_first" and ctx.get(bus.wvalid) == 0:
                ctx.set(bus.awvalid, 1), ctx.set(bus.awaddr, address)
            self._drop_taken()
        raise AssertionError(f"no write response for {name}")

    def _drop_taken(self):
        # A channel's valid falls in the cycle after its handshake (ready was high at the edge).
        ctx, bus = self.ctx, self.bus
        if ctx.get(bus.awready) == 0 and ctx.get(bus.awvalid):
            ctx.set(bus.awvalid, 0)
        if ctx.get(bus.wready) == 0 and ctx.get(bus.wvalid):
            ctx.set(bus.wvalid, 0)

    async def read(self, name) -> tuple[int, int]:
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.arvalid, 1), ctx.set(bus.araddr, offset_of(name) if isinstance(name, str) else name)
        ctx.set(bus.rready, 1)
        await ctx.tick()
        ctx.set(bus.arvalid, 0)
        assert ctx.get(bus.rvalid)
        value, response = ctx.get(bus.rdata), ctx.get(bus.rresp)
        await ctx.tick()
        return value, response

    async def value(self, name: str) -> int:
        value, response = await self.read(name)
        assert response == OKAY, name
        return value


def _plain(value) -> int:
    """A sampled field as an integer (a nested layout's as its bits)."""
    return value if isinstance(value, int) else Const.cast(value).value


def _simulate(bench):
    dut = AxiLiteControl(CONFIG)
    watched = {"start": [], "load": [], "length": [], "window": []}

    async def watch(ctx):
        async for _, _, start, load, length, window in ctx.tick().sample(
                dut.cpu.start, dut.cpu.load, dut.cpu.length, dut.cpu.window):
            if start:
                watched["start"].append(start)
            for name, port in (("load", load), ("length", length), ("window", window)):
                if port.valid:
                    watched[name].append({field: _plain(getattr(port, field)) for field in port.shape().members})

    async def main(ctx):
        await bench(ctx, dut, Bus(ctx, dut), watched)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(watch)
    sim.add_testbench(main)
    sim.run()
    return watched


def test_identity_and_read_write_registers_read_back():
    async def bench(ctx, dut, bus, watched):
        assert await bus.value("ID") == IDENTIFIER
        assert await bus.value("PROCESSES") == PROCESSES
        for name, value in (("IRQ_ENABLE", 0xA5A5_0F0F), ("PID", 3), ("LOAD_ADDR", 17), ("WINDOW_BASE", 5)):
            assert await bus.write(name, value) == OKAY
            assert await bus.value(name) == value, name
    _simulate(bench)


def test_refused_writes_change_nothing():
    async def bench(ctx, dut, bus, watched):
        await bus.write("PID", 2)
        assert await bus.write("PID", PROCESSES) == SLVERR
        assert await bus.value("PID") == 2
        assert await bus.write("LOAD_ADDR", CONFIG.hts.program_words) == SLVERR
        assert await bus.write("LENGTH", CONFIG.hts.program_words + 1) == SLVERR
        assert await bus.write("WINDOW_BASE", CONFIG.memory.blocks + 1) == SLVERR
        await bus.write("WINDOW_BASE", CONFIG.memory.blocks - 2)
        assert await bus.write("WINDOW_BLOCKS", 3) == SLVERR
        assert await bus.write("START", 1 << PROCESSES) == SLVERR
        assert await bus.write("IRQ_ENABLE", 0xFF, strb=0b0001) == SLVERR     # full words only
        assert await bus.value("IRQ_ENABLE") == 0
        for read_only in ("ID", "RUNNING", "CYCLES_LO", "TASKS"):
            assert await bus.write(read_only, 1) == SLVERR, read_only
        assert await bus.write(0x100, 1) == SLVERR                            # unmapped
        assert (await bus.read(0x100))[1] == SLVERR
        assert (await bus.read("LOAD_DATA"))[1] == SLVERR                     # write-only
    watched = _simulate(bench)
    assert watched == {"start": [], "load": [], "length": [], "window": []}


def test_a_program_loads_word_by_word_and_the_start_pulses_once():
    words = [0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210, (1 << 128) - 1]

    async def bench(ctx, dut, bus, watched):
        await bus.write("PID", 1)
        await bus.write("WINDOW_BASE", 4)
        await bus.write("WINDOW_BLOCKS", 8)
        await bus.write("LENGTH", len(words))
        await bus.write("LOAD_ADDR", 9)
        await bus.write("LOAD_DATA", 0xDEAD)          # a partial instruction ...
        await bus.write("LOAD_ADDR", 9)               # ... that writing LOAD_ADDR restarts
        for word in words:
            for part, order in zip(range(4), ("together", "address_first", "data_first", "together")):
                assert await bus.write("LOAD_DATA", word >> (32 * part) & 0xFFFF_FFFF, order=order) == OKAY
        assert await bus.value("LOAD_ADDR") == 9 + len(words)
        await bus.write("START", 0b0110)
    watched = _simulate(bench)
    assert watched["window"] == [{"valid": 1, "pid": 1, "base": 4, "blocks": 8}]
    assert watched["length"] == [{"valid": 1, "pid": 1, "words": 2}]
    assert [(load["pid"], load["addr"], load["word"]) for load in watched["load"]] == [(1, 9, words[0]),
                                                                                       (1, 10, words[1])]
    assert watched["start"] == [0b0110]


def test_a_running_process_refuses_start_and_loads():
    async def bench(ctx, dut, bus, watched):
        ctx.set(dut.cpu.running, 0b0100)
        assert await bus.value("RUNNING") == 0b0100
        await bus.write("PID", 2)
        for name, value in (("START", 0b0101), ("LOAD_DATA", 1), ("LENGTH", 1), ("WINDOW_BLOCKS", 1)):
            assert await bus.write(name, value) == SLVERR, name
        await bus.write("PID", 1)
        assert await bus.write("LENGTH", 1) == OKAY
        assert await bus.write("START", 0b0001) == OKAY
    watched = _simulate(bench)
    assert watched["start"] == [0b0001] and len(watched["length"]) == 1


def test_status_counters_and_the_interrupt():
    async def bench(ctx, dut, bus, watched):
        await bus.write("START", 0b0011)
        ctx.set(dut.cpu.running, 0b0011)
        ctx.set(dut.completed, 2)
        for _ in range(5):
            await ctx.tick()
        ctx.set(dut.completed, 0)
        # Process 1 faults at pc 7, then both end; only process 0's end is enabled.
        await bus.write("IRQ_ENABLE", 0b0001)
        ctx.set(dut.cpu.fault, {"valid": 1, "pid": 1, "pc": 7, "cause": FaultCause.ILLEGAL})
        await ctx.tick()
        ctx.set(dut.cpu.fault, {"valid": 0, "pid": 0, "pc": 0, "cause": FaultCause.ILLEGAL})
        ctx.set(dut.cpu.ended, 0b0010)
        await ctx.tick()
        ctx.set(dut.cpu.ended, 0), ctx.set(dut.cpu.running, 0b0001)
        await ctx.tick()
        assert not ctx.get(dut.irq)                               # process 1's events are not enabled
        ctx.set(dut.cpu.ended, 0b0001)
        await ctx.tick()
        ctx.set(dut.cpu.ended, 0), ctx.set(dut.cpu.running, 0)
        await ctx.tick()
        assert ctx.get(dut.irq)
        cycles = await bus.value("CYCLES_LO")
        assert await bus.value("CYCLES_HI") == 0
        assert await bus.value("ENDED") == 0b0011
        assert await bus.value("FAULTED") == 0b0010
        assert await bus.value("FAULT_PC") == 7
        assert await bus.value("FAULT_INFO") == 1 | FaultCause.ILLEGAL.value << 8
        assert await bus.value("TASKS") == 10
        status = await bus.value("IRQ_STATUS")
        assert status == 0b0011 | 0b0010 << FAULT_IRQ_SHIFT
        await bus.write("IRQ_STATUS", 0b0001)                     # write 1 to clear
        assert await bus.value("IRQ_STATUS") == 0b0010 | 0b0010 << FAULT_IRQ_SHIFT
        assert not ctx.get(dut.irq)
        assert await bus.value("CYCLES_LO") == cycles              # stopped with the last process
        await bus.write("START", 0b0010)
        assert await bus.value("ENDED") == 0b0001                  # a start clears its process's bits
        assert await bus.value("FAULTED") == 0
        assert await bus.value("TASKS") == 0
    _simulate(bench)


def test_cycles_count_the_cycles_a_process_runs():
    async def bench(ctx, dut, bus, watched):
        await bus.write("START", 0b0001)
        ctx.set(dut.cpu.running, 0b0001)
        for _ in range(37):
            await ctx.tick()
        ctx.set(dut.cpu.running, 0)
        await ctx.tick()
        assert await bus.value("CYCLES_LO") == 37
    _simulate(bench)


def test_the_register_map_in_the_docs_is_the_rtl_map():
    text = HARDWARE_DOC.read_text()
    section = text[text.index("### Register map"):]
    rows = re.findall(r"^\| `?(0x[0-9A-Fa-f]+)`? \| `(\w+)` \| (\w+) \|", section, re.M)
    assert [(int(offset, 16), name, access) for offset, name, access in rows] == [
        (register.offset, register.name, register.access) for register in REGISTERS]


@pytest.mark.parametrize("register", REGISTERS, ids=lambda register: register.name)
def test_every_register_is_tested_here(register):
    """Each register of the map appears in one of the tests above by name."""
    assert f'"{register.name}"' in Path(__file__).read_text()
