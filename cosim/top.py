"""The Verilog that cocotb drives: ``HTS`` with its accelerator cores left to the testbench.

:class:`CosimTop` is the whole scheduler with an :class:`ExternalCore` in every
accelerator shell, so that Python accelerators (``hts.cosim.testbench``) decide when each
task finishes and compute its data, through the same shell ports a real core uses. It
adds what makes a fast co-simulation possible: a cycle counter, and ``wake``, high in
every cycle in which the testbench has something to read or answer. The testbench sleeps
through all other cycles (an 18,000-cycle FFT costs little more than its two ends).

``hts.cosim.run`` converts it to Verilog, wraps it in :func:`clocked_wrapper` (the module
cocotb drives) and compiles both with Verilator, once per configuration.
"""

import re

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig
from hts.base.errors import HTSError
from hts.hdl.axi_hts import AxiHTS
from hts.hdl.axi_lite import axi_lite_signature
from hts.hdl.control import ADDR_BITS
from hts.hdl.hls import vector_add_core
from hts.hdl.hts import HTS
from hts.hdl.interfaces import (branch_read_signature, core_signature, cpu_signature, dma_signature, fault_layout,
                                delivered_task_layout, instance_numbering, region_layout, task_record_layout,
                                trace_layout)
from hts.hdl.primitives import held
from hts.hdl.trace import any_event

__all__ = ["ExternalCore", "CosimTop", "TOPLEVEL", "CLOCKED", "CYCLE_BITS", "PERIOD_NS", "RTL_CORES", "ports",
           "clocked_wrapper", "rtl_instances", "given_record"]

TOPLEVEL = "hts_cosim"
CLOCKED = "hts_cosim_clocked"
CYCLE_BITS = 40
PERIOD_NS = 10
# Accelerator functions with an RTL core that can stand in for the Python accelerator.
RTL_CORES = {"vector_add": vector_add_core}


def rtl_instances(config: SystemConfig, rtl_classes: tuple[str, ...]) -> list[int]:
    """Flat instances (``hts.hdl.asr`` numbering) of the classes named in ``rtl_classes``,
    in order: lane ``k`` of ``CosimTop.rtl_dma`` is the ``k``-th."""
    for name in rtl_classes:
        classes = [acc for acc in config.accelerators if acc.name == name]
        if not classes or classes[0].computes not in RTL_CORES:
            raise HTSError(f"no RTL core for accelerator class '{name}' (there are cores for the functions "
                             f"{', '.join(RTL_CORES)} only)")
    return [flat for flat, (class_index, _) in enumerate(instance_numbering(config))
            if config.accelerators[class_index].name in rtl_classes]


def given_record(m: Module, start, record, name: str):
    """The task record (task ID, metadata) a core was given: ``record`` with ``start``,
    kept from then on, so that a bench reads it at the task's grant."""
    return held(m, start, record, f"{name}_kept")


class ExternalCore(wiring.Component):
    """A core whose ``done`` and ``writeback`` the testbench drives (through :class:`CosimTop`).

    Ports: :func:`hts.hdl.interfaces.core_signature`. It moves no data over its DMA port:
    the Python accelerator reads and writes the testbench's memory directly, at the
    addresses of the task the shell holds.
    """

    def __init__(self, config: SystemConfig, class_index: int):
        super().__init__(core_signature(config))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.dma.read.eq(0), self.dma.write.eq(0)]
        return m


