"""Dispatch arbiter: the offers of the reservation stations go to free accelerator instances.

RTL of ``Dispatch.dispatch`` (``models/dispatch.py``); see docs/microarchitecture.md, "One
cycle", step 5. Each station offers its oldest ready task; an offer is eligible when its
class has a free instance. The eligible offers of the ``hts.dispatch_width``
lowest-numbered classes go, each to the lowest free instance of its class: a fixed
priority by class, a carry chain over the classes, where an oldest-first choice looked
each offer's tag up in the memory tracker's age matrix (docs/hardware.md, "Timing").

Stations hold queued records (tag, class, mask, waits). In the grant's cycle a shell
takes its class's offer's tag and mask (the squash and the broadcast need no more), and
the grant of rank ``k`` (``k`` eligible offers of lower classes) is registered in slot
``k``: its record and its tag, one-hot. The cycle after, the task starts: the slot's
record and its tag's tracker entry (regions, pid and pc from the tracker's flip-flops)
are the task the shell hands its core, with the task ID and metadata from the tracker's
distributed RAM, both read by the registered tag. So no tracker read is behind the pick
and the grant (docs/hardware.md, "Timing"), and the arbiter makes ``dispatch_width`` tag
look-ups per cycle rather than keeping the whole task in every station entry.
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
    """Grants up to ``hts.dispatch_width`` station offers per cycle, lowest class first.

    Inputs (combinational, all on the state registered at the start of the cycle):

    - ``offer_valid``, ``offer_task`` (in, from the reservation stations): per class,
      whether the station offers its oldest ready task, and that task's queued record;
    - ``tasks`` (in, from the memory tracker): its entries, by tag: the regions, pid and
      pc of every task in flight;
    - ``record_reads`` (out, to the memory tracker, :func:`~hts.hdl.interfaces.record_read_signature`):
      per slot, the tag granted in it last cycle (registered), and that tag's task ID
      and metadata back;
    - ``has_free``, ``free_instance`` (in, from the ASR): per class, whether an instance
      is free, and the lowest free one (numbered within the class).

    Outputs of the grant (combinational; what they drive lands at the clock edge):

    - ``take`` (out, to the stations): per class, the offer is granted and leaves;
    - ``occupy`` (out, to the ASR): per class, ``valid`` and the ``instance`` granted;
    - ``deliver`` (out, to the accelerator shells): one ``granted_task_layout`` stream
      per flat instance (``hts.hdl.asr`` numbering), ``valid`` for one cycle with the
      grant, its payload the tag and mask of its class's offer (an idle shell takes it
      whether granted or not). The grant does not wait for ``ready``: the station and the ASR commit at the
      same edge, so an instance the ASR reports free must accept. It does: a shell is
      ready when idle and powered, and it is idle whenever the ASR says free (both turn
      busy at the dispatch edge; the shell is free at the grant or abort edge, the ASR
      at the abort edge or the end of the broadcast, a cycle after the grant). The power
      manager must therefore gate only instances it also keeps from being offered (e.g.
      marked busy); a task delivered to an unpowered shell would be lost, its station
      entry gone and its instance busy forever.

    Outputs of last cycle's grants (from registers and the tracker's entries):

    - ``last_granted_tags`` (out, registered, to the top level's queued-tag sets): the
      tags granted in the cycle before, one bit per tag (the OR of the slots' tags);
    - ``trace`` (out, to the trace port): ``dispatch_width`` slots, slot ``k`` the grant
      of rank ``k`` of the cycle before (``valid``, ``instance`` within the class,
      ``task``), so the slots in order are the model's ``dispatch`` events of that cycle
      in order. Valid slots fill from slot 0. ``task`` is read now, by the registered
      tag: its regions carry the retarget of the grant's cycle, as the model's event does;
    - ``delivered``, ``deliver_record`` (out, to the accelerator shells): per flat
      instance, the task granted to it last cycle, which starts now: its grant slot's
      ``task``, and its task ID and metadata (the record read of that slot). Meaningless
      in other cycles.
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

        # Slot k: the grant of rank k, at most one class, so an AND-OR select of its
        # record and instance, registered with its tag one-hot (each offer's tag is
        # decoded beside the pick). The cycle after, the slot's task is the record and the
        # tag's tracker entry, an AND-OR by the registered one-hot. The task's ``waits`` is
        # empty, as the stations offer only ready tasks.
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
        """Each instance's starting task and record: its class's grant slot of last cycle."""
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
