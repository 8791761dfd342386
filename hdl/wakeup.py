"""Wake-up: pending-producer counts and successor lists, walked one successor a cycle.

RTL of ``hts.models.wakeup`` (docs/microarchitecture.md, "Wake-up"). The lists live in
one RAM bank per tracker lane: a search row finds at most one producer per lane, so a row
registers its task with every producer it found in one cycle, one write per bank. A row's
finds are staged in a register first (per lane: found or not; the row; the waiter), so
that the search's comparators and the counts' adders sit in different cycles. The
walker reads one slot a cycle through a synchronous read port and decrements that
successor's count at the next edge.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .mutation import mutable
from .primitives import index_set, lowest_ones, popcount, select, wire

__all__ = ["WakeUp"]


class WakeUp(wiring.Component):
    """Counts per tag, a list of ``hts.successor_slots`` successors per producer, and the walker.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    register, waiter, producers, search_row : In
        The enqueue stage's task (``waiter``) and the tags this cycle's search row found
        (row ``search_row``): staged at the edge, less the ones released at it; the waiter
        joins their lists at the next.
    row_found : Out
        How many producers the row found (for the trace).
    waiter_ready : Out
        The waiter waits for nothing after the edge: count zero, nothing staged.
    release : In
        Tags released at the edge (broadcast or squashed): their lists wait for the walker.
    tracked : In
        The tracker's valid tags: whose lists a search can still reach.
    successors_full : Out
        A tracked producer's list, with the staged append, has fewer than two free slots:
        decode starts no task.
    woken : Out
        The tag whose count the walker takes from one to zero at the edge, unless the
        staged registration adds to it at the same edge.
    held : Out, registered
        Tags not to allocate: count not zero, list not walked yet, or being walked.
    pending, length, to_walk, walking : Signal
        Per tag: its count; its list's length; released, list waiting for the walker; the
        list being walked (one-hot, or none).
    staged_lanes, staged_row, staged_waiter : Signal
        The registration joined at this edge: the lanes whose producer in ``staged_row``
        the waiter joins.
    reading_valid, reading : Signal
        The successor read last cycle, whose count loses one at this edge.
    """

    def __init__(self, config: SystemConfig):
        hts, widths = config.hts, config.widths
        self._tags, self._lanes, self._slots = hts.tracker_entries, hts.search_lanes, hts.successor_slots
        self._rows = hts.tracker_rows
        tag = widths.tag
        row = range(max(self._rows, 2))       # a bit even with one row: no empty port
        super().__init__({
            "register": In(1),
            "waiter": In(tag),
            "producers": In(self._tags),
            "search_row": In(row),
            "row_found": Out(range(self._lanes + 1)),
            "waiter_ready": Out(1),
            "release": In(self._tags),
            "tracked": In(self._tags),
            "successors_full": Out(1),
            "woken": Out(data.StructLayout({"valid": 1, "tag": tag})),
            "held": Out(self._tags),
        })
        # A count names at most every other tag; a bit even with one tag: no empty signal.
        self.pending = Signal(data.ArrayLayout(range(max(self._tags, 2)), self._tags))
        self.length = Signal(data.ArrayLayout(range(self._slots + 1), self._tags))
        self.to_walk = Signal(self._tags)
        self.walking = Signal(self._tags)
        self.staged_lanes = Signal(self._lanes)
        self.staged_row = Signal(row)
        self.staged_waiter = Signal(tag)
        self.reading_valid = Signal()
        self.reading = Signal(tag)

    def _lane_tags(self) -> list[range]:
        return [range(lane, self._tags, self._lanes) for lane in range(self._lanes)]

    def elaborate(self, platform):
        m = Module()
        tags = range(self._tags)
        staying = self._stage(m)
        joining = wire(m, Cat(*(self.staged_lanes[tag % self._lanes] & (self.staged_row == tag // self._lanes)
                                for tag in tags)), "joining")
        walk = self._walker(m)
        self._banks(m, joining, walk)
        counted_next = self._counts(m, staying)
        for tag in tags:
            grown = self.length[tag] + joining[tag]
            m.d.sync += self.length[tag].eq(Mux(walk["last"] & walk["tag_hot"][tag], 0, grown))
        lengths_after = Cat(*((self.length[tag] != 0) | joining[tag] for tag in tags))
        to_walk_next = self.to_walk & ~walk["picked"] | self.release & lengths_after
        m.d.sync += [self.to_walk.eq(to_walk_next),
                     # Registered from the next state, so that the free-tag search starts at a flip-flop.
                     self.held.eq(counted_next | to_walk_next | Mux(walk["last"], 0, walk["tag_hot"]))]
        slots = self._slots
        nearly_full = Cat(*((length >= slots - 1) | joining[tag] & (length >= slots - 2)
                            for tag, length in enumerate(self.length)))
        m.d.comb += self.successors_full.eq((self.tracked & nearly_full).any())
        return m

    def _stage(self, m: Module):
        """The row's finds, less the producers released now, staged per lane at the edge;
        whether any stays (the waiter then waits)."""
        registering = Mux(self.register, self.producers, 0)
        found = [Cat(*(registering[tag] for tag in lane_tags)).any() for lane_tags in self._lane_tags()]
        m.d.comb += self.row_found.eq(popcount(found))
        kept = registering & ~self.release
        staying = wire(m, Cat(*(Cat(*(kept[tag] for tag in lane_tags)).any() for lane_tags in self._lane_tags())),
                       "staying")
        m.d.sync += [self.staged_lanes.eq(staying), self.staged_row.eq(self.search_row),
                     self.staged_waiter.eq(self.waiter)]
        return staying

    def _walker(self, m: Module) -> dict:
        """The producer whose list is read this cycle: the one being walked, else the next
        released one round robin after the last; its slot; whether a slot is read."""
        tags = self._tags
        walking = self.walking
        position = Signal(range(self._slots), name="position")
        after = Signal(tags, name="after_last_walked")      # tags above the last one walked
        idle = ~walking.any()
        later = self.to_walk & after
        picked = wire(m, Mux(idle, Mux(later.any(), lowest_ones(later), lowest_ones(self.to_walk)), 0), "picked")
        current = wire(m, walking | picked, "walk_tag_hot")
        slot = Mux(idle, 0, position)
        reads = current.any()
        remaining = mutable("walk_stops_early", 1, 2)
        last = wire(m, reads & (slot + remaining >= select(current, self.length)), "walk_last_read")
        m.d.sync += [
            walking.eq(Mux(last, 0, current)),
            position.eq(Mux(last, 0, slot + 1)),
        ]
        with m.If(picked.any()):
            # The thermometer above the pick: every tag higher than it.
            m.d.sync += after.eq(Cat(*(picked[:tag].any() for tag in range(tags))))
        return {"tag_hot": current, "position": slot, "reads": reads, "last": last, "picked": picked}

    def _banks(self, m: Module, joining, walk):
        """One RAM bank per lane: bank ``l`` holds the lists of tags ``l``, ``l + lanes``, ...;
        the staged waiter is written at the end of its producers' lists; the walker's read
        arrives a cycle late in ``reading``."""
        lanes, slots = self._lanes, self._slots
        read_base = select(walk["tag_hot"], [Const((tag // lanes) * slots) for tag in range(self._tags)])
        read_lane = Signal(range(max(lanes, 2)), name="read_lane")    # a bit even with one lane
        m.d.sync += [self.reading_valid.eq(walk["reads"]),
                     read_lane.eq(select(walk["tag_hot"], [Const(tag % lanes) for tag in range(self._tags)]))]
        outputs = []
        for lane, lane_tags in enumerate(self._lane_tags()):
            bank = Memory(shape=self.reading.shape(), depth=len(lane_tags) * slots, init=[])
            m.submodules[f"successors_{lane}"] = bank
            write = bank.write_port()
            row = self.staged_row if len(lane_tags) > 1 else 0
            appended = select([joining[tag] for tag in lane_tags], [self.length[tag] for tag in lane_tags])
            dropped = mutable("successor_list_drops_waiter", 0, (appended != 0) & (lane == lanes - 1))
            m.d.comb += [write.addr.eq(row * slots + appended), write.data.eq(self.staged_waiter),
                         write.en.eq(self.staged_lanes[lane] & ~dropped)]
            read = bank.read_port()
            m.d.comb += read.addr.eq(read_base + walk["position"])
            outputs.append(read.data)
        m.d.comb += self.reading.eq(Cat(outputs).word_select(read_lane, len(outputs[0])) if lanes > 1 else outputs[0])

    def _counts(self, m: Module, staying):
        """Each count grows by the staged registration and loses the successor read last
        cycle; returns, per tag, whether its count is not zero after the edge."""
        joins = self.staged_lanes.any()
        joined_hot = index_set([joins], [self.staged_waiter], self._tags)
        joined = popcount(self.staged_lanes)
        reading_hot = wire(m, Mux(self.reading_valid, 1 << self.reading, 0)[:self._tags], "reading_hot")
        for tag, count in enumerate(self.pending):
            added = Mux(joined_hot[tag], mutable("pending_count_underflows", joined, joins), 0)
            m.d.sync += count.eq(count + added - reading_hot[tag])
        # All from registers but ``staying``, which only the search's OR reaches.
        waiter_hot = index_set([self.register], [self.waiter], self._tags)
        waiter_count = select(waiter_hot, self.pending)
        decremented = self.reading_valid & (self.reading == self.waiter)
        waiter_joins = joins & (self.staged_waiter == self.waiter)
        m.d.comb += self.waiter_ready.eq(~staying.any() & ~waiter_joins
                                         & ((waiter_count == 0) | (waiter_count == 1) & decremented))
        reading_count = select(reading_hot, self.pending)
        rejoins = joins & (self.staged_waiter == self.reading)
        m.d.comb += [self.woken.valid.eq(self.reading_valid & (reading_count == 1) & ~rejoins),
                     self.woken.tag.eq(self.reading)]
        # Not zero after the edge: not zero and not taken to zero now, or joined now.
        return Cat(*((count != 0) & ~((count == 1) & reading_hot[tag]) | joined_hot[tag]
                     for tag, count in enumerate(self.pending)))
