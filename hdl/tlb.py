"""Task Lookup Buffer and TM allocator: where speculative outputs live (``hts.models.tlb``).

A ring of slots taken in order at the tail, so that a slot's age is its distance behind
the tail; relations kept in registers, TM a bump pointer (docs/microarchitecture.md,
"TLB, retarget and copy-back").
"""

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import (HeadSource, region_layout, tlb_checks_layout, tlb_entry_layout, tlb_lookahead_layout,
                         tlb_query_layout, tlb_request_layout)
from .mutation import mutable
from .primitives import (encode, entry_of, index_set, lowest_ones, overlaps, overlaps_late, record_register,
                         region_end, select, update_age_matrix, wire)

__all__ = ["TaskLookupBuffer"]


def _relations_layout(count: int) -> data.StructLayout:
    """A query's relations to the homes of ``count`` slots, one bit per slot each."""
    return data.StructLayout({"read_overlaps": count, "read_equals": count, "write_overlaps": count,
                              "block_inside": count})


def _relations(query, homes, ends) -> list[Value]:
    # The query's bases come from the GPR read, its block counts from the word.
    return [
        Cat(*(overlaps_late(query.read, home, b_end=end) for home, end in zip(homes, ends))),
        Cat(*(home.as_value() == query.read.as_value() for home in homes)),
        Cat(*(overlaps_late(query.write, home, b_end=end) for home, end in zip(homes, ends))),
        # A branch reads one block: inside a home, no adder for its end.
        Cat(*((home.base <= query.block) & (query.block < end) for home, end in zip(homes, ends))),
    ]


