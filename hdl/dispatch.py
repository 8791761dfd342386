"""Dispatch arbiter: the ready lists' offers go to free accelerator instances, lowest class first.

RTL of ``Dispatch.dispatch`` (``models/dispatch.py``); docs/microarchitecture.md, "Dispatch".
"""

import operator
from functools import reduce

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import (delivered_task_layout, dispatch_trace_layout, granted_task_layout, instance_numbering,
                         occupy_layout, queued_task_layout, record_read_signature, task_record_layout,
                         tracker_register_layout)
from .mutation import mutable
from .primitives import entry_at, index_set, lowest_ones, popcount, select, whole_task, wire

__all__ = ["DispatchArbiter"]


class DispatchArbiter(wiring.Component):
    """Grants up to ``hts.dispatch_width`` offers per cycle, lowest class first.

    The grant does not wait for ``ready``: a shell is idle whenever the ASR says its instance
    is free, so a power manager must gate only instances it keeps from being offered.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    offer_valid, offer_task : In, per class
        From the ready lists: each class's head, when live.
    has_free, free_instance : In, per class
        From the ASR.
    tasks : In, per tag
        From the tracker: regions, pid and pc of every task in flight.
    record_reads : Out(record_read_signature), per slot
        To the tracker: the tag granted last cycle, for its task ID and metadata.
    take, occupy : Out, per class
        To the ready lists and the ASR: the grants.
    deliver : Out(stream of granted_task_layout), per flat instance
        To the shells: the grant, with the class's offer's tag and mask.
    delivered, deliver_record : Out, per flat instance
        To the shells: the task granted last cycle, which starts now, and its record.
    last_granted_tags, trace : Out, registered
        The tags granted last cycle; last cycle's grants by rank, for the trace port.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        hts, task = config.hts, delivered_task_layout(config)
        classes, instances = len(config.accelerators), len(instance_numbering(config))
        super().__init__({
            "offer_valid": In(classes),
            "offer_task": In(data.ArrayLayout(queued_task_layout(config), classes)),
            "tasks": In(data.ArrayLayout(tracker_register_layout(config), hts.tracker_entries)),
            "record_reads": Out(record_read_signature(config)).array(hts.dispatch_width),
            "has_free": In(classes),
            "free_instance": In(data.ArrayLayout(config.widths.instance, classes)),
            "take": Out(classes),
            "last_granted_tags": Out(hts.tracker_entries),
            "occupy": Out(data.ArrayLayout(occupy_layout(config), classes)),
            "deliver": Out(stream.Signature(granted_task_layout(config))).array(instances),
            "delivered": Out(data.ArrayLayout(task, instances)),
            "deliver_record": Out(data.ArrayLayout(task_record_layout(config), instances)),
            "trace": Out(data.ArrayLayout(dispatch_trace_layout(config), hts.dispatch_width)),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        classes = range(len(config.accelerators))
        width = config.hts.dispatch_width
        eligible = wire(m, self.offer_valid & mutable("dispatch_ignores_busy", self.has_free, -1), "eligible")
        if width == 1:
            granted = wire(m, mutable("dispatch_grants_highest_class", lowest_ones(eligible),
                                      lowest_ones(eligible[::-1])[::-1]), "granted")
        else:
            granted = wire(m, lowest_ones(eligible, width), "granted")
        # An offer's rank: the grants of lower classes, its trace slot.
        ranks = [wire(m, popcount(granted[:c]), f"rank_{c}") if width > 1 else 0 for c in classes]
        tags = [offer.tag for offer in self.offer_task]
        m.d.comb += self.take.eq(granted)
        for c in classes:
            m.d.comb += [self.occupy[c].valid.eq(granted[c]), self.occupy[c].instance.eq(self.free_instance[c])]

        for flat, (c, instance) in enumerate(instance_numbering(config)):
            port = self.deliver[flat]
            m.d.comb += [port.valid.eq(granted[c] & (self.free_instance[c] == instance)),
                         port.payload.tag.eq(self.offer_task[c].tag), port.payload.mask.eq(self.offer_task[c].mask)]

        # Slot k holds the grant of rank k (one class at most: AND-OR selects), registered
        # with its tag one-hot; the cycle after, its task is the record and the tag's tracker
        # entry. ``waits`` is empty: the lists offer only ready tasks.
        slot_tags = []
        for slot, (event, record) in enumerate(zip(self.trace, self.record_reads)):
            in_slot = wire(m, Cat(*(granted[c] & (ranks[c] == slot) for c in classes)), f"in_slot_{slot}")
            queued = Signal(queued_task_layout(config), name=f"queued_{slot}")
            slot_tag = Signal(config.hts.tracker_entries, name=f"tag_of_slot_{slot}")
            m.d.comb += queued.eq(select(in_slot, self.offer_task))
            m.d.sync += [event.valid.eq(in_slot.any()), event.instance.eq(select(in_slot, self.free_instance)),
                         slot_tag.eq(index_set(in_slot, tags, config.hts.tracker_entries)),
                         record.tag.eq(queued.tag)]
            granted_record = Signal(queued_task_layout(config), name=f"granted_record_{slot}", reset_less=True)
            m.d.sync += granted_record.eq(queued)
            m.d.comb += whole_task(event.task, granted_record, entry_at(self.tasks, slot_tag))
            slot_tags.append(slot_tag)
        m.d.comb += self.last_granted_tags.eq(reduce(operator.or_, slot_tags))
        self._delivered(m, ranks)
        return m

    def _delivered(self, m: Module, ranks: list):
        tasks = [event.task for event in self.trace]
        records = [read.record for read in self.record_reads]
        if len(records) == 1:
            m.d.comb += [delivered.eq(tasks[0]) for delivered in self.delivered]
            m.d.comb += [record.eq(records[0]) for record in self.deliver_record]
            return
        slots = [Signal.like(rank, name=f"last_slot_{c}") for c, rank in enumerate(ranks)]
        m.d.sync += [slot.eq(rank) for slot, rank in zip(slots, ranks)]
        for flat, (c, _) in enumerate(instance_numbering(self._config)):
            m.d.comb += [self.delivered[flat].eq(Array(tasks)[slots[c]]),
                         self.deliver_record[flat].eq(Array(records)[slots[c]])]
