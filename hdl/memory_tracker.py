"""Memory tracker: a CAM of the regions every in-flight task reads and writes.

RTL of ``hts.models.memory_tracker``; see docs/microarchitecture.md for its timing. One
entry per task from decode until its completion is broadcast; the entry index is the
task's tag. A retarget by the copy-back engine rewrites ranges in place
(``_apply_retarget`` of ``models/hts.py``).

An entry holds the rest of its task too (pid, pc, task ID, metadata): the window and the
stations queue only tags, masks and waits, and the dispatch arbiter completes a granted
task from here. The ranges a queued task carries in the model are the ones kept here,
since both are written by decode and rewritten by the same retargets. The part of an
entry that only the delivered task carries (task ID, metadata) is kept in distributed RAM
and read by tag (docs/hardware.md).

It also keeps, registered, which TLB slots each entry touches, so that the TLB's copy-back
choice reads one bit per (tag, slot) instead of comparing every home with every range
each cycle. Tracker ranges change only when a tag is allocated or retargeted, and TLB
homes only when a slot is allocated, so the bits are computed at those edges alone; a
new slot's bits a cycle late, from the search for the task that allocated it
(``_update_touches``).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import (record_read_signature, region_layout, task_record_layout, tracker_entry_layout,
                         tracker_register_layout)
from .mutation import mutable
from .primitives import index_set, lowest_set, overlaps, record_ram, record_register, retargeted_ranges

__all__ = ["MemoryTracker"]


class MemoryTracker(wiring.Component):
    """Range CAM over ``hts.tracker_entries`` entries, with lowest-free-tag allocation.

    Look-up ports (combinational, on the state registered at the start of the cycle):

    - ``query_reads``, ``query_writes`` (in, from the top level): the physical regions
      searched. Either the enqueue stage's task (decode allocated its entry last cycle)
      or the branch unit's memory branch (its block as a one-block read, no write):
      both were decoded last cycle, and decode takes one instruction a cycle, so the two
      searches share one set of comparators;
    - ``query_home`` (in, from the top level): ``query_writes`` is not the task's output
      but the home of the TLB slot allocated last cycle, for that task's speculative
      output. The task writes the TM region the bump pointer has just handed out, which
      no range in flight touches (the top level asserts it), so it has no WAR or WAW
      dependence; the home's overlaps give the slot's ``touches`` column instead;
    - ``ignoring`` (in, from the CDB): tags broadcast this cycle, which a search made now
      need not wait for;
    - ``depends`` (out, to the enqueue stage and the branch unit): tags whose entries the
      queried regions meet (RAW, and WAR and WAW unless ``query_home``), ``ignoring``
      aside; a task's own tag among them; for a branch, the tags that write its block;
    - ``free_tag``, ``has_free`` (out, to decode): the lowest free tag, and whether any is.

    Updates (registered, land at the clock edge):

    - ``alloc`` (in, from decode): allocate ``free_tag`` with ``alloc_entry``, which
      touches no home of a TLB entry valid at the start of the cycle (decode's rules;
      the top level asserts it in simulation). The free tag's entry and age row take
      ``alloc_entry`` in every cycle; ``alloc`` only sets its valid bit;
    - ``release`` (in, from the CDB and the squash logic): tags to free;
    - ``retarget``, ``retarget_tm``, ``retarget_home``, ``retarget_producer`` (in, from
      the copy-back engine), ``retarget_slot`` (in, from the TLB): the entry of tag
      ``retarget_producer`` writes ``retarget_home``, and every entry whose ``reads`` is
      exactly ``retarget_tm`` reads ``retarget_home``, the entry allocated in this cycle
      included (the model decodes before the end-of-cycle rewrite): that one is found by
      ``alloc_reads_copy`` (in, from decode), the TLB slot its reads were remapped
      through. The model matches writes on the TM region rather than on the producer's
      tag: while the TLB entry lives, only its producer writes it.

    TLB homes, for ``touches`` (in, from the TLB and decode):

    - ``tlb_homes``: the home region of every TLB slot (the TLB's registered ``entries``;
      those of free slots are never used);
    - ``tlb_alloc``, ``tlb_alloc_slot``: decode writes a TLB entry into slot
      ``tlb_alloc_slot`` (the TLB's ``alloc_slot``) at this edge; its ``touches`` column
      is registered at the next one, from that cycle's search (``query_home``).

    State read by other blocks:

    - ``valid`` (out): one bit per tag in use; ``entries`` (out): their regions, pid and pc;
    - ``record_reads`` (in, ``hts.dispatch_width`` of
      :func:`~hts.hdl.interfaces.record_read_signature`, from the dispatch arbiter): each
      names a tag and gets its task ID and metadata back, combinationally (an asynchronous
      read of the distributed RAM, written at the clock edge like the rest of the entry);
    - ``holds_tm`` (out, to the TLB's ``tm_idle``): some entry valid at the start of the
      cycle reads or writes TM;
    - ``touches`` (out, to the TLB): ``touches[t]`` bit ``i``: tag ``t``'s reads or writes
      overlap the home of TLB slot ``i`` (registered; meaningful when both are valid, and
      the slot was not allocated in the cycle before).
    """

    def __init__(self, config: SystemConfig):
        self._count = count = config.hts.tracker_entries
        slots = config.hts.tlb_entries
        region = region_layout(config)
        entry = tracker_entry_layout(config)
        self._record = task_record_layout(config)
        super().__init__({
            "query_reads": In(region),
            "query_writes": In(region),
            "query_home": In(1),
            "ignoring": In(count),
            "depends": Out(count),
            "free_tag": Out(config.widths.tag),
            "has_free": Out(1),
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
        depends, written_meets = [], []
        for tag in range(count):
            entry = self.entries[tag]
            live = self.valid[tag] & mutable("tracker_broadcast_kept", ~self.ignoring[tag], 1)
            written_meet = (mutable("tracker_war_ignored", overlaps(self.query_writes, entry.reads), 0)
                            | mutable("tracker_waw_ignored", overlaps(self.query_writes, entry.writes), 0))
            written_meets.append(written_meet)
            depends.append(live & (mutable("tracker_raw_ignored", overlaps(self.query_reads, entry.writes), 0)
                                   | written_meet & ~self.query_home))
        m.d.comb += self.depends.eq(Cat(*depends))

        m.d.comb += [self.has_free.eq(~self.valid.all()), self.free_tag.eq(lowest_set(~self.valid))]

        # Entries and ``touches`` mean something only for valid tags: no reset
        # (record_register, hdl/primitives.py).
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
        self._update_touches(m, rewritten, written_meets)
        self._records(m)
        m.d.sync += self.valid.eq(remaining | allocated)
        return m

    def _registers_of(self, m: Module, entry):
        """The flip-flop part of a whole tracker entry (``tracker_register_layout``)."""
        registers = Signal(self.entries.shape().elem_shape, name="arriving_registers")
        m.d.comb += [getattr(registers, name).eq(getattr(entry, name)) for name, _ in registers.shape()]
        return registers

    def _records(self, m: Module):
        """Task ID and metadata in distributed RAM: the free tag's written every cycle,
        like its registers (only ``alloc`` waits for decode), one read port per reader."""
        arriving = Signal(self._record, name="arriving_record")
        m.d.comb += [getattr(arriving, name).eq(getattr(self.alloc_entry, name)) for name, _ in self._record]
        readers = list(self.record_reads)
        records = record_ram(m, "records", self._record, self._count, self.free_tag, self.has_free, arriving,
                             [reader.tag for reader in readers])
        m.d.comb += [reader.record.eq(record) for reader, record in zip(readers, records)]

    def _in_tm(self, region):
        return (region.blocks != 0) & (region.base >= self._home_blocks)

    def _retargeted(self, m: Module, tag, entry, name: str, reads_copy=None):
        """``entry`` (for ``tag``) with this cycle's retarget applied, and whether it
        rewrote a range (``reads_copy``: see :func:`~hts.hdl.primitives.retargeted_ranges`).

        Entries not in use are rewritten too: their contents are never read, so the valid
        bit need not gate the rewrite.
        """
        result = Signal.like(entry, name=name)
        reads, writes, rewrote = retargeted_ranges(entry, tag, self, reads_copy)
        m.d.comb += [result.eq(entry), result.reads.eq(reads), result.writes.eq(writes)]
        return result, rewrote

    def _update_touches(self, m: Module, rewritten, home_meets):
        """``touches`` at the edge, from registered state only (nothing decode decides).

        - A free tag's row is kept empty, so a tag starts with an empty row: when it is
          allocated it touches no TLB home there was at the start of the cycle (decode
          reads the TM copy of an exact match, stalls on any other overlap of its reads,
          and writes TM or a region no entry overlaps: ``Decode._plan_task`` of ``models/decode.py``).
        - A TLB slot allocated last cycle (``young``): its column is this cycle's search
          with its home as the write query (``query_home``), against every entry as
          registered, the new task's included. Until this edge the column
          is stale, which nobody reads: the TLB does not offer a young entry for a
          retarget, and its producer, in flight, keeps it from a copy-back.
        - A retarget: the range it rewrites was TM, above home memory, and a TLB home lies
          in home memory (decode faults on an indirect region past its end, and the
          assembler refuses a direct one), so the old row already holds the other range's
          bits and the retarget home's only need adding. A slot allocated in the
          retarget's cycle gets its column the cycle after, from the rewritten ranges.

        Columns of free slots go stale: the TLB ANDs with its ``valid``.
        """
        homes = list(self.tlb_homes)
        young = Signal(len(homes))     # named: the formal harness hts.formal.retire reads it
        m.d.sync += young.eq(index_set([self.tlb_alloc], [self.tlb_alloc_slot], len(homes)))
        retarget_row = Cat(*(overlaps(self.retarget_home, home) for home in homes))
        touches = record_register(m, self.touches, "touch_records")
        for tag, home_meet in enumerate(home_meets):
            column = Mux(home_meet, young, 0)
            row = self.touches[tag] & ~young | column | Mux(rewritten[tag], retarget_row, 0)
            m.d.sync += touches[tag].eq(Mux(self.valid[tag], row, 0))