class TaskLookupBuffer(wiring.Component):
    """``hts.tlb_entries`` mappings home region → TM region, in fixed slots.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    lookahead : In, per process
        From decode: the words that can be the head at the next edge, and which will be.
    lookup_pid : In
        The process decoding; it reads a copy from its own entries only.
    read_hit, read_copy, read_tm_base, write_hit : Out
        An entry overlaps the input; the youngest, one-hot, if own and equal; its TM base;
        an entry overlaps a non-speculative output.
    branch_block, branch_phys : In, Out
        A memory branch's block and its translation, this cycle's retarget applied.
    read_region, write_region, lookup_checks : In
        Simulation only: the head's regions and kind, to check the kept relations.
    alloc_blocks, has_room, alloc_tm_base, alloc_slot : In, Out, Out, Out
        A new copy's size; room for it (the tail's slot free, and TM); where it and its
        entry go (the tail's slot).
    alloc, alloc_entry : In
        From decode: write the entry at the edge (the tail's slot is written every cycle
        it is free).
    home_search_continues : In
        The tracker search of the task that made the young slot goes on next cycle.
    broadcast, confirm, drop, remove : In
        Producers done; IDs cleared; entries under squashed IDs, copied or retargeted, removed.
    tm_idle : In
        Nothing in flight referred to TM at the start of the cycle.
    tracker_valid, touches, retargetable_tags : In
        For the choices: tags in flight, the homes they touch, producers not writing back.
    copy_valid, copy_index, copy_entry : Out
        The oldest entry that may be copied home.
    retarget_valid, retarget_index, retarget_slot, retarget_entry : Out
        The entry retargeted now, chosen in the cycle before.
    valid, entries : Out
        The slots.
    tail : Signal
        The slot the next entry takes; the slots behind it are the youngest.
    older : Signal
        ``older[i]`` bit ``j``: slot ``j`` lies farther behind the tail than slot ``i``, so is
        older; derived from ``tail`` for the tests and harnesses, no logic of the block reads it.
    """

    def __init__(self, config: SystemConfig):
        hts = config.hts
        self._config = config
        self._count = count = hts.tlb_entries
        self._home_blocks = config.memory.blocks
        self._tm_blocks = hts.tm_blocks
        entry, region = tlb_entry_layout(config), region_layout(config)
        index = bits_for(count)
        super().__init__({
            "lookup_pid": In(config.widths.pid),
            "lookup_checks": In(tlb_checks_layout()),
            "lookahead": In(data.ArrayLayout(tlb_lookahead_layout(config), hts.processes)),
            "read_region": In(region),
            "read_hit": Out(1),
            "read_copy": Out(count),
            "read_tm_base": Out(config.widths.phys_block),
            "write_region": In(region),
            "write_hit": Out(1),
            "branch_block": In(config.widths.phys_block),
            "branch_phys": Out(config.widths.phys_block),
            "alloc_blocks": In(config.widths.region_blocks),
            "has_room": Out(1),
            "alloc_tm_base": Out(config.widths.phys_block),
            "alloc_slot": Out(index),
            "alloc": In(1),
            "alloc_entry": In(tlb_request_layout(config)),
            "home_search_continues": In(1),
            "broadcast": In(hts.tracker_entries),
            "confirm": In(hts.spec_ids),
            "drop": In(hts.spec_ids),
            "remove": In(count),
            "tm_idle": In(1),
            "tracker_valid": In(hts.tracker_entries),
            "touches": In(data.ArrayLayout(count, hts.tracker_entries)),
            "retargetable_tags": In(hts.tracker_entries),
            "copy_valid": Out(1),
            "copy_index": Out(index),
            "copy_entry": Out(entry),
            "retarget_valid": Out(1),
            "retarget_index": Out(index),
            "retarget_slot": Out(count),
            "retarget_entry": Out(entry),
            "valid": Out(count),
            "entries": Out(data.ArrayLayout(entry, count)),
        })
        self.tail = Signal(range(max(count, 2)))     # a bit even with one slot: no empty wire
        self.older = Signal(data.ArrayLayout(count, count))
        # The slots below the tail: allocated since the tail last wrapped, so younger than
        # those at or above it.
        self._behind_tail = Signal(count, name="behind_tail")
        # shadowed[i] bit j: slot j's home overlaps slot i's and slot j is older.
        self._shadowed = Signal(data.ArrayLayout(count, count), reset_less=True)
        # Each entry's home end, computed when it is written, keeps an adder off every search.
        self._home_ends = Signal(data.ArrayLayout(config.widths.phys_block + 1, count), reset_less=True)
        # The slot allocated with the task whose tracker search is under way: the tracker's
        # ``touches`` column for it is not ready.
        self._young = Signal(count)
        # The slot chosen in the cycle before for this cycle's retarget (one-hot).
        self._retarget_choice = Signal(count)
        # Per process, the relations of its head's query to every slot's home (``_keep_relations``).
        self._kept = Signal(data.ArrayLayout(_relations_layout(count), hts.processes), reset_less=True)

    def elaborate(self, platform):
        m = Module()
        count = self._count
        tm_next = Signal(range(self._tm_blocks + 1))
        tm_base = Signal.like(tm_next)             # the pointer as it stands this cycle
        pointer_reset = self.tm_idle & ~self.valid.any()
        m.d.comb += tm_base.eq(Mux(pointer_reset, 0, tm_next))

        self._order(m)
        retargeting = self._choose_for_copy_back(m)
        self._look_up(m, retargeting)

        # Room: the tail's slot free and TM left. The new entry goes to the tail's slot.
        allocating = Signal(count)                 # the slot allocated this cycle, if any
        # The tail's slot is written every cycle it is free, allocation or not: an entry
        # means nothing until its valid bit is set, so only that bit waits for decode.
        writing = Signal(count)
        tail_free = wire(m, ~self.valid.bit_select(self.tail, 1), "tail_free")
        m.d.comb += [
            # TM room for both values of the pointer, so that the reset only picks one.
            self.has_room.eq(tail_free & Mux(pointer_reset, self.alloc_blocks <= self._tm_blocks,
                                             tm_next + self.alloc_blocks <= self._tm_blocks)),
            self.alloc_tm_base.eq(self._home_blocks + tm_base),
            self.alloc_slot.eq(self.tail),
            allocating.eq(index_set([self.alloc], [self.tail], count)),
            writing.eq(index_set([tail_free], [self.tail], count)),
        ]
        m.d.sync += self._young.eq(allocating | Mux(self.home_search_continues, self._young, 0))
        with m.If(self.alloc):
            m.d.sync += self.tail.eq(Mux(self.tail == count - 1, 0, self.tail + 1))

        # The new entry lands, then every entry, it included, takes the broadcast, confirm and drop.
        new_entry = Signal(tlb_entry_layout(self._config))
        request = self.alloc_entry
        m.d.comb += [new_entry.pid.eq(request.pid), new_entry.home.eq(request.home),
                     new_entry.mask.eq(request.mask), new_entry.producer.eq(request.producer),
                     new_entry.tm_base.eq(self.alloc_tm_base)]
        survives = Signal(count)
        entries = record_register(m, self.entries, "entry_records")
        for slot, (entry, valid) in enumerate(zip(entries, self.valid)):
            current = Signal.like(new_entry, name=f"current{slot}")
            m.d.comb += current.eq(Mux(writing[slot], new_entry, entry))
            m.d.comb += survives[slot].eq((valid | allocating[slot]) & ~(current.mask & self.drop).any()
                                          & ~self.remove[slot])
            m.d.sync += [
                entry.eq(current),
                entry.producer_done.eq(current.producer_done | self.broadcast.bit_select(current.producer, 1)),
                entry.mask.eq(current.mask & ~self.confirm),
            ]
        m.d.sync += self.valid.eq(survives)
        new_end = wire(m, region_end(request.home), "new_home_end")
        for slot, end in enumerate(self._home_ends):
            with m.If(writing[slot]):
                m.d.sync += end.eq(new_end)
        self._keep_relations(m, writing, request.home, new_end)

        # The new entry is younger than every entry present: its row is the valid set (its
        # overlapping part, for ``shadowed``). Stale bits of freed slots: every use ANDs ``valid``.
        new_overlaps = Cat(*(overlaps(request.home, entry.home, a_end=new_end, b_end=end)
                             for entry, end in zip(self.entries, self._home_ends)))
        update_age_matrix(m, self._shadowed, writing, [new_overlaps & self.valid] * count)

        m.d.sync += tm_next.eq(Mux(self.alloc, tm_base + self.alloc_blocks, tm_base))
        return m

    def _order(self, m: Module):
        """``behind_tail`` from the tail, and ``older``, the age order the ring implies."""
        count = self._count
        behind = self._behind_tail
        m.d.comb += behind.eq(Cat(*(self.tail > slot for slot in range(count))))
        # Of two slots on the same side of the tail the lower is the older; else the one behind it is younger.
        for slot, row in enumerate(self.older):
            lower = (1 << slot) - 1
            m.d.comb += row.eq(Mux(behind[slot], ~behind | lower, ~behind & lower))

    def youngest_of(self, slots) -> Value:
        """The youngest of ``slots``, one-hot: the nearest behind the tail. Of the slots
        behind it the highest, else the highest of the rest."""
        behind = slots & self._behind_tail
        return Mux(mutable("tlb_wrap_ignored", behind.any(), 0), _highest_one(behind), _highest_one(slots))

    def oldest_of(self, slots) -> Value:
        """The oldest of ``slots``, one-hot: the nearest at or ahead of the tail. Of the
        slots at or above it the lowest, else the lowest of the rest."""
        ahead = slots & ~self._behind_tail
        return Mux(ahead.any(), lowest_ones(ahead), lowest_ones(slots))

    def _look_up(self, m: Module, retargeting: Value):
        """Decode's look-ups on the kept relations; a branch's block stays home if ``retargeting``."""
        tm_bases = [entry.tm_base for entry in self.entries]
        offsets = [entry.tm_base - entry.home.base for entry in self.entries]
        own = wire(m, Cat(*(entry.pid == self.lookup_pid for entry in self.entries)), "own_entries")
        kept = entry_of(self._kept, self.lookup_pid)
        read_hits = wire(m, kept.read_overlaps & self.valid, "read_hits")
        branch_hits = wire(m, kept.block_inside & self.valid & own, "branch_hits")
        write_hits = wire(m, kept.write_overlaps & self.valid, "write_hits")
        search = mutable("tlb_oldest_hit", self.youngest_of, self.oldest_of)
        # Named, so that each pick is built once, not again for every bit read of it.
        read_entry = wire(m, search(read_hits), "read_entry")
        branch_entry = wire(m, search(branch_hits), "branch_entry")
        branch_moves = (branch_entry & ~retargeting).any()
        m.d.comb += [
            self.read_hit.eq(read_hits.any()),
            self.read_copy.eq(read_entry & own & kept.read_equals),
            self.read_tm_base.eq(select(read_entry, tm_bases)),
            self.branch_phys.eq(Mux(branch_moves, self.branch_block + select(branch_entry, offsets),
                                    self.branch_block)),
            self.write_hit.eq(write_hits.any()),
        ]
        query = Signal(tlb_query_layout(self._config))
        m.d.comb += [query.read.eq(self.read_region), query.write.eq(self.write_region),
                     query.block.eq(self.branch_block)]
        direct = _relations(query, [entry.home for entry in self.entries], self._home_ends)
        regions = Cat(kept.read_overlaps, kept.read_equals, kept.write_overlaps) & self.valid.replicate(3)
        m.d.sync += Assert(~self.lookup_checks.regions | (regions == Cat(*direct[:3]) & self.valid.replicate(3)),
                           "the relations kept for the head's regions are stale")
        m.d.sync += Assert(~self.lookup_checks.block | ((kept.block_inside & self.valid) == (direct[3] & self.valid)),
                           "the relations kept for the head's block are stale")

    def _keep_relations(self, m: Module, writing, new_home, new_end):
        count = self._count
        homes, ends = [], []
        for slot, (entry, end) in enumerate(zip(self.entries, self._home_ends)):
            home = Signal.like(entry.home, name=f"next_home{slot}")
            m.d.comb += home.eq(Mux(writing[slot], new_home, entry.home))
            homes.append(home)
            ends.append(Mux(writing[slot], new_end, end))
        for lookahead, kept in zip(self.lookahead, self._kept):
            new_slot = _relations(lookahead.stay, [new_home], [new_end])
            stay = [field & ~writing | bit.replicate(count) & writing for bit, field in
                    zip(new_slot, (kept.read_overlaps, kept.read_equals, kept.write_overlaps, kept.block_inside))]
            with m.If(lookahead.take == HeadSource.STAY):
                m.d.sync += kept.eq(Cat(*stay))
            with m.Else():
                m.d.sync += kept.eq(Cat(*_relations(lookahead.next, homes, ends)))

    def _choose_for_copy_back(self, m: Module) -> Value:
        """The oldest copyable entry, and the retarget chosen in the cycle before; returns it, one-hot."""
        copyable = Signal(self._count)
        retargetable = Signal(self._count)
        producer_retargetable = Signal(self._count)
        chosen = self._retarget_choice
        for slot, (entry, valid) in enumerate(zip(self.entries, self.valid)):
            m.d.sync += producer_retargetable[slot].eq(self.retargetable_tags.bit_select(entry.producer, 1))
            accesses = Cat(*(row[slot] for row in self.touches)) & self.tracker_valid
            free_to_go = valid & ~entry.mask.any() & ~(self._shadowed[slot] & self.valid).any()
            m.d.comb += [
                copyable[slot].eq(free_to_go & entry.producer_done
                                  & mutable("copyback_ignores_touches", ~accesses.any(), 1)),
                retargetable[slot].eq(free_to_go & ~self._young[slot] & ~chosen[slot] & ~entry.producer_done
                                      & ~(accesses & ~(1 << entry.producer)).any() & producer_retargetable[slot]),
            ]
        first_copy = wire(m, self.oldest_of(copyable), "first_copy")
        m.d.comb += [self.copy_valid.eq(copyable.any()), self.copy_index.eq(encode(first_copy)),
                     self.copy_entry.eq(select(first_copy, self.entries))]
        next_choice = wire(m, self.oldest_of(retargetable), "next_choice")
        # Only the one-hot choice is registered: the chosen entry is read from its slot
        # (an AND-OR from flip-flops), cheaper than a register of its own.
        m.d.sync += chosen.eq(next_choice)
        chosen_entry = Signal.like(self.retarget_entry)
        m.d.comb += chosen_entry.eq(select(chosen, self.entries))
        unproduced = Cat(*(~entry.producer_done for entry in self.entries))
        still_wanted = (chosen & self.valid & unproduced & producer_retargetable).any()
        m.d.comb += [self.retarget_valid.eq(still_wanted), self.retarget_index.eq(encode(chosen)),
                     self.retarget_slot.eq(chosen),
                     self.retarget_entry.eq(chosen_entry)]
        return Mux(still_wanted, chosen, 0)



def _highest_one(bits: Value) -> Value:
    return lowest_ones(bits[::-1])[::-1]
