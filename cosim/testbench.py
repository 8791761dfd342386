"""cocotb testbench of :class:`hts.cosim.top.CosimTop`: Python plays the CPUs, the memory and the accelerators.

:class:`TB` drives the Verilated scheduler through its ports only:

- **CPU**: loads each process's program through the CPU port (with seeded random pauses
  between words), pulses ``start``, and listens to ``ended`` and ``fault``;
- **memory, branch reads, DMA and accelerators**: an :class:`hts.cosim.environment.Environment`,
  the surroundings the Amaranth-simulator harness (``tests/hdl/system_sim.py``) plays
  too: one memory; branch reads answered ``timing.memory_latency`` cycles after the
  request with the word as it stands then; the copy-back engine's DMA ports, and those
  of RTL cores (``Job(rtl_classes=...)``, answering ``RTL_DMA_LATENCY`` cycles after),
  served as an always-ready memory; a Python accelerator behind every other shell,
  raising ``done`` the device timing model's cycles after it accepts a task (and
  ``writeback`` over the last write-back cycles), and running the task's numpy function
  on the memory at the regions the shell holds at the CDB grant, so a remapping mistake
  corrupts data. The testbench reads the ports of each cycle into the environment's
  plain values and writes its answers back.

Python is woken only in cycles that need it: the RTL raises ``wake`` for events, memory
requests, accelerator starts and releases and copies, and the testbench sleeps on a
timer until the next cycle whose inputs the environment changes (a read answered, an
accelerator finishing). Everything runs at the falling clock edge: inputs for the cycle
are written, then its outputs are read once settled. The clock runs inside the HDL
(:func:`hts.cosim.top.clocked_wrapper`).

With ``Job(record=True)`` the testbench also records every input it writes, with its
simulation time: a :class:`hts.cosim.replay.Stimulus` that replays the run without Python.
With ``Job(keep_trace=True)`` each outcome also carries the RTL's events, as read from its
trace port (``hts cosim --trace``); with ``Job(coverage=True)`` its functional coverage
(``hts.models.coverage``).

The cocotb test :func:`run_jobs` reads a pickled :class:`hts.cosim.scoreboard.Job` named
by the ``HTS_COSIM_JOB`` environment variable and writes the results beside it.
"""

import os
import pickle
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import cocotb
from amaranth.hdl import Const
from amaranth.lib import data
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, First, ReadOnly, ReadWrite, RisingEdge, Timer

from hts.base.config import SystemConfig
from hts.hdl.interfaces import (branch_read_signature, cpu_signature, delivered_task_layout, instance_numbering,
                                region_layout, task_record_layout, trace_layout)
from hts.hdl.trace import TraceReader, canonical
from hts.isa import REGISTER_BITS
from hts.models.coverage import StateCoverage, trace_coverage
from hts.models.memory import Memory

from .axi import ControlPort
from .environment import COPYBACK_HOME, COPYBACK_TM, Environment, Outputs, rtl_dma_port
from .replay import Stimulus
from .scoreboard import RTL_DMA_LATENCY, Job, RunOutcome, RunSpec, score
from .top import PERIOD_NS, rtl_instances
from .views import view_reader

__all__ = ["TB", "RTLRun", "run_jobs"]


@dataclass
class RTLRun:
    """What the RTL did with one set of programs."""
    events: list[dict]
    cycles: int | None            # the model's ``RunResult.cycles`` (last end + 1); None if it never ended
    memory: Memory
    faults: list[tuple[int, int, int, str]] = field(default_factory=list)   # (cycle, pid, pc, cause)
    wakes: int = 0                # cycles in which Python looked
    observed: list[tuple[int, int]] = field(default_factory=list)   # (cycle, events) where wake was high
    control: dict[str, int] | None = None   # through AXI4-Lite: the status registers after the run


def _pack(layout, fields: dict) -> int:
    return Const.cast(layout.const(fields)).value


