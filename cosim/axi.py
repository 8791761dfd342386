"""The control registers (``hts.hdl.control``) from a cocotb testbench, over cocotbext-axi.

:class:`ControlPort` is what a CPU's driver does, in Python: load a program word by word,
set windows and lengths, start processes, wait for the interrupt, read the counters.
What the status registers must read after a run is the scoreboard's
(``hts.cosim.scoreboard.expected_registers``).
"""

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from hts.base.config import Window
from hts.hdl.axi_lite import DATA_BITS
from hts.hdl.control import FAULT_IRQ_SHIFT, offset_of
from hts.isa import INSTRUCTION_BITS

__all__ = ["ControlError", "ControlPort", "STATUS_REGISTERS"]

#: The registers :meth:`ControlPort.status` reads after a run.
STATUS_REGISTERS = ("RUNNING", "ENDED", "FAULTED", "FAULT_PC", "FAULT_INFO", "IRQ_STATUS", "CYCLES", "TASKS")


class ControlError(RuntimeError):
    """An access the scheduler answered with ``SLVERR``."""


class ControlPort:
    """The AXI4-Lite control port of ``dut`` (signals ``s_axi__*``), clocked by ``dut.clk``."""

    def __init__(self, dut):
        self.dut = dut
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_"), dut.clk, dut.rst)
        for side in (self.master.write_if, self.master.read_if):
            side.log.setLevel("WARNING")         # not a line per access in the simulation log

    async def write(self, name: str, value: int, check: bool = True) -> AxiResp:
        response = await self.master.write(offset_of(name), value.to_bytes(4, "little"))
        if check and response.resp != AxiResp.OKAY:
            raise ControlError(f"write of {value:#x} to {name} answered {response.resp.name}")
        return response.resp

    async def read(self, name: str, check: bool = True) -> int:
        response = await self.master.read(offset_of(name), 4)
        if check and response.resp != AxiResp.OKAY:
            raise ControlError(f"read of {name} answered {response.resp.name}")
        return int.from_bytes(response.data, "little")

    async def read_cycles(self) -> int:
        low = await self.read("CYCLES_LO")
        return await self.read("CYCLES_HI") << DATA_BITS | low

    async def load(self, pid: int, words: list[int], window: Window):
        """Process ``pid``'s window, length and program, as a driver writes them."""
        await self.write("PID", pid)
        await self.write("WINDOW_BASE", window.base)
        await self.write("WINDOW_BLOCKS", window.blocks)
        await self.write("LENGTH", len(words))
        await self.write("LOAD_ADDR", 0)
        mask = (1 << DATA_BITS) - 1
        for word in words:
            for part in range(INSTRUCTION_BITS // DATA_BITS):
                await self.write("LOAD_DATA", word >> (DATA_BITS * part) & mask)

    async def start(self, processes: int) -> None:
        """Start processes ``0..processes-1`` with their end and fault interrupts enabled, and
        return at the falling edge of the model's cycle 0 (the one after the start pulse).
        The write's response comes later; the access goes on in the background."""
        everyone = (1 << processes) - 1
        await self.write("IRQ_ENABLE", everyone | everyone << FAULT_IRQ_SHIFT)
        self._start_write = cocotb.start_soon(self.write("START", everyone))
        while True:
            await FallingEdge(self.dut.clk)
            if int(self.dut.started.value):
                break
        await FallingEdge(self.dut.clk)

    async def wait_for_interrupt(self, cycles: int) -> bool:
        """Whether ``irq`` is high now or rises within ``cycles`` cycles."""
        for _ in range(cycles + 1):
            if int(self.dut.irq.value):
                return True
            await RisingEdge(self.dut.clk)
        return bool(int(self.dut.irq.value))

    async def status(self) -> dict[str, int]:
        """The registers of :data:`STATUS_REGISTERS`, CYCLES whole."""
        await self._start_write
        values = {name: await self.read(name) for name in STATUS_REGISTERS if name != "CYCLES"}
        values["CYCLES"] = await self.read_cycles()
        return values

