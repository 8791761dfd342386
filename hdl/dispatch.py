"""Dispatch arbiter: the offers of the reservation stations go to free accelerator instances.

RTL of ``Dispatch.dispatch`` (``models/dispatch.py``); see docs/microarchitecture.md, "One
cycle", step 5. Each station offers its oldest ready task; an offer is eligible when its
class has a free instance. The eligible offers of the ``hts.dispatch_width``
lowest-numbered classes go, each to the lowest free instance of its class: a fixed
priority by class, a carry chain over the classes, where an oldest-first choice looked
each offer's tag up in the memory tracker's age matrix (docs/hardware.md, "Timing").

Stations hold queued records (tag, class, mask, waits). A grant of rank ``k`` (``k``
eligible offers of lower classes) takes its offer's record and the tracker entry of its
tag (regions, pid and pc from the tracker's flip-flops), which together are the task the
shell receives. The task's record (task ID, metadata) follows the cycle after, read from
the tracker's distributed RAM by the tag registered at the grant, so that the RAM's read
is not behind the pick. That is ``dispatch_width`` tag look-ups per cycle rather than the
whole task kept in every station entry (hdl/interfaces.py).
"""

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hts.config import SystemConfig

from .interfaces import (delivered_task_layout, dispatch_trace_layout, instance_numbering, occupy_layout,
                         queued_task_layout, record_read_signature, task_record_layout, tracker_register_layout)
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

    Outputs (combinational but ``deliver_record``; what they drive lands at the clock edge):

    - ``take`` (out, to the stations): per class, the offer is granted and leaves;
    - ``granted_tags`` (out, to the top level): the tags of the granted offers, one bit
      per tag;
    - ``occupy`` (out, to the ASR): per class, ``valid`` and the ``instance`` granted;
    - ``deliver`` (out, to the accelerator shells): one ``delivered_task_layout`` stream
      per flat instance (``hts.hdl.asr`` numbering), ``valid`` for one cycle with the
      granted task. The grant does not wait for ``ready``: the station and the ASR commit at the
      same edge, so an instance the ASR reports free must accept. It does: a shell is
      ready when idle and powered, and it is idle whenever the ASR says free (both turn
      busy at the dispatch edge; the shell is free at the grant or abort edge, the ASR
      at the abort edge or the end of the broadcast, a cycle after the grant). The power
      manager must therefore gate only instances it also keeps from being offered (e.g.
      marked busy); a task delivered to an unpowered shell would be lost, its station
      entry gone and its instance busy forever;
    - ``trace`` (out, to the trace port): ``dispatch_width`` slots, slot ``k`` the grant
      of rank ``k`` (``valid``, ``instance`` within the class, ``task``), so the slots in
      order are the model's ``dispatch`` events in order. Valid slots fill from slot 0.
      A shell's ``deliver`` payload is the ``task`` of its grant's slot;
    - ``deliver_record`` (out, to the accelerator shells): per flat instance, the task
      ID and metadata of the task delivered to it last cycle: the record read of its
      grant's slot, from the tag registered at the grant. Meaningless in other cycles.
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
            "granted_tags": Out(hts.tracker_entries),
            "occupy": Out(data.ArrayLayout(occupy_layout(config), classes)),
            "deliver": Out(stream.Signature(task)).array(instances),
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
        m.d.comb += [self.take.eq(granted),
                     self.granted_tags.eq(index_set(granted, tags, config.hts.tracker_entries))]
        for c in classes:
            m.d.comb += [self.occupy[c].valid.eq(granted[c]), self.occupy[c].instance.eq(self.free_instance[c])]

        # Slot k: the grant of rank k, at most one class, so an AND-OR select of its
        # record, and its tag's tracker entry by the tag one-hot: each offer's tag is
        # decoded beside the pick, so that only an AND-OR is left behind the grant. The
        # task's ``waits`` is empty, as the stations offer only ready tasks.
        for slot, (event, record) in enumerate(zip(self.trace, self.record_reads)):
            in_slot = wire(m, Cat(*(granted[c] & (ranks[c] == slot) for c in classes)), f"in_slot_{slot}")
            queued = Signal(queued_task_layout(config), name=f"queued_{slot}")
            slot_tag = wire(m, index_set(in_slot, tags, config.hts.tracker_entries), f"tag_of_slot_{slot}")
            m.d.comb += [event.valid.eq(in_slot.any()),
                         event.instance.eq(select(in_slot, self.free_instance)),
                         queued.eq(select(in_slot, self.offer_task)),
                         *whole_task(event.task, queued, entry_at(self.tasks, slot_tag))]
            m.d.sync += record.tag.eq(queued.tag)
        self._deliver_records(m, ranks)

        for flat, (c, instance) in enumerate(instance_numbering(config)):
            port = self.deliver[flat]
            m.d.comb += port.valid.eq(granted[c] & (self.free_instance[c] == instance))
            if width == 1:
                m.d.comb += port.payload.eq(self.trace[0].task)
            else:
                m.d.comb += port.payload.eq(Array(event.task for event in self.trace)[ranks[c]])
        return m

    def _deliver_records(self, m: Module, ranks: list):
        """Each instance's record: the read of its class's grant slot of last cycle."""
        records = [read.record for read in self.record_reads]
        if len(records) == 1:
            m.d.comb += [record.eq(records[0]) for record in self.deliver_record]
            return
        slots = [Signal.like(rank, name=f"last_slot_{c}") for c, rank in enumerate(ranks)]
        m.d.sync += [slot.eq(rank) for slot, rank in zip(slots, ranks)]
        for flat, (c, _) in enumerate(instance_numbering(self._config)):
            m.d.comb += self.deliver_record[flat].eq(Array(records)[slots[c]])