class CosimTop(wiring.Component):
    """``HTS`` with external cores, a cycle counter and a wake-up line for the testbench.

    Ports of the ``HTS`` (driven and read by the testbench as the CPU and the memory):
    ``cpu``, ``branch_read``, ``copyback_tm``, ``copyback_home``, ``events`` (the trace port); see
    ``hts.hdl.hts``. The accelerator DMA ports are tied off inside (external cores never
    request).

    With ``rtl_classes`` (class names), those classes' instances hold their RTL core
    (:data:`RTL_CORES`, e.g. ``hts.hdl.hls.vector_add_core``) instead: their
    ``core_done`` and ``core_writeback`` bits are unused, and their DMA ports, one lane of
    ``rtl_dma`` each (:func:`rtl_instances`), are the testbench's to serve.

    With ``axi=True`` the scheduler is :class:`hts.hdl.axi_hts.AxiHTS`: ``s_axi`` and
    ``irq`` take the place of ``cpu``, and two ports watch the CPU port inside, as the
    testbench's scoreboard needs them cycle for cycle: ``started`` (out, the ``start``
    pulse the control registers make) and ``fault`` (out, as ``cpu.fault``).

    Added ports, one bit or one entry per flat instance (``hts.hdl.asr`` numbering):

    - ``core_start`` (out): the instance's task starts this cycle (the cycle after its grant);
    - ``core_release`` (out): its task leaves this cycle (CDB grant or abort);
    - ``core_task`` (out): the task that starts (meaningful with ``core_start``);
    - ``core_record`` (out): the task ID and metadata of the task it holds, from
      ``core_start`` until its next start;
    - ``core_writes`` (out): the output region its shell holds, with retargets applied:
      where the accelerator writes at its grant;
    - ``core_done``, ``core_writeback`` (in, from the testbench): the core's status, as
      :class:`hts.hdl.accelerator.LatencyCore` would drive it;
    - ``grant`` (out): the CDB grants of this cycle;
    - ``cycle`` (out): cycles since the ``start`` pulse of the CPU port (0 in the cycle
      after it, the model's cycle 0);
    - ``copying`` (out): the copy-back engine is moving data (its DMA ports need answers);
    - ``wake`` (out): this cycle has an event, a memory request, a core start or release,
      or a copy in progress, or an RTL core's memory request.
    """

    def __init__(self, config: SystemConfig, axi: bool = False, rtl_classes: tuple[str, ...] = ()):
        instances = len(instance_numbering(config))
        self._axi = axi
        self._rtl = rtl_instances(config, rtl_classes)
        rtl = {"rtl_dma": Out(dma_signature(config)).array(len(self._rtl))} if self._rtl else {}
        control = {"s_axi": In(axi_lite_signature(ADDR_BITS)), "irq": Out(1), "started": Out(config.hts.processes),
                   "fault": Out(fault_layout(config))} if axi else {"cpu": In(cpu_signature(config))}
        super().__init__({
            **control,
            "branch_read": Out(branch_read_signature(config)),
            "copyback_tm": Out(dma_signature(config)),
            "copyback_home": Out(dma_signature(config)),
            "events": Out(trace_layout(config)),
            "core_start": Out(instances),
            "core_release": Out(instances),
            "core_task": Out(data.ArrayLayout(delivered_task_layout(config), instances)),
            "core_record": Out(data.ArrayLayout(task_record_layout(config), instances)),
            "core_writes": Out(data.ArrayLayout(region_layout(config), instances)),
            "core_done": In(instances),
            "core_writeback": In(instances),
            "grant": Out(instances),
            "cycle": Out(CYCLE_BITS),
            "copying": Out(1),
            "wake": Out(1),
            **rtl,
        })
        self.cores: list[wiring.Component] = []
        self.hts = (AxiHTS if axi else HTS)(config, core=self._new_core)

    def _new_core(self, config: SystemConfig, class_index: int) -> wiring.Component:
        if len(self.cores) in self._rtl:
            core = RTL_CORES[config.accelerators[class_index].computes](config)
        else:
            core = ExternalCore(config, class_index)
        self.cores.append(core)
        return core

    def elaborate(self, platform):
        m = Module()
        m.submodules.hts = hts = self.hts
        for name in ("s_axi" if self._axi else "cpu", "branch_read", "copyback_tm", "copyback_home"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(hts, name))
        if self._axi:
            scheduler, cpu = hts.scheduler, hts.scheduler.cpu
            m.d.comb += [self.irq.eq(hts.irq), self.started.eq(cpu.start), self.fault.eq(cpu.fault)]
            fault = self.fault
        else:
            scheduler, cpu, fault = hts, self.cpu, self.cpu.fault
        for flat, dma in enumerate(hts.accel_dma):
            if flat in self._rtl:
                wiring.connect(m, wiring.flipped(self.rtl_dma[self._rtl.index(flat)]), dma)
            else:
                m.d.comb += [dma.ready.eq(1), dma.rvalid.eq(0)]
        cores = self.cores
        m.d.comb += [
            self.events.eq(hts.events),
            self.core_start.eq(Cat(*(core.start for core in cores))),
            self.core_release.eq(Cat(*(core.release for core in cores))),
            self.grant.eq(scheduler.cdb.grant),
            self.copying.eq(scheduler.copy_back.copying),
        ]
        for flat, core in enumerate(cores):
            m.d.comb += [self.core_task[flat].eq(core.task), self.core_writes[flat].eq(core.writes),
                         self.core_record[flat].eq(given_record(m, core.start, core.record, f"core_{flat}"))]
            if flat not in self._rtl:
                m.d.comb += [core.done.eq(self.core_done[flat]), core.writeback.eq(self.core_writeback[flat])]
        m.d.sync += self.cycle.eq(Mux(cpu.start.any(), 0, self.cycle + 1))

        trace = self.events
        requests = [dma.read | dma.write for dma in self.rtl_dma] if self._rtl else []
        m.d.comb += self.wake.eq(any_event(trace) | self.branch_read.valid.any() | self.copying
                                 | self.copyback_tm.read | self.copyback_home.write | fault.valid
                                 | self.core_start.any() | self.core_release.any()
                                 | Cat(*requests).any())
        return m


