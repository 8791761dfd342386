"""Memory tracker: the regions every in-flight task reads and writes, searched a row a cycle.

RTL of ``hts.models.memory_tracker``; index = tag. A search compares one row of
``hts.tracker_lanes`` entries per cycle through as many comparator lanes. An entry also
holds the rest of its task and which TLB homes it touches (docs/microarchitecture.md,
"Enqueue's cycle").
"""

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import (record_read_signature, region_layout, task_record_layout, tracker_entry_layout,
                         tracker_register_layout)
from .mutation import mutable
from .primitives import (index_set, lowest_set, overlaps, record_ram, record_register, retargeted_ranges, search_row,
                         select)

__all__ = ["MemoryTracker"]


class MemoryTracker(wiring.Component):
    """Ranges of ``hts.tracker_entries`` entries searched by ``hts.tracker_lanes`` lanes, with
    lowest-free-tag allocation.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    query_reads, query_writes, ignoring, depends : In, In, In, Out
        The search; the tags broadcast now, left out; the tags of this cycle's row whose
        ranges it meets.
    search_start, search_row, search_last : In, Out, Out
        Decode hands a search over at the edge; the row compared now (0 in the cycle after
        the hand-over, one more each cycle: searches never overlap), and whether it is the last.
    query_home, home_search_continues : In, In
        ``query_writes`` is a new TLB home: its overlaps are ``touches``, not ``depends``;
        its search goes on next cycle, so its TLB slot stays young.
    free_tag, has_free, alloc, alloc_entry : Out, Out, In, In
        The lowest free tag not ``held``; decode allocates it at the edge (written every cycle).
    held : In
        From the wake-up: tags whose list or count is still in use.
    alloc_reads_copy : In
        The TLB slot the new entry's reads came through, for this cycle's retarget.
    release : In
        Tags freed at the edge.
    retarget, retarget_tm, retarget_home, retarget_producer, retarget_slot : In
        The producer writes home and readers of the copy read home, from the edge.
    tlb_homes, tlb_alloc, tlb_alloc_slot : In
        The TLB's homes and the slot written at this edge.
    valid, entries, holds_tm : Out
        Tags in use; their regions, pid and pc; whether one touches TM.
    touches : Out, registered
        ``touches[t]`` bit ``i``: tag ``t``'s ranges overlap TLB slot ``i``'s home.
    record_reads : In(record_read_signature), per dispatch way
        A tag's task ID and metadata, read without a clock.
    """

    def __init__(self, config: SystemConfig):
        self._count = count = config.hts.tracker_entries
        self._lanes, self._rows = config.hts.search_lanes, config.hts.tracker_rows
        slots = config.hts.tlb_entries
        region = region_layout(config)
        entry = tracker_entry_layout(config)
        self._record = task_record_layout(config)
        super().__init__({
            "query_reads": In(region),
            "query_writes": In(region),
            "search_start": In(1),
            "search_row": Out(range(max(self._rows, 2))),    # a bit even with one row: no empty port
            "search_last": Out(1),
            "query_home": In(1),
            "home_search_continues": In(1),
            "ignoring": In(count),
            "depends": Out(count),
            "free_tag": Out(config.widths.tag),
            "has_free": Out(1),
            "held": In(count),
            "alloc": In(1),
            "alloc_entry": In(entry),
            "alloc_reads_copy": In(slots),
            "release": In(count),
            "retarget": In(1),
            "retarget_tm": In(region),
            "retarget_home": In(region),
            "retarget_producer": In(config.widths.tag),
            "retarget_slot": In(slots),
            "tlb_homes": In(data.ArrayLayout(region, slots)),
            "tlb_alloc": In(1),
            "tlb_alloc_slot": In(bits_for(slots)),
            "valid": Out(count),
            "entries": Out(data.ArrayLayout(tracker_register_layout(config), count)),
            "record_reads": In(record_read_signature(config)).array(config.hts.dispatch_width),
            "holds_tm": Out(1),
            "touches": Out(data.ArrayLayout(slots, count)),
        })
        self._home_blocks = config.memory.blocks

    def elaborate(self, platform):
        m = Module()
        count = self._count
        row, last = search_row(m, self.search_start, self._rows, "row")
        m.d.comb += [self.search_row.eq(row), self.search_last.eq(last)]
        in_row = [row == tag // self._lanes for tag in range(count)]
        lane_meets = [self._lane(lane) for lane in range(self._lanes)]
        depends, written_meets = [], []
        for tag in range(count):
            raw, written_meet = lane_meets[tag % self._lanes]
            written_meets.append(in_row[tag] & written_meet)
            live = in_row[tag] & self.valid[tag] & mutable("tracker_broadcast_kept", ~self.ignoring[tag], 1)
            depends.append(live & (raw | written_meet & ~self.query_home))
        m.d.comb += self.depends.eq(Cat(*depends))

        free = ~self.valid & ~mutable("tag_reused_while_held", self.held, 0)
        m.d.comb += [self.has_free.eq(free.any()), self.free_tag.eq(lowest_set(free))]

        # No reset: entries and ``touches`` mean something only for valid tags.
        entries = record_register(m, self.entries, "entry_records")
        allocated, writing = Signal(count), Signal(count)
        m.d.comb += allocated.eq(index_set([self.alloc], [self.free_tag], count))
        # The free tag's entry is written every cycle, decode or not: an entry
        # means nothing until its valid bit is set, so only that bit waits for decode.
        m.d.comb += writing.eq(index_set([self.has_free], [self.free_tag], count))
        remaining = self.valid & ~self.release
        # The retarget is applied to the arriving entry and to each held one apart, so that
        # what it rewrites in held entries (for ``touches``) does not wait for decode.
        arriving, _ = self._retargeted(m, self.free_tag, self._registers_of(m, self.alloc_entry),
                                       "retargeted_arrival", self.alloc_reads_copy)
        rewritten = []
        for tag in range(count):
            held, rewrote = self._retargeted(m, tag, self.entries[tag], f"retargeted_{tag}")
            m.d.sync += entries[tag].eq(Mux(writing[tag], arriving, held))
            rewritten.append(rewrote)
        m.d.comb += self.holds_tm.eq(Cat(*(valid & (self._in_tm(entry.reads) | self._in_tm(entry.writes))
                                           for valid, entry in zip(self.valid, self.entries))).any())
        self._update_touches(m, rewritten, written_meets, in_row)
        self._records(m)
        m.d.sync += self.valid.eq(remaining | allocated)
        return m

    def _lane(self, lane: int) -> tuple[Value, Value]:
        """Lane ``lane`` compares the query with the entry of the row's tag ``row * lanes + lane``:
        whether its write meets the query's read (RAW), and whether the query's write meets
        its read or write (WAR, WAW)."""
        tags = range(lane, self._count, self._lanes)
        row = mutable("tracker_lane_skips_entry", self.search_row, 0) if lane == self._lanes - 1 else self.search_row
        layout = self.entries.shape().elem_shape
        entry = self.entries[tags[0]] if len(tags) == 1 else layout(
            select([row == index for index in range(len(tags))], [self.entries[tag] for tag in tags]))
        raw = mutable("tracker_raw_ignored", overlaps(self.query_reads, entry.writes), 0)
        written_meet = (mutable("tracker_war_ignored", overlaps(self.query_writes, entry.reads), 0)
                        | mutable("tracker_waw_ignored", overlaps(self.query_writes, entry.writes), 0))
        return raw, written_meet

    def _registers_of(self, m: Module, entry):
        registers = Signal(self.entries.shape().elem_shape, name="arriving_registers")
        m.d.comb += [getattr(registers, name).eq(getattr(entry, name)) for name, _ in registers.shape()]
        return registers

    def _records(self, m: Module):
        """Task ID and metadata in distributed RAM, the free tag's written every cycle."""
        arriving = Signal(self._record, name="arriving_record")
        m.d.comb += [getattr(arriving, name).eq(getattr(self.alloc_entry, name)) for name, _ in self._record]
        readers = list(self.record_reads)
        records = record_ram(m, "records", self._record, self._count, self.free_tag, self.has_free, arriving,
                             [reader.tag for reader in readers])
        m.d.comb += [reader.record.eq(record) for reader, record in zip(readers, records)]

    def _in_tm(self, region):
        return (region.blocks != 0) & (region.base >= self._home_blocks)

    def _retargeted(self, m: Module, tag, entry, name: str, reads_copy=None):
        """``entry`` with this cycle's retarget applied (free entries too: never read), and whether it changed."""
        result = Signal.like(entry, name=name)
        reads, writes, rewrote = retargeted_ranges(entry, tag, self, reads_copy)
        m.d.comb += [result.eq(entry), result.reads.eq(reads), result.writes.eq(writes)]
        return result, rewrote

    def _update_touches(self, m: Module, rewritten, home_meets, in_row):
        """``touches`` at the edge, from registered state: a free tag's row stays empty; the
        slot allocated with the task being searched (young until its search ends) takes the
        search's column, a row of tags a cycle; a retarget adds the new home's bits.
        """
        homes = list(self.tlb_homes)
        young = Signal(len(homes))     # named: the formal harness hts.formal.retire reads it
        m.d.sync += young.eq(index_set([self.tlb_alloc], [self.tlb_alloc_slot], len(homes))
                             | Mux(self.home_search_continues, young, 0))
        retarget_row = Cat(*(overlaps(self.retarget_home, home) for home in homes))
        touches = record_register(m, self.touches, "touch_records")
        for tag, home_meet in enumerate(home_meets):
            column = Mux(home_meet, young, 0)
            rewritten_young = Mux(in_row[tag], self.touches[tag] & ~young | column, self.touches[tag])
            row = rewritten_young | Mux(rewritten[tag], retarget_row, 0)
            m.d.sync += touches[tag].eq(Mux(self.valid[tag], row, 0))
