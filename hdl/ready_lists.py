"""Ready lists: per accelerator class, the tags of its ready tasks in the order they became ready.

RTL of ``hts.models.ready_lists``; docs/microarchitecture.md, "Ready lists". Each list is a
ring of tags in two banks of distributed RAM, even slots in one and odd in the other, so
that two tags join it at one edge with one write port per bank; the head's tag is also
in a register, loaded from the slot after it as the head leaves, so that the dispatch
cycle starts from flip-flops rather than a RAM read. The task leaving the
enqueue stage learns that it is ready late in its cycle, from the tracker search: it
waits a cycle in the ``pending`` register, which offers it when its list is otherwise
empty, and joins its ring at the next edge, before that edge's woken task. Nothing is
searched: a squash leaves its listed tags in place, dead, and a list drops a dead head in
a cycle of its own. A listed tag is held from reallocation until it leaves its list.
"""

from amaranth.hdl import Assert, Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig
from hts.models.ready_lists import ring_entries

from .interfaces import queued_task_layout
from .mutation import mutable
from .primitives import index_set, record_ram, wire

__all__ = ["ReadyLists"]


class ReadyLists(wiring.Component):
    """One ring of tags per class; each offers its head to the dispatch arbiter.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    append, append_task : In
        From the enqueue stage: the task leaving it, with its readiness after the edge. Its
        class is recorded by tag (for its wake-up); a ready one is pending at the edge.
    woken : In
        From the wake-up: the tag made ready at the edge. It joins its class's ring at the
        edge, if it is still queued, after the pending task.
    queued, squashed, under : In
        The queued tag sets at the start of the cycle (``hdl/hts.py``): the tags enqueued and
        not dispatched, those the squash removes now, and those under each speculation ID.
        A listed tag is live when queued and not squashed.
    offer_valid, offer_task, take : Out, Out, In, per class
        Each class's head when live (its mask from ``under``); taken at the edge when granted.
        A dead head offers nothing and leaves at the edge.
    held : Out
        The tags listed, live or dead: the tracker reallocates none of them.
    pending, pending_tag : Signal
        The task that left the enqueue stage ready at the last edge: its class, one-hot, and
        its tag. It is its list's youngest entry.
    head, count : Signal, per class
        The ring's head slot (bank in bit 0) and the entries in the ring (the pending task
        aside); read by the tests.
    """

    def __init__(self, config: SystemConfig):
        hts, task = config.hts, queued_task_layout(config)
        self._config = config
        self._tags, self._classes = hts.tracker_entries, len(config.accelerators)
        self._ring = ring_entries(self._tags)
        super().__init__({
            "append": In(1),
            "append_task": In(task),
            "woken": In(data.StructLayout({"valid": 1, "tag": config.widths.tag})),
            "queued": In(self._tags),
            "squashed": In(self._tags),
            "under": In(data.ArrayLayout(self._tags, hts.spec_ids)),
            "offer_valid": Out(self._classes),
            "offer_task": Out(data.ArrayLayout(task, self._classes)),
            "take": In(self._classes),
            "held": Out(self._tags),
        })
        self.pending = Signal(self._classes)
        self.pending_tag = Signal(config.widths.tag)
        self.head = [Signal(range(self._ring), name=f"head_{c}") for c in range(self._classes)]
        self.count = [Signal(range(self._ring + 1), name=f"count_{c}") for c in range(self._classes)]

    def elaborate(self, platform):
        m = Module()
        config, tags = self._config, self._tags
        live = wire(m, self.queued & ~self.squashed, "live")
        [woken_class] = record_ram(m, "class_of", config.widths.accel_class, tags, self.append_task.tag,
                                   self.append, self.append_task.accel_class, [self.woken.tag])
        woken_live = self.woken.valid & mutable("lists_woken_lost", live.bit_select(self.woken.tag, 1), 0)
        # The enqueue stage's ``ready`` is late: it reaches only these flip-flops.
        m.d.sync += [
            self.pending.eq(Cat(*(self.append & (self.append_task.accel_class == c) for c in range(self._classes)))
                            & Mux(self.append_task.ready, -1, 0)),
            self.pending_tag.eq(self.append_task.tag),
        ]
        # The pending task's live bit is picked once for every class.
        pending_live = wire(m, live.bit_select(self.pending_tag, 1), "pending_live")
        popped_tags, pushed_tags = [], []
        for c in range(self._classes):
            joins = [(self.pending[c], self.pending_tag), (woken_live & (woken_class == c), self.woken.tag)]
            joins = mutable("lists_woken_first", joins, joins[::-1])
            head_tag, popped = self._ring_of(m, c, joins, live, pending_live)
            popped_tags.append((popped, head_tag))
            pushed_tags += joins
        listed = Signal(tags, name="listed")
        m.d.sync += listed.eq((listed | index_set(*zip(*pushed_tags), tags)) & ~index_set(*zip(*popped_tags), tags))
        pending_held = index_set([self.pending.any()], [self.pending_tag], tags)
        m.d.comb += self.held.eq(mutable("lists_release_listed", listed | pending_held, 0))
        return m

    def _ring_of(self, m: Module, c: int, joins: list, live, pending_live) -> tuple:
        """Class ``c``'s ring: its two ``(valid, tag)`` joins land at the tail in order; its
        head, or the pending task when the ring is empty, is offered when live, and leaves
        when taken or dead. A pending task that leaves still passes through the ring, so
        that the ring's slots follow the list's order. Returns the head's tag and whether it
        leaves."""
        ring, depth = self._ring, self._ring // 2
        head, count = self.head[c], self.count[c]
        tail = Signal(range(ring), name=f"tail_{c}")
        # The first join takes the tail's slot, the second the next one (in the other bank).
        (first_valid, first_tag), (second_valid, second_tag) = joins
        one = first_valid | second_valid
        two = first_valid & second_valid
        at_tail_tag = Mux(first_valid, first_tag, second_tag)
        tags_read = []
        for bank in range(2):
            at_tail = tail[0] == bank
            # The slot after the tail is in the next row when the tail is in the odd bank.
            row = Mux(~at_tail & tail[0], _next_row(tail[1:], depth), tail[1:])
            write_en = Mux(at_tail, one, two)
            data_in = Mux(at_tail, at_tail_tag, second_tag)
            # Each bank is read at the slot after the head, for the front's next value.
            after_head_row = Mux(head[0], _next_row(head[1:], depth), head[1:]) if bank == 0 else head[1:]
            [tag_read] = record_ram(m, f"ring_{c}_bank{bank}", self._config.widths.tag, depth, row, write_en,
                                    data_in, [after_head_row])
            tags_read.append(tag_read)
        # ``front`` holds the tag in the head's slot and ``in_ring`` whether the ring holds
        # any, so that the dispatch cycle starts with the head's live bit from flip-flops.
        front = Signal(self._config.widths.tag, name=f"front_{c}", reset_less=True)
        in_ring = Signal(name=f"in_ring_{c}")
        head_tag = wire(m, Mux(in_ring, front, self.pending_tag), f"head_tag_{c}")
        listed = in_ring | self.pending[c]
        head_live = mutable("lists_offer_dead", Mux(in_ring, live.bit_select(front, 1), pending_live), 1)
        offer = self.offer_task[c]
        m.d.comb += [
            self.offer_valid[c].eq(listed & head_live),
            offer.tag.eq(head_tag),
            offer.accel_class.eq(c),
            offer.mask.eq(Cat(*(under.bit_select(head_tag, 1) for under in self.under))),
            offer.ready.eq(1),
        ]
        popped = wire(m, listed & (~head_live | self.take[c]), f"pops_{c}")
        # Both outcomes of the pop are ready before it is known: it only selects.
        after_head = Mux(head[0], tags_read[0], tags_read[1])
        several, single = count > 1, count == 1
        front_if_popped = Mux(several, after_head, Mux(single, at_tail_tag, second_tag))
        # Whether the ring holds an entry after the edge, without the count's adder.
        in_ring_if_popped = several | single & one | two
        m.d.sync += [
            front.eq(Mux(popped, front_if_popped, Mux(in_ring, front, at_tail_tag))),
            head.eq(_advance(head, popped, ring)),
            tail.eq(_advance(_advance(tail, one, ring), two, ring)),
            # The count moves by -1 to +2: each outcome is added from flip-flops, and the late
            # joins and pop only select.
            count.eq(Mux(popped, Mux(two, count + 1, Mux(one, count, count - 1)),
                         Mux(two, count + 2, Mux(one, count + 1, count)))),
            in_ring.eq(Mux(popped, in_ring_if_popped, in_ring | one)),
        ]
        m.d.sync += Assert(ResetSignal() | (count <= ring), f"ready list {c} overflows")
        m.d.sync += Assert(ResetSignal() | ~self.take[c] | self.offer_valid[c], f"class {c} taken without an offer")
        return head_tag, popped


def _next_row(row, depth: int):
    return Mux(row == depth - 1, 0, row + 1)


def _advance(slot, by_one, ring: int):
    """``slot`` moved on one place around the ring when ``by_one``."""
    return Mux(by_one, Mux(slot == ring - 1, 0, slot + 1), slot)
