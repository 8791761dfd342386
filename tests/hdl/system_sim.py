"""The whole ``HTS`` in the Amaranth simulator, run on task programs beside the cycle model.

:func:`run_rtl` plays the CPU around the RTL: it loads and starts the programs through
the CPU port. The memory system is an :class:`hts.cosim.environment.Environment`, the
surroundings the cocotb testbench plays too: it keeps the memory (a
``hts.models.memory.Memory``), on which it runs each task's accelerator function when
the CDB grants it (what the model does in ``_complete``); it answers the branch unit's
memory reads exactly ``timing.memory_latency`` cycles after the request with the word as
it stands then, and serves the copy-back engine's two DMA ports as an always-ready
memory (read data one cycle after the request). The accelerator cores are the RTL's
own. :func:`run_rtl` reads each cycle's ports into the environment's plain values and
writes its answers back; it returns the trace read from the trace port, in the model's
event records.

Cycles in which nothing on those ports needs an answer are run without the testbench
looking: the harness raises ``wake`` for any event, any memory request, and any cycle
of a copy, and the testbench sleeps until it does (while the environment owes an
answer, it steps cycle by cycle). That makes an 18,000-cycle FFT cost little more than
the events around it.
"""

from dataclasses import dataclass, field

from amaranth.hdl import Elaboratable, Module, Mux, ResetInserter, Signal
from amaranth.lib import data
from rtl_sim import run

from hts.cosim.environment import COPYBACK_HOME, COPYBACK_TM, Environment, Outputs
from hts.cosim.scoreboard import first_difference
from hts.cosim.top import given_record
from hts.hdl.hts import HTS
from hts.hdl.interfaces import (branch_read_signature, cpu_signature, delivered_task_layout, dma_signature,
                                instance_numbering, region_layout, task_record_layout, trace_layout,
                                word_address_width)
from hts.hdl.trace import TraceReader, any_event, canonical
from hts.models.memory import Memory


__all__ = ["Harness", "RTLRun", "run_rtl", "first_difference"]


def _seen_layout(config) -> data.StructLayout:
    """What the testbench reads of a cycle, registered so that it can read it afterwards."""
    reads = branch_read_signature(config).members
    instances = len(instance_numbering(config))
    return data.StructLayout({
        "cycle": 32,
        "trace": trace_layout(config),
        "read_valid": reads["valid"].shape,
        "read_block": reads["block"].shape,
        "fault": cpu_signature(config).members["fault"].shape,
        "tm_read": 1,
        "tm_addr": word_address_width(config),
        "home_write": 1,
        "home_addr": word_address_width(config),
        "home_wdata": dma_signature(config).members["wdata"].shape,
        "grant": instances,
        "started": instances,
        "accepted": data.ArrayLayout(delivered_task_layout(config), instances),
        "writes": data.ArrayLayout(region_layout(config), instances),
        "records": data.ArrayLayout(task_record_layout(config), instances),
    })


class Harness(Elaboratable):
    """``HTS`` with a cycle counter (0 in the model's cycle 0) and the testbench's ``wake``.

    ``seen`` holds, from each clock edge on, what the cycle before it showed: the
    testbench sleeps through cycles without ``wake`` and reads the cycle that woke it
    there. (Sampling the ports at every edge instead costs more than the design itself.)
    ``reset`` is the scheduler's ``rst``: raised for a cycle, it resets the ``HTS`` (and
    nothing of the harness) at the edge. ``records`` holds, per flat instance, the task
    ID and metadata its core was given (with its task, as it starts), for the accelerator
    function the environment runs at the grant.
    """

    def __init__(self, config, cycle_limit: int):
        self.hts = HTS(config)
        self.cycle = Signal(32)
        self.wake = Signal()
        self.reset = Signal()
        self.seen = Signal(_seen_layout(config))
        self.records = Signal(data.ArrayLayout(task_record_layout(config), len(instance_numbering(config))))
        self._limit = cycle_limit

    def elaborate(self, platform):
        m = Module()
        m.submodules.hts = ResetInserter(self.reset)(self.hts)
        hts = self.hts
        trace = hts.events
        m.d.sync += self.cycle.eq(Mux(hts.cpu.start.any(), 0, self.cycle + 1))
        m.d.comb += self.wake.eq(any_event(trace) | hts.branch_read.valid.any() | hts.copyback_tm.read
                                 | hts.copyback_home.write | hts.copy_back.copying | hts.cpu.fault.valid
                                 | (self.cycle >= self._limit))
        seen = self.seen
        m.d.sync += [
            seen.cycle.eq(self.cycle),
            seen.trace.eq(trace),
            seen.read_valid.eq(hts.branch_read.valid),
            seen.read_block.eq(hts.branch_read.block),
            seen.fault.eq(hts.cpu.fault),
            seen.tm_read.eq(hts.copyback_tm.read & hts.copyback_tm.ready),
            seen.tm_addr.eq(hts.copyback_tm.addr),
            seen.home_write.eq(hts.copyback_home.write & hts.copyback_home.ready),
            seen.home_addr.eq(hts.copyback_home.addr),
            seen.home_wdata.eq(hts.copyback_home.wdata),
            seen.grant.eq(hts.cdb.grant),
        ]
        for flat, shell in enumerate(hts.shells):
            core = shell.core
            m.d.comb += self.records[flat].eq(given_record(m, core.start, core.record, f"core_{flat}"))
            m.d.sync += [seen.started[flat].eq(core.start),
                         seen.accepted[flat].eq(core.task), seen.writes[flat].eq(shell.writes),
                         seen.records[flat].eq(self.records[flat])]
        return m


