"""Dispatch arbiter: the oldest offers of the reservation stations go to free accelerator instances.

RTL of ``Dispatch.dispatch`` (``models/dispatch.py``); see docs/microarchitecture.md, "One
cycle", step 5. Each station offers its oldest ready task; an offer is eligible when its
class has a free instance. The ``hts.dispatch_width`` oldest eligible offers go, each to
the lowest free instance of its class.

The model sorts offers by decode sequence number. Here age comes from the memory
tracker's age matrix: an offer's rank is the number of eligible offers older than it,
and the offers of rank below ``dispatch_width`` are granted. Every tag's rank is counted
from its matrix row, and each offer takes the rank of its tag. Ranks are distinct, because
offers carry distinct tags of tasks in flight, whose ages the matrix orders totally.

Stations hold queued records (tag, class, mask, waits). A grant of rank ``k`` takes its
offer's record and the tracker entry of its tag (regions, pid and pc from the tracker's
flip-flops), which together are the task the shell receives; with one dispatch way each
field is read from the one-hot oldest tag instead, not behind the class's grant. The
task's record (task ID, metadata) follows the cycle after, read from the tracker's
distributed RAM by the tag registered at the grant, so that the RAM's read is not behind
the pick (docs/hardware.md, "Timing"). That is ``dispatch_width`` tag look-ups per cycle
rather than the whole task kept in every station entry (hdl/interfaces.py).
"""

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hts.config import SystemConfig, bits_for

from .interfaces import (delivered_task_layout, dispatch_trace_layout, instance_numbering, occupy_layout,
                         queued_task_layout, record_read_signature, task_record_layout, tracker_register_layout)
from .mutation import mutable
from .primitives import encode, entry_at, entry_of, index_set, oldest, popcount, select, whole_task, youngest

__all__ = ["DispatchArbiter"]


class DispatchArbiter(wiring.Component):
    """Grants up to ``hts.dispatch_width`` station offers per cycle, oldest first.

    Inputs (combinational, all on the state registered at the start of the cycle):

    - ``offer_valid``, ``offer_task`` (in, from the reservation stations): per class,
      whether the station offers its oldest ready task, and that task's queued record;
    - ``tasks`` (in, from the memory tracker): its entries, by tag: the regions, pid and
      pc of every task in flight;
    - ``record_reads`` (out, to the memory tracker, :func:`~hts.hdl.interfaces.record_read_signature`):
      per slot, the tag granted in it last cycle (registered), and that tag's task ID
      and metadata back;
    - ``has_free``, ``free_instance`` (in, from the ASR): per class, whether an instance
      is free, and the lowest free one (numbered within the class);
    - ``older`` (in, from the memory tracker): its age matrix; ``older[j]`` bit ``i`` is
      set when task ``i`` was decoded before task ``j``. Every row is reduced, but only
      the columns of eligible offers' tags count and only the offered tags' ranks are
      used, and those tags are in flight, so stale bits of free tags do not matter (and
      the tracker's ``valid`` is not needed).

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
            "older": In(data.ArrayLayout(hts.tracker_entries, hts.tracker_entries)),
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
        tags = config.hts.tracker_entries
        eligible = Signal(len(classes))
        granted = Signal(len(classes))
        m.d.comb += eligible.eq(self.offer_valid & mutable("dispatch_ignores_busy", self.has_free, -1))
        # The tags of the eligible offers (distinct: each is a different task in flight).
        eligible_tags = Signal(tags)
        m.d.comb += eligible_tags.eq(index_set(eligible, (offer.tag for offer in self.offer_task), tags))
        # The rank every tag would have among the eligible offers: how many of them are
        # older. It is computed for all tags from the matrix rows as they are, and each
        # offer then picks its tag's rank: selecting an age row by tag instead costs a
        # wide multiplexer per offer and row bit, most of this block's logic when it did.
        width = config.hts.dispatch_width
        ranks = [Signal(range(len(classes)), name=f"rank_{c}") for c in classes]
        if width == 1:
            # Only the oldest eligible tag matters: an AND-OR per tag, no adder; the
            # single grant is of rank 0, so ``ranks`` stay 0.
            first = Signal(tags)
            pick = mutable("dispatch_grants_youngest", oldest, youngest)
            m.d.comb += [first.eq(Cat(*pick(eligible_tags, self.older))),
                         # The oldest eligible offer is granted: ``first`` is one-hot or empty.
                         self.granted_tags.eq(first)]
            for c in classes:
                m.d.comb += granted[c].eq(eligible[c] & first.bit_select(self.offer_task[c].tag, 1))
        else:
            # Ranks run to tags - 1; bits_for keeps them at least a bit wide, so that a
            # single-tag tracker still has a rank to index.
            tag_ranks = Signal(data.ArrayLayout(bits_for(tags), tags))
            for tag, row in enumerate(self.older):
                m.d.comb += tag_ranks[tag].eq(popcount(row & eligible_tags))
            for c in classes:
                m.d.comb += [ranks[c].eq(tag_ranks[self.offer_task[c].tag]),
                             granted[c].eq(eligible[c] & (ranks[c] < width))]
            m.d.comb += self.granted_tags.eq(index_set(granted, (offer.tag for offer in self.offer_task), tags))

        m.d.comb += self.take.eq(granted)
        for c in classes:
            m.d.comb += [self.occupy[c].valid.eq(granted[c]), self.occupy[c].instance.eq(self.free_instance[c])]

        # Slot k: the grant of rank k, at most one class, so an AND-OR select of its
        # record, then its tag's tracker entry. With one way the granted tag is ``first``,
        # already one-hot: the whole task comes from it (its tag is its encoding, its mask
        # an AND-OR of the masks by tag, its class the encoding of the grant, its ranges,
        # pid and pc an AND-OR of the tracker entries), none of it from a select behind
        # the class's grant, and its record's RAM address (read next cycle) is its tag.
        # Each tag's offered mask is formed beside the pick, from the offers alone. The
        # task's ``waits`` is empty, as the stations offer only ready tasks.
        for slot, (event, record) in enumerate(zip(self.trace, self.record_reads)):
            in_slot = Signal(len(classes), name=f"in_slot_{slot}")
            m.d.comb += [
                in_slot.eq(Cat(*(granted[c] & (ranks[c] == slot) for c in classes))),
                event.valid.eq(in_slot.any()),
                event.instance.eq(select(in_slot, self.free_instance)),
            ]
            if width == 1:
                masks_by_tag = [select([eligible[c] & (self.offer_task[c].tag == tag) for c in classes],
                                       [offer.mask for offer in self.offer_task]) for tag in range(tags)]
                m.d.comb += [*whole_task(event.task, entry_at(self.tasks, first)),
                             event.task.tag.eq(encode(first)),
                             event.task.accel_class.eq(encode(granted)),
                             event.task.mask.eq(select(first, masks_by_tag))]
                m.d.sync += record.tag.eq(encode(first))
            else:
                queued = Signal(queued_task_layout(config), name=f"queued_{slot}")
                m.d.comb += [queued.eq(select(in_slot, self.offer_task)),
                             *whole_task(event.task, queued, entry_of(self.tasks, queued.tag))]
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
