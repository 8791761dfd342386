"""Enqueue: the register between decode and the queued tasks.

RTL of ``hts.models.enqueue``: the task decoded before searches the tracker from here, a
row of entries a cycle (docs/microarchitecture.md, "Enqueue's cycle").
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import decoded_signature, queued_task_layout, region_layout, task_layout
from .mutation import mutable
from .primitives import index_set, retargeted_ranges, whole_task

__all__ = ["Enqueue"]


class Enqueue(wiring.Component):
    """One task, held after decode for the ``hts.tracker_rows`` cycles of its search.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    decoded : In(decoded_signature)
        From decode; taken at the edge with this cycle's confirm and retarget applied.
    occupied : Out, registered
        A task is held: the tracker's search is its.
    query_reads, query_writes, depends, search_last : Out, Out, In, In
        The tracker search with the held task's ranges, the tags of this cycle's row they
        meet, and whether the row is the last.
    searching_next : Out
        The search goes on next cycle (decode starts none).
    register, producers, row_found : Out, Out, In
        To the wake-up: the held task registers with ``depends`` less its own tag, unless
        squashed now; how many that is.
    squash, squashed_tags : In, Out
        A held task under a squashed ID is dropped and its tag released.
    ready : In
        From the wake-up: the held task waits for nothing after the edge.
    append, append_task : Out
        To the queued tag sets and the ready lists: the held task, in the cycle of its last row.
    queued_tags, held, producers_found : Out
        Its tag, to the copy-back engine; the whole task and how many producers its search
        found, to the trace.
    confirm, retarget, retarget_tm, retarget_home, retarget_producer, retarget_slot : In
        Applied to the arriving task at the edge.
    """

    def __init__(self, config: SystemConfig):
        hts = config.hts
        tags, region = hts.tracker_entries, region_layout(config)
        self._tags, self._rows = tags, hts.tracker_rows
        super().__init__({
            "decoded": In(decoded_signature(config)),
            "occupied": Out(1),
            "query_reads": Out(region),
            "query_writes": Out(region),
            "search_last": In(1),
            "searching_next": Out(1),
            "depends": In(tags),
            "register": Out(1),
            "producers": Out(tags),
            "row_found": In(range(hts.search_lanes + 1)),
            "ready": In(1),
            "producers_found": Out(range(max(tags, 2))),
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
        # One row: every search is in its last row (the tracker's counter is a constant then).
        last_row = self.search_last if self._rows > 1 else Const(1)
        own_tag = Signal(self._tags)
        squashed = self.occupied & (task.mask & self.squash).any()
        staying = self.occupied & ~last_row & ~squashed
        m.d.sync += self.occupied.eq(self.decoded.valid | staying)
        self._take(m, task, staying)
        self._register(m, own_tag, squashed, staying)
        m.d.comb += [
            own_tag.eq(index_set([self.occupied], [task.tag], self._tags)),
            self.query_reads.eq(task.reads),
            self.query_writes.eq(task.writes),
            self.searching_next.eq(self.occupied & ~last_row),
            self.queued_tags.eq(own_tag),
            self.squashed_tags.eq(Mux(squashed, own_tag, 0)),
            self.append.eq(self.occupied & last_row & ~squashed),
            *whole_task(self.held, task),
            self.held.ready.eq(self.ready),
            self.append_task.tag.eq(task.tag),
            self.append_task.accel_class.eq(task.accel_class),
            self.append_task.mask.eq(task.mask),
            self.append_task.ready.eq(self.ready),
        ]
        return m

    def _take(self, m: Module, task, staying):
        """At the edge: the arriving task, or the held one while its search goes on, with the
        confirm and the retarget of the cycle applied."""
        arriving = self.decoded.task
        arriving_reads, arriving_writes, _ = retargeted_ranges(arriving, arriving.tag, self, self.decoded.reads_copy)
        held_reads, held_writes, _ = retargeted_ranges(task, task.tag, self)
        following = Signal.like(task, name="following")
        m.d.comb += following.eq(Mux(staying, task, arriving))
        m.d.sync += [
            task.eq(following),
            task.mask.eq(following.mask & ~self.confirm),
            task.reads.eq(Mux(staying, held_reads, arriving_reads)),
            task.writes.eq(Mux(staying, held_writes, arriving_writes)),
        ]

    def _register(self, m: Module, own_tag, squashed, staying):
        """The held task registers with what this row found; the count of them so far, for the trace."""
        m.d.comb += [self.register.eq(self.occupied & ~squashed),
                     self.producers.eq(self.depends & ~mutable("enqueue_waits_on_itself", own_tag, 0))]
        if self._rows == 1:
            m.d.comb += self.producers_found.eq(self.row_found)
            return
        earlier = Signal.like(self.producers_found, name="found_earlier", reset_less=True)
        m.d.sync += earlier.eq(Mux(staying, self.producers_found, 0))
        m.d.comb += self.producers_found.eq(earlier + self.row_found)
