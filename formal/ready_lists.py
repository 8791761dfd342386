"""Formal harness of the ready lists (``hts.hdl.ready_lists.ReadyLists``): each list a FIFO of
the tags that became ready, a tag listed once and held while listed, a head offered only live."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.hdl._ir import Fragment
from amaranth.lib import data
from amaranth.utils import ceil_log2

from hts.hdl.primitives import fewer_than, index_set
from hts.hdl.ready_lists import ReadyLists
from hts.models.ready_lists import ring_entries

from .harness import Harness, PropertyGroup, free_inputs, registers

__all__ = ["ListShadow", "ReadyListsHarness", "ram_words"]


def ram_words(fragment: Fragment, name: str, width: int, depth: int) -> list[Value]:
    """Every word of the RAM ``name`` (``record_ram``) of an elaborated block: the register
    itself when one word deep, else read through a port added here, which no logic of the
    block uses. An induction can then be told what the RAM holds."""
    if depth == 1:
        return [registers(fragment, name)[name]]
    memory = next(sub for sub, sub_name, *_ in fragment.subfragments if sub_name == name)
    words = [Signal(width, name=f"{name}_word{address}") for address in range(depth)]
    for address, word in enumerate(words):
        memory.read_port(domain="comb", addr=Const(address, ceil_log2(depth)), data=word, en=Const(1),
                         transparent_for=())
    return words


class ListShadow:
    """The lists as their contract states them, kept beside the block from its ports: per
    class a queue of tags, position 0 the head, that a task joins at the edge it becomes
    ready (the woken one if live, then the task leaving the enqueue stage if ready) and
    leaves from the head, when dead or taken; and the class of each tag, recorded as its
    task leaves the enqueue stage.

    Being plain registers, the queues make the order a harness states obvious;
    ``check_state`` ties the block's state to them.
    """

    def __init__(self, m: Module, config, lists: ReadyLists, fragment: Fragment):
        widths, tags = config.widths, config.hts.tracker_entries
        self.config, self.lists, self.fragment = config, lists, fragment
        self.classes, self.ring = len(config.accelerators), ring_entries(tags)
        self.live = Signal(tags, name="shadow_live")
        m.d.comb += self.live.eq(lists.queued & ~lists.squashed)
        self.recorded = Signal(data.ArrayLayout(widths.accel_class, tags), name="shadow_classes", reset_less=True)
        with m.If(lists.append):
            m.d.sync += self.recorded[lists.append_task.tag].eq(lists.append_task.accel_class)
        self.queues = [Signal(data.ArrayLayout(widths.tag, self.ring), name=f"shadow_queue_{c}", reset_less=True)
                       for c in range(self.classes)]
        self.lengths = [Signal(range(self.ring + 1), name=f"shadow_length_{c}") for c in range(self.classes)]
        self.joins = self._joins()
        for c in range(self.classes):
            self._follow(m, c)
        self.listed = index_set([k < length for length in self.lengths for k in range(self.ring)],
                                [queue[k] for queue in self.queues for k in range(self.ring)], tags)

    def head_live(self, c: int) -> Value:
        """Class ``c`` has a head, and it is live."""
        return (self.lengths[c] != 0) & self.live.bit_select(self.queues[c][0], 1)

    def _joins(self) -> list:
        """Per class, its two ``(valid, tag)`` joins at this edge, in the order they join."""
        lists = self.lists
        task, woken = lists.append_task, lists.woken
        enqueued = lists.append & task.ready
        woken_live = woken.valid & self.live.bit_select(woken.tag, 1)
        woken_class = self.recorded[woken.tag]
        return [[(woken_live & (woken_class == c), woken.tag), (enqueued & (task.accel_class == c), task.tag)]
                for c in range(self.classes)]

    def _follow(self, m: Module, c: int):
        """Class ``c``'s queue at the edge: the head leaves if dead or taken, the joins land behind."""
        queue, length, ring = self.queues[c], self.lengths[c], self.ring
        leaves = (length != 0) & (~self.head_live(c) | self.lists.take[c])
        stays = length - leaves
        (first_valid, first_tag), (second_valid, second_tag) = self.joins[c]
        for k in range(ring):
            kept = Mux(leaves, queue[k + 1], queue[k]) if k + 1 < ring else queue[k]
            m.d.sync += queue[k].eq(Mux(first_valid & (stays == k), first_tag,
                                        Mux(second_valid & (stays + first_valid == k), second_tag, kept)))
        m.d.sync += length.eq(stays + first_valid + second_valid)

    def check_state(self, harness: Harness, m: Module, groups):
        """The block's state is the shadow's: the queues hold each tag once and ``held`` is
        their tags; a pending task (``pending``, of one class at most) is its queue's
        youngest entry, and each ring holds the rest of its queue: its count, its tail the
        head plus the count, its slots from the head the queue's tags, its ``front`` the
        head's tag and ``in_ring`` whether it holds any; a queued tag's class
        record is the one recorded as its task left the enqueue stage. (All but the first
        two are helpers: state no port shows, which an induction needs.)"""
        config, lists, ring, tags = self.config, self.lists, self.ring, self.config.hts.tracker_entries
        entries = [(k < length, queue[k]) for queue, length in zip(self.queues, self.lengths) for k in range(ring)]
        harness.check(m, groups, "a_tag_is_listed_once", Cat(*(
            ~(valid_a & valid_b) | (tag_a != tag_b)
            for i, (valid_a, tag_a) in enumerate(entries) for valid_b, tag_b in entries[i + 1:])).all())
        harness.check(m, groups, "held_is_the_listed_tags", lists.held == self.listed)
        harness.check(m, groups, "pending_is_the_youngest", fewer_than(lists.pending, 2) & Cat(*(
            ~pending | (length != k + 1) | (lists.pending_tag == queue[k])
            for pending, queue, length in zip(lists.pending, self.queues, self.lengths) for k in range(ring))).all())
        harness.check(m, groups, "counts_are_the_rings", Cat(*(
            count + pending == length
            for count, pending, length in zip(lists.count, lists.pending, self.lengths))).all())
        tails = registers(self.fragment, *(f"tail_{c}" for c in range(self.classes)))
        harness.check(m, groups, "tails_follow_the_heads", Cat(*(
            tails[f"tail_{c}"] == Mux(head + count >= ring, head + count - ring, head + count)
            for c, (head, count) in enumerate(zip(lists.head, lists.count)))).all())
        holds = []
        for c, (queue, count, head) in enumerate(zip(self.queues, lists.count, lists.head)):
            banks = [ram_words(self.fragment, f"ring_{c}_bank{bank}", config.widths.tag, ring // 2) for bank in (0, 1)]
            # Slot s holds position k when the head is k slots before it.
            holds += [~((head == (slot - k) % ring) & (k < count)) | (banks[slot % 2][slot // 2] == queue[k])
                      for slot in range(ring) for k in range(ring)]
        harness.check(m, groups, "rings_hold_the_lists", Cat(*holds).all())
        fronts = registers(self.fragment, *(name for c in range(self.classes)
                                            for name in (f"front_{c}", f"in_ring_{c}")))
        harness.check(m, groups, "fronts_are_the_heads", Cat(*(
            (fronts[f"in_ring_{c}"] == (count != 0)) & ((count == 0) | (fronts[f"front_{c}"] == queue[0]))
            for c, (queue, count) in enumerate(zip(self.queues, lists.count)))).all())
        classes = ram_words(self.fragment, "class_of", config.widths.accel_class, tags)
        harness.check(m, groups, "queued_classes_recorded",
                      Cat(*(~lists.queued[tag] | (classes[tag] == self.recorded[tag]) for tag in range(tags))).all())


class ReadyListsHarness(Harness):
    """The lists with the enqueue stage, the wake-up, the tracker's queued tag sets and the
    dispatch arbiter left free, narrowed to their contract, beside a :class:`ListShadow`.

    The shadow's queues are FIFOs by construction: that the block offers the head of each
    (``offers_the_oldest``, its rings and pending task holding the queues) says its lists
    are FIFOs, a task woken at an edge ahead of the one leaving the enqueue stage at it.
    That it offers exactly the live heads, its state the shadow's, which drops a dead head,
    says a dead head leaves without an offer.
    """

    # The base case spans reset, a task left waiting, a ready one pending, the first's
    # wake-up, and the cycle after: a join lost or out of order fails from reset.
    GROUPS = (PropertyGroup("lists", "prove", 5),)
    ASSUMPTIONS = ("appended_tag_free", "woken_not_listed", "queued_only_by_append", "take_only_offered")

    def build(self, m: Module):
        config = self.config
        lists = ReadyLists(config)
        m.submodules.lists = fragment = Fragment.get(lists, None)
        free_inputs(m, lists)
        shadow = ListShadow(m, config, lists, fragment)
        self._assume_contract(m, lists, shadow)
        shadow.check_state(self, m, "lists")
        classes, ring = range(shadow.classes), shadow.ring
        self.check(m, "lists", "no_list_overflows", Cat(*(count <= ring for count in lists.count)).all())
        self.check(m, "lists", "offers_the_oldest", Cat(*(
            (length == 0) | (offer.tag == queue[0])
            for offer, queue, length in zip(lists.offer_task, shadow.queues, shadow.lengths))).all())
        self.check(m, "lists", "offers_only_live_heads",
                   lists.offer_valid == Cat(*(shadow.head_live(c) for c in classes)))
        # What the dispatch harness assumes (``offers_of_their_class``).
        self.check(m, "lists", "offers_of_their_class",
                   Cat(*(lists.offer_task[c].accel_class == c for c in classes)).all())
        self._covers(m, lists, shadow)

    def _assume_contract(self, m: Module, lists: ReadyLists, shadow: ListShadow):
        """The neighbours' side: the tracker, the wake-up and the arbiter."""
        tags = self.config.hts.tracker_entries
        task = lists.append_task
        # Decode allocated the task's tag free: neither queued nor held (the tracker's ``held``).
        self.assume(m, "appended_tag_free",
                    ~lists.append | (task.tag < tags) & ~(lists.queued | lists.held).bit_select(task.tag, 1))
        # The wake-up wakes a task once, and a task appended ready is never woken.
        self.assume(m, "woken_not_listed", ~lists.woken.valid | ~shadow.listed.bit_select(lists.woken.tag, 1))
        # A tag joins the queued set only as its task leaves the enqueue stage
        # (``queued_tag_sets`` in hdl/hts.py), and so has its class recorded.
        was_queued, was_appended = Signal(tags), Signal(tags)
        m.d.sync += [was_queued.eq(lists.queued), was_appended.eq(index_set([lists.append], [task.tag], tags))]
        self.assume(m, "queued_only_by_append", (lists.queued & ~(was_queued | was_appended)) == 0)
        # The arbiter takes only offers.
        self.assume(m, "take_only_offered", (lists.take & ~lists.offer_valid) == 0)

    def _covers(self, m: Module, lists: ReadyLists, shadow: ListShadow):
        ring, tags = shadow.ring, self.config.hts.tracker_entries
        counts = list(zip(lists.head, lists.count))
        self.cover(m, "lists", "a_dead_head_dropped",
                   Cat(*((count != 0) & ~valid for (_, count), valid in zip(counts, lists.offer_valid))).any())
        self.cover(m, "lists", "a_list_holds_every_tag", Cat(*(count == tags for _, count in counts)).any())
        self.cover(m, "lists", "a_pending_task_offered", Cat(*(
            pending & (count == 0) & valid
            for pending, (_, count), valid in zip(lists.pending, counts, lists.offer_valid))).any())
        if tags > 1:   # else one entry at most: no two joins, nothing runs across the end
            self.cover(m, "lists", "two_joins_to_one_class",
                       Cat(*(first & second for (first, _), (second, _) in shadow.joins)).any())
            self.cover(m, "lists", "a_list_wraps", Cat(*((count != 0) & (head + count > ring)
                                                         for head, count in counts)).any())