@dataclass
class RTLRun:
    events: list[dict]          # canonical order
    cycles: int                 # the model's ``RunResult.cycles``: last end + 1
    memory: Memory
    ended: bool                 # every process ended within the cycle limit
    faults: list[tuple[int, int, int, str]] = field(default_factory=list)   # (cycle, pid, pc, cause), CPU port


def run_rtl(config, programs, memory: Memory, cycle_limit: int, waves: str | None = None,
            reset_after: int | None = None) -> RTLRun:
    """Run ``programs`` (one per process, from pid 0) on the RTL; ``memory`` is updated in place.

    With ``reset_after``, the programs first run that many cycles with nothing answered
    (no branch read, no TM read; no accelerator function touches ``memory``), leaving
    tasks everywhere in flight; ``rst`` is then raised for a cycle and the run starts
    over from loading the programs. The result is that of the second run only.
    """
    harness = Harness(config, cycle_limit)
    hts = harness.hts
    cpu, read, tm, home = hts.cpu, hts.branch_read, hts.copyback_tm, hts.copyback_home
    env = Environment(config, memory, programs, cycle_limit)
    reader = TraceReader(config)

    async def load_and_start(ctx):
        for pid, program in enumerate(programs):
            window = config.window(pid)
            ctx.set(cpu.window, {"valid": 1, "pid": pid, "base": window.base, "blocks": window.blocks})
            ctx.set(cpu.length.valid, 1)
            ctx.set(cpu.length.pid, pid)
            ctx.set(cpu.length.words, len(program))
            ctx.set(cpu.load.valid, 1)
            ctx.set(cpu.load.pid, pid)
            for addr, word in enumerate(program.words):
                ctx.set(cpu.load.addr, addr)
                ctx.set(cpu.load.word.as_value(), word)
                await ctx.tick()
                ctx.set(cpu.length.valid, 0)
                ctx.set(cpu.window.valid, 0)
        ctx.set(cpu.load.valid, 0)
        ctx.set(cpu.start, (1 << len(programs)) - 1)
        await ctx.tick()
        ctx.set(cpu.start, 0)

    async def bench(ctx):
        for dma in [tm, home, *hts.accel_dma]:
            ctx.set(dma.ready, 1)
        if reset_after is not None:
            await load_and_start(ctx)
            await ctx.tick().repeat(reset_after)
            ctx.set(harness.reset, 1)
            await ctx.tick()
            ctx.set(harness.reset, 0)
        await load_and_start(ctx)

        due = None                  # the next cycle the environment changes an input in
        while True:
            if due is not None or ctx.get(hts.copy_back.copying):
                # Inputs of this cycle: its completions land before the reads due now.
                drive = env.begin(ctx.get(harness.cycle))
                ctx.set(tm.rvalid, COPYBACK_TM in drive.dma_data)
                if COPYBACK_TM in drive.dma_data:
                    ctx.set(tm.rdata, drive.dma_data[COPYBACK_TM])
                grants = ctx.get(hts.cdb.grant)
                for lane, word in env.grant(grants, [ctx.get(shell.writes) for shell in hts.shells]
                                            if grants else (), ctx.get(harness.records) if grants else ()).items():
                    ctx.set(read.data[lane], word)
                await ctx.tick()
                seen = ctx.get(harness.seen)
            else:
                # Nothing is owed: the cycle that wakes us is taken in as it was.
                ctx.set(tm.rvalid, 0)
                await ctx.tick().until(harness.wake)
                seen = ctx.get(harness.seen)
                env.begin(seen.cycle)
                env.grant(seen.grant, seen.writes, seen.records)
            if env.observe(_outputs(seen, reader)):
                return
            due = env.next_due(seen.cycle)

    run(harness, bench, waves)
    record = env.record
    ended = record.cycles is not None
    return RTLRun(canonical(record.events), record.cycles if ended else 0, memory, ended, record.faults)


def _outputs(seen, reader: TraceReader) -> Outputs:
    """What the harness saw of a cycle, as the environment takes it."""
    fault = seen.fault
    return Outputs(
        branch_reads={lane: seen.read_block[lane] for lane in range(len(seen.read_block))
                      if seen.read_valid >> lane & 1},
        dma_reads={COPYBACK_TM: seen.tm_addr} if seen.tm_read else {},
        dma_writes={COPYBACK_HOME: (seen.home_addr, seen.home_wdata)} if seen.home_write else {},
        started=seen.started, tasks=seen.accepted,
        events=reader.events(seen.cycle, seen.trace), ended=seen.trace.end,
        fault=(fault.pid, fault.pc, fault.cause.name) if fault.valid else None)
