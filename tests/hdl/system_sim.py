"""The whole ``HTS`` in the Amaranth simulator, run on task programs beside the cycle model.

:func:`run_rtl` plays the CPU and the memory system around the RTL: it loads and starts
the programs through the CPU port; it keeps the memory (a ``hts.models.memory.Memory``),
on which it runs each task's accelerator function when the CDB grants it (what the
model does in ``_complete``); it answers the branch unit's memory reads exactly
``timing.memory_latency`` cycles after the request with the word as it stands then, and
serves the copy-back engine's two DMA ports as an always-ready memory (read data one
cycle after the request). It returns the trace read from the trace port, in the model's
event records.

Cycles in which nothing on those ports needs an answer are run without the testbench
looking: the harness raises ``wake`` for any event, any memory request, and any cycle
of a copy, and the testbench sleeps until it does. That makes an 18,000-cycle FFT cost
little more than the events around it.
"""

from dataclasses import dataclass, field

from amaranth.hdl import Elaboratable, Module, Mux, ResetInserter, Signal
from amaranth.lib import data
from rtl_sim import run

from hts.cosim.scoreboard import first_difference
from hts.hdl.hts import HTS
from hts.hdl.interfaces import (branch_read_signature, cpu_signature, instance_numbering, task_layout, trace_layout,
                                word_address_width)
from hts.hdl.trace import TraceReader, any_event, canonical
from hts.models.accelerator import AcceleratorFunctions
from hts.models.memory import Memory, read_beat, write_beat


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
        "grant": instances,
        "held": data.ArrayLayout(task_layout(config), instances),
    })


class Harness(Elaboratable):
    """``HTS`` with a cycle counter (0 in the model's cycle 0) and the testbench's ``wake``.

    ``seen`` holds, from each clock edge on, what the cycle before it showed: the
    testbench sleeps through cycles without ``wake`` and reads the cycle that woke it
    there. (Sampling the ports at every edge instead costs more than the design itself.)
    ``reset`` is the scheduler's ``rst``: raised for a cycle, it resets the ``HTS`` (and
    nothing of the harness) at the edge.
    """

    def __init__(self, config, cycle_limit: int):
        self.hts = HTS(config)
        self.cycle = Signal(32)
        self.wake = Signal()
        self.reset = Signal()
        self.seen = Signal(_seen_layout(config))
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
            seen.grant.eq(hts.cdb.grant),
        ]
        m.d.sync += [held.eq(shell.current) for held, shell in zip(seen.held, hts.shells)]
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
    functions = AcceleratorFunctions(config)
    accel_ids = [acc.id for acc in config.accelerators]
    latency = config.timing.memory_latency
    per_beat = config.hts.copyback_words_per_cycle
    reader = TraceReader(config)
    result = RTLRun([], 0, memory, False)

    def complete(grants: int, held):
        for flat, task in enumerate(held):
            if grants >> flat & 1:
                functions.run(memory, accel_ids[task.accel_class], task.reads.base, task.reads.blocks,
                              task.writes.base, task.writes.blocks, task.metadata)

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

        lanes: dict[int, tuple[int, int]] = {}     # slot -> (cycle due, block)
        tm_answer: int | None = None               # word address read last cycle
        ended = 0
        while True:
            if lanes or tm_answer is not None or ctx.get(hts.copy_back.copying):
                # Inputs of this cycle: its completions land before the reads due now.
                cycle = ctx.get(harness.cycle)
                grants = ctx.get(hts.cdb.grant)
                if grants:
                    complete(grants, [ctx.get(shell.current) for shell in hts.shells])
                for slot, (due, block) in list(lanes.items()):
                    if due == cycle:
                        ctx.set(read.data[slot], memory.first_word(block))
                        del lanes[slot]
                ctx.set(tm.rvalid, tm_answer is not None)
                if tm_answer is not None:
                    ctx.set(tm.rdata, read_beat(memory.words, tm_answer, per_beat))
                if ctx.get(home.write):
                    write_beat(memory.words, ctx.get(home.addr), per_beat, ctx.get(home.wdata))
                await ctx.tick()
                seen = ctx.get(harness.seen)
            else:
                ctx.set(tm.rvalid, 0)
                await ctx.tick().until(harness.wake)
                seen = ctx.get(harness.seen)
                if seen.grant:
                    complete(seen.grant, seen.held)
            cycle, trace = seen.cycle, seen.trace
            if seen.fault.valid:
                result.faults.append((cycle, seen.fault.pid, seen.fault.pc, seen.fault.cause.name))
            result.events += reader.events(cycle, trace)
            for slot in range(len(seen.read_block)):
                if seen.read_valid >> slot & 1:
                    lanes[slot] = (cycle + latency, seen.read_block[slot])
            tm_answer = seen.tm_addr if seen.tm_read else None
            ended |= trace.end
            if ended == (1 << len(programs)) - 1:
                result.ended, result.cycles = True, cycle + 1
                return
            if cycle >= cycle_limit:
                return

    run(harness, bench, waves)
    result.events = canonical(result.events)
    return result