class TB:
    """The scheduler's surroundings, for one configuration: CPUs, memory and accelerators."""

    def __init__(self, dut, config, record: bool = False, axi: bool = False, rtl_classes: tuple[str, ...] = ()):
        self.dut, self.config = dut, config
        self.rtl = rtl_instances(config, rtl_classes)     # flat instances with an RTL core, in rtl_dma order
        self.writes: list[tuple[int, str, int]] | None = [] if record else None   # (step, port, value)
        # Through AXI4-Lite the CPU is cocotbext-axi's manager; the fault port is a monitor.
        self.control = ControlPort(dut) if axi else None
        self.fault_port = "fault" if axi else "cpu__fault"
        instances = len(instance_numbering(config))
        self.read_tasks = view_reader(data.ArrayLayout(delivered_task_layout(config), instances))
        self.read_records = view_reader(data.ArrayLayout(task_record_layout(config), instances))
        self.read_writes = view_reader(data.ArrayLayout(region_layout(config), instances))
        self.read_trace = view_reader(trace_layout(config))
        cpu = cpu_signature(config).members
        self.load_layout, self.length_layout = cpu["load"].shape, cpu["length"].shape
        self.window_layout = cpu["window"].shape
        self.read_fault = view_reader(cpu["fault"].shape)
        reads = branch_read_signature(config).members
        self.read_blocks = view_reader(reads["block"].shape)
        # The DMA ports Python answers reads on: (the environment's number, port name).
        self.read_ports = [(COPYBACK_TM, "copyback_tm"),
                           *((rtl_dma_port(lane), f"rtl_dma__{lane}") for lane in range(len(self.rtl)))]

    def _put(self, port: str, value: int):
        """Write an input of the scheduler (recording it, if asked to)."""
        getattr(self.dut, port).value = value
        if self.writes is not None:
            self.writes.append((get_sim_time(), port, int(value)))

    # ---- set-up ---------------------------------------------------------------------------
    async def reset(self):
        dut = self.dut
        await FallingEdge(dut.clk)      # a run ends in a read-only phase
        cpu = () if self.control else ("cpu__load", "cpu__length", "cpu__window", "cpu__start")
        for port in (*cpu, "branch_read__data", "core_done", "core_writeback",
                     "copyback_tm__rvalid", "copyback_tm__rdata", "copyback_home__rvalid", "copyback_home__rdata"):
            self._put(port, 0)
        self._put("copyback_tm__ready", 1)
        self._put("copyback_home__ready", 1)
        for lane in range(len(self.rtl)):
            for port, value in (("ready", 1), ("rvalid", 0), ("rdata", 0)):
                self._put(f"rtl_dma__{lane}__{port}", value)
        self._put("rst", 1)
        for _ in range(2):
            await FallingEdge(dut.clk)
        self._put("rst", 0)

    async def load(self, programs, system: SystemConfig, rng: random.Random, pause: float):
        """Write every program, and its window in ``system``, through the CPU port, pausing
        at random; then pulse ``start``. Through AXI4-Lite, the control registers' driver
        does it (without pauses: the bus has its own)."""
        dut = self.dut
        if self.control:
            for pid, program in enumerate(programs):
                await self.control.load(pid, program.words, system.window(pid))
            await self.control.start(len(programs))
            return
        for pid, program in enumerate(programs):
            window = system.window(pid)
            self._put("cpu__window", _pack(self.window_layout, {"valid": 1, "pid": pid, "base": window.base,
                                                                "blocks": window.blocks}))
            self._put("cpu__length", _pack(self.length_layout, {"valid": 1, "pid": pid, "words": len(program)}))
            for addr, word in enumerate(program.words):
                while rng.random() < pause:
                    self._put("cpu__load", 0)
                    await FallingEdge(dut.clk)
                self._put("cpu__load", _pack(self.load_layout, {"valid": 1, "pid": pid, "addr": addr})
                          | word << self.load_layout["word"].offset)
                await FallingEdge(dut.clk)
                self._put("cpu__length", 0)
                self._put("cpu__window", 0)
        self._put("cpu__load", 0)
        self._put("cpu__start", (1 << len(programs)) - 1)
        await FallingEdge(dut.clk)
        self._put("cpu__start", 0)

    # ---- one run --------------------------------------------------------------------------
    async def run(self, programs, memory: Memory, timing, cycle_limit: int) -> RTLRun:
        """Run loaded programs until every process ends or ``cycle_limit``; ``memory`` is updated."""
        dut = self.dut
        env = Environment(self.config, memory, programs, cycle_limit, timing=timing, rtl_instances=self.rtl,
                          rtl_dma_latency=RTL_DMA_LATENCY)
        reader = TraceReader(self.config)
        result = RTLRun([], None, memory)
        read_data = 0
        cycle = 0                                    # we stand at the falling edge of this cycle
        while True:
            # Inputs of this cycle. Completions land before the reads answered now.
            drive = env.begin(cycle)
            self._put("core_done", drive.done)
            self._put("core_writeback", drive.writeback)
            for port, name in self.read_ports:
                self._put(f"{name}__rvalid", port in drive.dma_data)
                if port in drive.dma_data:
                    self._put(f"{name}__rdata", drive.dma_data[port])
            # The first ReadWrite phase applies those writes; cocotb's Verilator loop then
            # evaluates the model again in the same time step, and the second phase follows
            # that evaluation. The CDB grants completions of this cycle combinationally, so
            # the grants are read there.
            falling_edge = get_sim_time()
            await ReadWrite()
            await ReadWrite()
            if get_sim_time() != falling_edge:
                # Grants read after the rising edge would be the next cycle's: say so, not a mismatch.
                raise RuntimeError(f"cycle {cycle}: the second ReadWrite phase fell in a later time step")
            grants = int(dut.grant.value)
            answers = env.grant(grants, self.read_writes(int(dut.core_writes.value)) if grants else (),
                                self.read_records(int(dut.core_record.value)) if grants else ())
            for lane, word in answers.items():
                read_data = _set_lane(read_data, lane, word)
            if answers:
                self._put("branch_read__data", read_data)
            await ReadOnly()

            result.wakes += 1
            assert int(dut.cycle.value) == cycle, f"testbench lost count: at {int(dut.cycle.value)}, thought {cycle}"
            awake = bool(dut.wake.value)
            if env.observe(self._outputs(cycle, reader, result) if awake else Outputs()):
                break
            # After a cycle with requests, look at the next; else sleep until the
            # environment changes an input (or ``wake`` rises).
            due, last = env.next_due(cycle), max(cycle + 1, cycle_limit)
            cycle = await self._sleep(cycle, cycle + 1 if awake else last if due is None else min(due, last))
        result.events = canonical(env.record.events)
        result.cycles, result.faults = env.record.cycles, env.record.faults
        if self.control and result.cycles is not None:
            result.control = await self._ended_on_interrupt()
        return result

    def _outputs(self, cycle: int, reader: TraceReader, result: RTLRun) -> Outputs:
        """What the scheduler shows and asks for in a cycle raising ``wake``."""
        dut = self.dut
        events = int(dut.events.value)
        result.observed.append((cycle, events))
        trace = self.read_trace(events)
        outputs = Outputs(events=reader.events(cycle, trace), ended=trace.end)
        valid = int(dut.branch_read__valid.value)
        if valid:
            blocks = self.read_blocks(int(dut.branch_read__block.value))
            outputs.branch_reads = {lane: blocks[lane] for lane in range(len(blocks)) if valid >> lane & 1}
        if int(dut.copyback_tm__read.value):
            outputs.dma_reads[COPYBACK_TM] = int(dut.copyback_tm__addr.value)
        if int(dut.copyback_home__write.value):
            outputs.dma_writes[COPYBACK_HOME] = (int(dut.copyback_home__addr.value),
                                                 int(dut.copyback_home__wdata.value))
        for lane in range(len(self.rtl)):
            address = int(getattr(dut, f"rtl_dma__{lane}__addr").value)
            if int(getattr(dut, f"rtl_dma__{lane}__read").value):
                outputs.dma_reads[rtl_dma_port(lane)] = address
            if int(getattr(dut, f"rtl_dma__{lane}__write").value):
                outputs.dma_writes[rtl_dma_port(lane)] = (address, int(getattr(dut, f"rtl_dma__{lane}__wdata").value))
        fault = self.read_fault(int(getattr(dut, self.fault_port).value))
        if fault.valid:
            outputs.fault = (fault.pid, fault.pc, fault.cause.name)
        outputs.released, outputs.started = int(dut.core_release.value), int(dut.core_start.value)
        if outputs.started:
            outputs.tasks = self.read_tasks(int(dut.core_task.value))
        return outputs

    async def _ended_on_interrupt(self) -> dict[str, int]:
        """The interrupt of the last end, the status registers, and the interrupt cleared."""
        raised = await self.control.wait_for_interrupt(cycles=2)
        status = await self.control.status()
        await self.control.write("IRQ_STATUS", status["IRQ_STATUS"])
        cleared = await self.control.read("IRQ_STATUS") == 0 and not int(self.dut.irq.value)
        return {**status, "irq_raised": int(raised), "irq_cleared": int(cleared)}

    async def _sleep(self, cycle: int, until: int) -> int:
        """From the falling edge of ``cycle`` to that of ``until``, or of the first cycle raising ``wake``."""
        dut = self.dut
        if until > cycle + 1:
            # Aim a little before the falling edge of ``until``, in its high half-cycle.
            await First(RisingEdge(dut.wake), Timer((until - cycle) * PERIOD_NS - 2, unit="ns"))
        await FallingEdge(dut.clk)
        return int(dut.cycle.value)


