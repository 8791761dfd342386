"""Enqueue: the register between decode and the dispatch window.

RTL of ``hts.models.enqueue``: the task decoded last cycle searches the tracker from here
(docs/microarchitecture.md, "Enqueue's cycle").
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import decoded_signature, queued_task_layout, region_layout, task_layout
from .mutation import mutable
from .primitives import index_set, retargeted_ranges, whole_task

__all__ = ["Enqueue"]


class Enqueue(wiring.Component):
    """One task, held for exactly one cycle between decode and the window.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    decoded : In(decoded_signature)
        From decode; taken at the edge with this cycle's confirm and retarget applied.
    occupied : Out, registered
        A task is held; decode needs a window slot for it besides its own.
    query_reads, query_writes, depends : Out, Out, In
        The tracker search with the held task's ranges, and the tags they meet.
    squash, squashed_tags : In, Out
        A held task under a squashed ID is dropped and its tag released.
    append, append_task : Out
        To the window: the held task, waiting for ``depends`` less its own tag.
    queued_tags, held : Out
        Its tag, to the copy-back engine; the whole task, to the trace.
    confirm, retarget, retarget_tm, retarget_home, retarget_producer, retarget_slot : In
        Applied to the arriving task at the edge.
    """

    def __init__(self, config: SystemConfig):
        hts = config.hts
        tags, region = hts.tracker_entries, region_layout(config)
        self._tags = tags
        super().__init__({
            "decoded": In(decoded_signature(config)),
            "occupied": Out(1),
            "query_reads": Out(region),
            "query_writes": Out(region),
            "depends": In(tags),
            "squash": In(hts.spec_ids),
            "squashed_tags": Out(tags),
            "append": Out(1),
            "append_task": Out(queued_task_layout(config)),
            "queued_tags": Out(tags),
            "held": Out(task_layout(config)),
            "confirm": In(hts.spec_ids),
            "retarget": In(1),
            "retarget_tm": In(region),
            "retarget_home": In(region),
            "retarget_producer": In(config.widths.tag),
            "retarget_slot": In(hts.tlb_entries),
        })

    def elaborate(self, platform):
        m = Module()
        # The task itself needs no reset: ``occupied`` says when it means anything.
        task = Signal(self.decoded.task.shape(), reset_less=True)
        arriving = self.decoded.task
        reads, writes, _ = retargeted_ranges(arriving, arriving.tag, self, self.decoded.reads_copy)
        m.d.sync += [
            self.occupied.eq(self.decoded.valid),
            task.eq(arriving),
            task.mask.eq(arriving.mask & ~self.confirm),
            task.reads.eq(reads),
            task.writes.eq(writes),
        ]

        own_tag = Signal(self._tags)
        squashed = self.occupied & (task.mask & self.squash).any()
        m.d.comb += [
            own_tag.eq(index_set([self.occupied], [task.tag], self._tags)),
            self.query_reads.eq(task.reads),
            self.query_writes.eq(task.writes),
            self.queued_tags.eq(own_tag),
            self.squashed_tags.eq(Mux(squashed, own_tag, 0)),
            self.append.eq(self.occupied & ~squashed),
            *whole_task(self.held, task),
            self.held.waits.eq(self.depends & ~mutable("enqueue_waits_on_itself", own_tag, 0)),
            self.append_task.tag.eq(task.tag),
            self.append_task.accel_class.eq(task.accel_class),
            self.append_task.mask.eq(task.mask),
            self.append_task.waits.eq(self.held.waits),
        ]
        return m