def ports(verilog: str, module: str = TOPLEVEL) -> list[tuple[str, int, str]]:
    """``(direction, width, name)`` of every port of ``module``, as Yosys declared them."""
    body = verilog[verilog.index(f"module {module}("):]
    body = body[:body.index("endmodule")]
    declared = [(direction, int(msb) + 1 if msb else 1, name) for direction, msb, name
                in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M)]
    # A port in the header that the pattern missed would be left unconnected in the wrapper.
    header = body[body.index("(") + 1:body.index(")")]
    listed = {name.strip() for name in header.split(",")}
    missed = listed - {name for _, _, name in declared}
    if missed:
        raise RuntimeError(f"ports of {module} not understood: {sorted(missed)}")
    return declared


def clocked_wrapper(verilog: str) -> str:
    """SystemVerilog module :data:`CLOCKED` around :data:`TOPLEVEL`, the module cocotb drives.

    Two things make Verilator fast here (docs/results.md, "Co-simulation speed"):

    - the clock is generated inside (``verilator --timing``), so the simulator loop does
      not need a cocotb timer callback and a VPI write on every edge;
    - no logic reads a top-level input or a VPI-writable signal directly. Verilator
      re-evaluates all logic fed by those on every ``eval`` (its "ico" region), whatever
      changed; for this design that was three quarters of the time of an idle clock. The
      testbench writes the same-named registers here, and one process copies them into
      the scheduler's inputs only when one of them changes.

    ``clk`` is an output (the testbench waits on its edges); every other port keeps its name.
    """
    declared = [port for port in ports(verilog) if port[2] != "clk"]
    inputs = [(width, name) for direction, width, name in declared if direction == "input"]
    outputs = [(width, name) for direction, width, name in declared if direction == "output"]

    def vector(width):
        return f"[{width - 1}:0] " if width > 1 else ""

    half = PERIOD_NS // 2
    lines = ["`timescale 1ns/1ps",
             f"module {CLOCKED}(clk, {', '.join(name for _, name in outputs)});",
             "  output reg clk /*verilator public_flat_rd*/ = 0;",
             f"  always #{half} clk = ~clk;",
             *(f"  output {vector(width)}{name} /*verilator public_flat_rd*/;" for width, name in outputs),
             *(f"  reg {vector(width)}{name} /*verilator public_flat_rw*/ = 0;" for width, name in inputs),
             *(f"  reg {vector(width)}{name}_held = 0;" for width, name in inputs),
             "  initial forever begin",
             f"    @({' or '.join(name for _, name in inputs)});",
             *(f"    {name}_held = {name};" for _, name in inputs),
             "  end",
             f"  {TOPLEVEL} dut(.clk(clk), {', '.join(f'.{name}({name}_held)' for _, name in inputs)},",
             f"    {', '.join(f'.{name}({name})' for _, name in outputs)});",
             "endmodule"]
    return "\n".join(lines) + "\n"
