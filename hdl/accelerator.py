"""Accelerator shell (the HTS paper's Figure 4) and :class:`LatencyCore`, the model's timing
stand-in (docs/microarchitecture.md, "Accelerator shells and cores").
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import (beats_per_block, core_signature, delivered_task_layout, dma_signature, granted_task_layout,
                         held_task_layout, region_layout, retarget_layout, task_record_layout)
from .mutation import mutable
from .primitives import record_register

__all__ = ["AcceleratorShell", "LatencyCore"]


def writeback_cycles(config: SystemConfig, out_blocks):
    """Cycles to write ``out_blocks`` back (the model's ``transfer_cycles``): a shift, as the beat divides the block."""
    beats = out_blocks << (beats_per_block(config).bit_length() - 1)
    return Mux(out_blocks == 0, 1, beats)


class LatencyCore(wiring.Component):
    """A core that is ``done`` exactly its class's latency after its start, and moves no data.

    ``writeback`` is high in cycle *t'* when *start + latency − t'* ≤ ``writeback_cycles``.

    Parameters
    ----------
    config : SystemConfig
    class_index : int

    Attributes
    ----------
    start, task, record, writes, release, done, writeback, dma
        :func:`~hts.hdl.interfaces.core_signature`; ``dma`` never requests.
    """

    def __init__(self, config: SystemConfig, class_index: int):
        self._config = config
        self._latency = config.accelerators[class_index].latency
        super().__init__(core_signature(config))

    def elaborate(self, platform):
        m = Module()
        latency = self._latency
        running = Signal()
        # Cycles until done, counted from the cycle after the start: latency - 1 down to 0.
        remaining = Signal(bits_for(latency))
        cycles_to_write = writeback_cycles(self._config, self.writes.blocks)
        writeback_from = Signal.like(cycles_to_write)

        # ``done`` is running & remaining == 0, kept in a flip-flop set a cycle ahead, so
        # that the CDB's grant starts from a register rather than a counter compare.
        done = Signal()
        m.d.comb += [
            self.done.eq(done),
            self.writeback.eq(running & (remaining <= writeback_from)),
            self.dma.read.eq(0),
            self.dma.write.eq(0),
        ]
        m.d.sync += done.eq(running & (remaining <= 1))
        # The count and the write-back's length load in every idle cycle, so that only
        # ``running`` (and a one-cycle core's ``done``) waits for the grant behind ``start``.
        with m.If(~running):
            m.d.sync += [writeback_from.eq(cycles_to_write),
                         remaining.eq(latency - mutable("latency_one_late", 1, 0))]
        with m.If(self.start):
            m.d.sync += running.eq(1)
            if latency == 1:
                m.d.sync += done.eq(1)
        with m.Elif(self.release):
            m.d.sync += [running.eq(0), done.eq(0)]
        with m.Elif(running & (remaining != 0)):
            m.d.sync += remaining.eq(remaining - 1)
        return m


class AcceleratorShell(wiring.Component):
    """The interface every accelerator instance presents to the scheduler (Figure 4).

    Parameters
    ----------
    config : SystemConfig
    core : wiring.Component
        Its core (:func:`~hts.hdl.interfaces.core_signature`), a submodule.

    Attributes
    ----------
    task : In(stream of granted_task_layout)
        From the arbiter: the grant (tag, mask); ready while idle; busy from the next cycle.
    delivered, record : In
        From the arbiter: the task accepted last cycle, which starts now, and its record.
    busy, done : Out
        A task is held (until its grant or abort, included); it has finished (to the CDB).
    current : Out(held_task_layout)
        What the shell holds: tag, mask, pid, pc, output region.
    writes : Out
        The output region the core writes now, this cycle's retarget applied.
    granted, abort : In
        From the CDB, the squash: the task leaves at the edge (an abort stops the core).
    power_enable, confirm : In
        Low refuses tasks; IDs cleared from the held mask.
    retarget : In(retarget_layout)
        The output's new base, accepted from the grant to the core's first write-back cycle.
    writeback_started, retarget_refused : Out
        The core writes or has written its output; this cycle's retarget is ignored.
    dma : Out(dma_signature)
        The core's master port, passed through.
    """

    def __init__(self, config: SystemConfig, core: wiring.Component):
        self.core = core
        super().__init__({
            "task": In(stream.Signature(granted_task_layout(config))),
            "delivered": In(delivered_task_layout(config)),
            "record": In(task_record_layout(config)),
            "busy": Out(1),
            "current": Out(held_task_layout(config)),
            "writes": Out(region_layout(config)),
            "done": Out(1),
            "granted": In(1),
            "abort": In(1),
            "power_enable": In(1),
            "confirm": In(config.hts.spec_ids),
            "retarget": In(retarget_layout(config)),
            "writeback_started": Out(1),
            "retarget_refused": Out(1),
            "dma": Out(dma_signature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        wiring.connect(m, wiring.flipped(self.dma), core.dma)

        accepting = self.task.valid & self.task.ready
        leaving = self.busy & (self.abort | self.granted & self.done)
        # The task accepted last cycle starts now: ``delivered`` and ``record`` carry it.
        starting = Signal()
        m.d.sync += starting.eq(accepting)
        wrote_before = Signal()
        m.d.sync += wrote_before.eq(self.writeback_started)
        retargetable = accepting | self.busy & ~wrote_before
        m.d.comb += [
            self.task.ready.eq(~self.busy & self.power_enable),
            self.done.eq(self.busy & core.done),
            self.writeback_started.eq(self.busy & core.writeback),
            self.retarget_refused.eq(self.retarget.valid & ~retargetable),
            core.start.eq(starting & ~self.abort),
            core.task.eq(self.delivered),
            core.record.eq(self.record),
            core.writes.eq(self.writes),
            core.release.eq(leaving),
        ]

        # ``current``: the register, but in the start cycle pid, pc and region, which
        # come from the tracker's entry. No reset: it means something only while ``busy``.
        held = record_register(m, self.current, "held_task")
        with m.If(starting):
            m.d.comb += [getattr(self.current, name).eq(getattr(self.delivered, name))
                         for name in ("pid", "pc", "writes")]
        # An idle shell takes whatever tag and mask are offered, accepted or not, so the
        # multiplexer is chosen by a register, not by the grant behind ``accepting``.
        kept = Signal.like(self.current)
        m.d.comb += kept.eq(self.current)
        with m.If(~self.busy):
            m.d.comb += [kept.tag.eq(self.task.payload.tag), kept.mask.eq(self.task.payload.mask)]
        updated = Signal.like(self.current)
        m.d.comb += [updated.eq(kept), updated.mask.eq(kept.mask & ~self.confirm)]
        with m.If(self.retarget.valid & retargetable):
            m.d.comb += updated.writes.base.eq(self.retarget.base)
        m.d.comb += self.writes.eq(updated.writes)
        m.d.sync += held.eq(updated)

        with m.If(accepting):
            m.d.sync += self.busy.eq(1)
        with m.Elif(leaving):
            m.d.sync += self.busy.eq(0)
        return m