def _set_lane(vector: int, slot: int, word: int) -> int:
    """``vector`` (the branch-read data port) with lane ``slot`` set to ``word``."""
    lane = (1 << REGISTER_BITS) - 1
    return vector & ~(lane << (REGISTER_BITS * slot)) | (word & lane) << (REGISTER_BITS * slot)


@cocotb.test()
async def run_jobs(dut):
    """Every run of the job named by ``HTS_COSIM_JOB``; results are pickled beside it."""
    job_file = Path(os.environ["HTS_COSIM_JOB"])
    job: Job = pickle.loads(job_file.read_bytes())
    tb = TB(dut, job.config, record=job.record, axi=job.axi, rtl_classes=job.rtl_classes)
    outcomes: list[RunOutcome] = []
    for spec in job.runs:
        outcomes.append(await _one_run(tb, job, spec))
        job_file.with_suffix(".out").write_bytes(pickle.dumps(outcomes))   # what is done survives a crash
        if job.progress:
            print(f"[cosim] {len(outcomes)}/{len(job.runs)} {spec.name}: "
                  f"{'match' if outcomes[-1].match else 'MISMATCH'}", flush=True)


async def _one_run(tb: TB, job: Job, spec: RunSpec) -> RunOutcome:
    state = StateCoverage() if job.coverage else None
    reference = spec.reference(job.config, observer=state.observe if state else None, rtl_classes=job.rtl_classes)
    memory = spec.initial_memory(job.config)
    await tb.reset()
    await tb.load(spec.programs, spec.system(job.config), random.Random(spec.seed), job.load_pause)
    started, start_step = time.perf_counter(), get_sim_time()
    rtl = await tb.run(spec.programs, memory, spec.timing(job.config, job.rtl_classes),
                       cycle_limit=reference.cycles + 100)
    wall_s = time.perf_counter() - started
    outcome = score(job.config, spec, reference, rtl.events, rtl.cycles, rtl.memory, rtl.faults, rtl.wakes, wall_s,
                    control=rtl.control if job.axi else None)
    if job.keep_trace:
        outcome.trace = rtl.events
    if state is not None:
        # The RTL shows events only: the bins they make are counted on its own trace, the
        # bins of internal state on the model run in lockstep with it.
        outcome.coverage = trace_coverage(rtl.events).merge(state.coverage)
    if tb.writes is not None:
        outcome.stimulus = Stimulus(list(tb.writes), start_step, get_sim_time(), rtl.observed)
    return outcome
