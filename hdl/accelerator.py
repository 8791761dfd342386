"""Accelerator shell (the homogeneous interface of the HTS paper's Figure 4) and a latency core.

Every instance sits behind the same :class:`AcceleratorShell`: the scheduler delivers a
task on a valid/ready stream, reads back the busy and done status, grants the done task
the CDB (the instance is free from the next cycle), aborts a squashed task, gates the
power and retargets the output of a resolved speculative task (docs/microarchitecture.md,
"Retarget"). The core inside computes; it fetches and writes its data through its own
memory master port (its DMA engine, :func:`hts.hdl.interfaces.dma_signature`), and
writes its output back over the last cycles of its run, reading the output base only
from then on.

:class:`LatencyCore` is the timing stand-in of the cycle model (``TableLatency`` of
``hts.models.timing``): it takes exactly its class's configured latency and moves no data.
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
    """Cycles to write ``out_blocks`` back over the port: ``transfer_cycles`` of the model,
    a shift, as the beat divides the block (the copy-back engine refuses other systems)."""
    beats = out_blocks << (beats_per_block(config).bit_length() - 1)
    return Mux(out_blocks == 0, 1, beats)


class LatencyCore(wiring.Component):
    """A core that finishes exactly ``config.accelerators[class_index].latency`` cycles after start.

    A task started in cycle *t* (the cycle after its grant) is ``done`` in cycle *t +
    latency*, when the cycle model's ``Running.finishes`` is, and takes its CDB ticket then. Its write-back
    is the last ``writeback_cycles(out_blocks)`` cycles of the latency: ``writeback`` is
    high in every cycle *t'* with *t + latency − t'* ≤ that count, the complement of the
    model's "retargetable while running" test. Ports:
    :func:`~hts.hdl.interfaces.core_signature`. It moves no data: its DMA port never
    requests.
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
        # The count and the write-back's length are loaded in every idle cycle, the start's
        # among them, so that only ``running`` (and a one-cycle core's ``done``) waits for
        # the dispatch grant behind ``start``.
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

    Task delivery and status:

    - ``task`` (in, stream of ``granted_task_layout``, from the dispatch arbiter): the
      grant, with the task's tag and mask. ``ready`` is high when the shell is idle and
      powered; a handshake in cycle *t* makes the shell busy from *t + 1*, and the task
      starts then;
    - ``delivered``, ``record`` (in, from the dispatch arbiter): the task accepted last
      cycle, with its physical (remapped) regions, pid and pc, and its task ID and
      metadata, which the core gets as it starts (meaningless in other cycles);
    - ``busy`` (out, to the top level): a task is held, from the cycle after acceptance
      until the cycle of its grant or abort included;
    - ``current`` (out, to the top level and the squash logic, ``held_task_layout``): what
      the shell holds of its task (while ``busy``), with the updates below applied: its
      tag for the broadcast, its mask for the squash's aborts, pid and pc for the trace,
      its output region; in the start cycle pid, pc and region come from ``delivered``.
      The rest of the task goes to the core with ``start`` only;
    - ``writes`` (out, to the core and the environment, combinational): the output region
      the core writes to in this cycle: the held task's with this cycle's retarget
      applied, so that a write in the retarget's cycle, or a completion granted in it,
      goes home (meaningless while idle);
    - ``done`` (out, to the CDB as ``finished``): the task has finished and waits for its
      grant; the core's ``done``;
    - ``granted`` (in, from the CDB): the done task is granted this cycle (and broadcast
      the next); the shell is idle from the clock edge, and the ASR offers the instance
      again after the broadcast. Ignored unless ``done``;
    - ``abort`` (in, from the squash logic): drop the held task; the core stops at once
      (or does not start), the shell is free at the clock edge. It does not touch a task
      accepted in the same cycle (the squash removes station tasks before they dispatch);
    - ``power_enable`` (in, from the power manager): low gates the core's clock, which
      this model reduces to refusing tasks (``ready`` low). A busy core is not stopped:
      the cycle model has no power management, so the manager gates idle instances only;
    - ``dma`` (out, to the memory interconnect): the core's master port
      (:func:`~hts.hdl.interfaces.dma_signature`), passed through.

    Updates of the held task (land at the clock edge, and apply as well to a task
    accepted in the same cycle, as the model's end-of-cycle effects apply to a task
    dispatched in that cycle):

    - ``confirm`` (in, from the branch unit): speculation bits to clear from the task's
      mask (confirmed branches), so the squash never aborts it for a reused ID;
    - ``retarget`` (in, from the copy-back engine): ``valid`` and the output ``base`` the
      task writes instead (home, same size). Allowed until the cycle in which the core
      starts writing back (the copy-back engine's test is a cycle old; ``writes`` carries
      the new base in that cycle already): a retarget after it (or with no task) is
      ignored and flagged on ``retarget_refused``. In the grant's cycle the shell has no
      region yet: the tracker's entry takes the retarget, and ``delivered`` carries it;
    - ``writeback_started`` (out, to the copy-back engine): the core writes, or has
      written, its output; the output base is frozen from the next cycle on;
    - ``retarget_refused`` (out): this cycle's retarget is ignored.

    The core (:func:`~hts.hdl.interfaces.core_signature`, e.g. a :class:`LatencyCore`) is
    a submodule, ``core``.
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
        # come from the tracker's entry. The held task means something only while
        # ``busy``: no reset (record_register, hdl/primitives.py).
        held = record_register(m, self.current, "held_task")
        with m.If(starting):
            m.d.comb += [getattr(self.current, name).eq(getattr(self.delivered, name))
                         for name in ("pid", "pc", "writes")]
        # The task held from the edge on, with the updates that land there. An idle shell
        # takes whatever tag and mask are offered, accepted or not, so the multiplexer is
        # chosen by a register and not by the dispatch grant behind ``accepting``.
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
