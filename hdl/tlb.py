"""Task Lookup Buffer and transactional-memory allocator: where speculative outputs live.

RTL of ``hts.models.tlb``; docs/microarchitecture.md gives the rules and their timing.
Entries sit in fixed slots: one is written into the lowest free slot when decode
allocates it and never moves, so only its producer bit and its mask change in place.
The model's list order (oldest first) is an age matrix instead, changed only in the
row and column of the free slot about to be allocated, as the memory tracker's is:
"youngest overlapping" is a hit that no younger hit shadows, "oldest candidate" a
candidate with no older candidate. Two more relations are kept registered so that the
copy-back choice compares no ranges each cycle: which older entries a slot's home
overlaps (here, written with the slot's entry), and which in-flight
accesses touch a slot's home (the tracker's ``touches``). TM space is a bump pointer,
reset when the buffer is empty and nothing in flight still reads TM.
"""

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import (HeadSource, region_layout, tlb_checks_layout, tlb_entry_layout, tlb_lookahead_layout,
                         tlb_query_layout, tlb_request_layout)
from .mutation import mutable
from .primitives import (encode, entry_of, index_set, lowest_set, oldest, overlaps, overlaps_late, record_register,
                         region_end, select, update_age_matrix, wire, youngest)

__all__ = ["TaskLookupBuffer"]


def _relations_layout(count: int) -> data.StructLayout:
    """A query's relations to the homes of ``count`` slots, one bit per slot each."""
    return data.StructLayout({"read_overlaps": count, "read_equals": count, "write_overlaps": count,
                              "block_inside": count})


def _relations(query, homes, ends) -> list[Value]:
    """The fields of ``_relations_layout`` for ``query`` against ``homes`` (with their ends)."""
    # The query's bases come from the GPR read, its block counts from the word.
    return [
        Cat(*(overlaps_late(query.read, home, b_end=end) for home, end in zip(homes, ends))),
        Cat(*(home.as_value() == query.read.as_value() for home in homes)),
        Cat(*(overlaps_late(query.write, home, b_end=end) for home, end in zip(homes, ends))),
        # A branch reads one block: inside a home, no adder for its end.
        Cat(*((home.base <= query.block) & (query.block < end) for home, end in zip(homes, ends))),
    ]


class TaskLookupBuffer(wiring.Component):
    """``hts.tlb_entries`` mappings home region -> TM region, in fixed slots.

    Look-ups for decode (combinational, start-of-cycle state), of the head of process
    ``lookup_pid`` (in): a task's input and output regions and a memory branch's block.
    The TLB keeps, per process, which homes its head's regions overlap or equal and
    which home holds its block, compared a cycle ahead from ``lookahead`` (in, from
    decode: each word that can be the head at the edge and which one will be; homes
    never change in place, so the kept bits ANDed with ``valid`` are this cycle's hits).
    The look-ups use the process's own entries only where a copy is read: another
    process's copy may be speculative.

    - ``read_hit`` (out): some entry overlaps the input; ``read_copy`` (out, one bit per
      slot): the youngest overlapping entry, if it is the process's own and maps exactly
      that region (none set: not exact), and ``read_tm_base`` (out) is where its TM copy
      starts. Hit but not exact: decode stalls (``tlb_conflict``). The slot goes with the
      task, so that a retarget of that slot in its decode cycle is found without a
      compare of ranges (``retarget_slot``).
    - ``write_hit`` (out): some entry overlaps the output of a non-speculative task
      (decode stalls until it is copied home).
    - ``branch_block`` (in): the block the head's memory branch reads; ``branch_phys``
      (out): where its current value for the process is after this cycle's retarget (the
      TM block of the youngest of its own entries covering it, or itself: also when that
      entry is the one retargeted now, whose TM blocks the retarget sends home; no older
      entry overlaps a retargeted one).
    - ``read_region``, ``write_region`` (in), ``lookup_checks`` (in): the head's regions,
      and whether it is a task or a memory branch. Only simulation reads them: it asserts
      the kept relations that the head's look-up means against a direct compare.
    - ``alloc_blocks`` (in): size of a speculative output; ``has_room`` (out): a free
      slot and that many TM blocks left; ``alloc_tm_base`` (out): where it would go;
      ``alloc_slot`` (out, also to the memory tracker): the lowest free slot, where it
      would be written.

    Updates from decode and the back end (land at the clock edge, in the model's order):

    - ``alloc`` (in, from decode, only with ``has_room``) with ``alloc_entry`` (in,
      ``tlb_request_layout``): write an entry at ``alloc_tm_base`` into slot
      ``alloc_slot``, younger than every entry present. The slot takes ``alloc_entry``
      (with its age and overlap rows) in every cycle; ``alloc`` only sets its valid bit;
    - ``broadcast`` (in, from the CDB: tags broadcast or squashed this cycle): entries
      whose producer is among them learn that it is done;
    - ``confirm`` (in): speculation IDs cleared from every mask;
    - ``drop`` (in): entries under these IDs are removed (misprediction);
    - ``remove`` (in, one bit per slot, from the copy-back engine): entries copied home
      or retargeted this cycle;
    - ``tm_idle`` (in, from the top level): at the start of the cycle nothing in flight
      referred to TM. With no entry either, the bump pointer counts as 0: the model
      resets it at the end of the cycle before, on the same state, and reading that
      state a cycle later keeps decode's decision off the pointer's reset.

    Choices for the copy-back engine (combinational, start-of-cycle state):

    - ``tracker_valid`` (in, from the memory tracker): the tags in flight; ``touches``
      (in, from the memory tracker): ``touches[t]`` bit ``i``: tag ``t``'s reads or writes
      overlap slot ``i``'s home; ``retargetable_tags`` (in, from the copy-back engine):
      producers waiting, or computing without having started to write back; registered
      per slot (its producer's bit), so that the choice and the retarget of the next
      cycle start from flip-flops;
    - ``copy_valid``, ``copy_index``, ``copy_entry`` (out): the oldest entry that may be
      copied home (resolved, produced, no older overlap, no in-flight access to its home)
      and its slot;
    - ``retarget_valid``, ``retarget_index``, ``retarget_entry`` (out): the entry retargeted
      now and its slot (``retarget_slot``, out: the same slot one-hot, a register): chosen
      in the cycle before (registered) as the oldest resolved entry whose producer may
      still be told to write home (same conditions, its own producer's accesses aside;
      not allocated in the cycle before, whose ``touches`` are not ready; not the one
      chosen the cycle before), and offered if it is still held and unproduced and its
      producer was in ``retargetable_tags`` in the cycle before.

    State: ``valid`` and ``entries`` (out), for the top level's retire logic and the
    tracker's ``tlb_homes``. Read by the tests: ``older`` (``older[i]`` bit ``j``: the
    entry in slot ``j`` was allocated before the one in slot ``i``; both valid).
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
        # Meaningful only where ``valid`` is set: no reset (record_register, hdl/primitives.py).
        self.older = Signal(data.ArrayLayout(count, count), reset_less=True)
        # shadowed[i] bit j: slot j's home overlaps slot i's and slot j is older.
        self._shadowed = Signal(data.ArrayLayout(count, count), reset_less=True)
        # Each entry's home end, computed when it is written, keeps an adder off every search.
        self._home_ends = Signal(data.ArrayLayout(config.widths.phys_block + 1, count), reset_less=True)
        # The slot allocated in the cycle before: the tracker's ``touches`` column for it is not ready.
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

        retargeting = self._choose_for_copy_back(m)
        self._look_up(m, retargeting)

        # Room: a free slot and TM left. The new entry goes to the lowest free slot.
        allocating = Signal(count)                 # the slot allocated this cycle, if any
        # The lowest free slot is written every cycle, allocation or not: an entry means
        # nothing until its valid bit is set, so only that bit waits for decode.
        writing = Signal(count)
        m.d.comb += [
            # TM room for both values of the pointer, so that the reset only picks one.
            self.has_room.eq(~self.valid.all() & Mux(pointer_reset, self.alloc_blocks <= self._tm_blocks,
                                                     tm_next + self.alloc_blocks <= self._tm_blocks)),
            self.alloc_tm_base.eq(self._home_blocks + tm_base),
            self.alloc_slot.eq(lowest_set(~self.valid)),
            allocating.eq(index_set([self.alloc], [self.alloc_slot], count)),
            writing.eq(index_set([~self.valid.all()], [self.alloc_slot], count)),
        ]
        m.d.sync += self._young.eq(allocating)

        # End of cycle: the new entry lands in its slot, then every entry (the new one
        # included, as in the model) takes this cycle's broadcast, confirm and drop.
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

        # The new entry is younger than every entry present, so its row is the valid set
        # (its overlapping part, for ``shadowed``) and its column is cleared in every
        # other row. Bits of slots freed later go stale: every use ANDs with ``valid``.
        new_overlaps = Cat(*(overlaps(request.home, entry.home, a_end=new_end, b_end=end)
                             for entry, end in zip(self.entries, self._home_ends)))
        update_age_matrix(m, self.older, writing, [self.valid] * count)
        update_age_matrix(m, self._shadowed, writing, [new_overlaps & self.valid] * count)

        m.d.sync += tm_next.eq(Mux(self.alloc, tm_base + self.alloc_blocks, tm_base))
        return m

    def _look_up(self, m: Module, retargeting: Value):
        """Decode's searches, on the relations kept for the head: the youngest overlapping
        entry wins.

        A branch's block is found from the entry's offset home -> TM, one subtraction per
        entry made in parallel with the search, and is left home when that entry is
        ``retargeting`` (one-hot), rather than compared with the retarget range after it.
        """
        tm_bases = [entry.tm_base for entry in self.entries]
        offsets = [entry.tm_base - entry.home.base for entry in self.entries]
        own = wire(m, Cat(*(entry.pid == self.lookup_pid for entry in self.entries)), "own_entries")
        kept = entry_of(self._kept, self.lookup_pid)
        read_hits = wire(m, kept.read_overlaps & self.valid, "read_hits")
        branch_hits = wire(m, kept.block_inside & self.valid & own, "branch_hits")
        write_hits = wire(m, kept.write_overlaps & self.valid, "write_hits")
        search = mutable("tlb_oldest_hit", youngest, oldest)
        read_entry, branch_entry = search(read_hits, self.older), search(branch_hits, self.older)
        branch_moves = (Cat(*branch_entry) & ~retargeting).any()
        m.d.comb += [
            self.read_hit.eq(read_hits.any()),
            self.read_copy.eq(Cat(*read_entry) & own & kept.read_equals),
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
        """Each process's head relations at the next edge (``lookahead``): the next head's
        query compared with every home as it will be (the slot written at the edge holds
        ``new_home``); or, for a head that stays, its kept bits but that slot's."""
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
        """Oldest copyable entry now, and the retarget: the oldest retargetable entry
        chosen in the cycle before, from the registered relations; returns the slot
        retargeted now (one-hot, the copy-back engine takes every offer).

        Both need the entry resolved, no valid older entry overlapping its home, and no
        in-flight access to its home (``touches`` of valid tags), its own producer's
        aside for a retarget. The retarget choice goes to a register, so the age-matrix
        pick and the entry's select are not in series with the rewrite of every range;
        the cycle after, the chosen entry is retargeted if it is still held and
        unproduced and its producer was retargetable at the end of the cycle before.
        Whether it was is a register per slot, so neither the choice nor the retarget
        waits on the accelerators' write-back and the look-up of the producer's tag.
        """
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
        first_copy = oldest(copyable, self.older)
        m.d.comb += [self.copy_valid.eq(copyable.any()), self.copy_index.eq(encode(first_copy)),
                     self.copy_entry.eq(select(first_copy, self.entries))]
        next_choice = oldest(retargetable, self.older)
        # Only the one-hot choice is registered: the chosen entry is read from its slot
        # (an AND-OR from flip-flops); a register of its own costs far more LUT4s
        # (docs/results.md, "Blocks").
        m.d.sync += chosen.eq(Cat(*next_choice))
        chosen_entry = Signal.like(self.retarget_entry)
        m.d.comb += chosen_entry.eq(select(chosen, self.entries))
        unproduced = Cat(*(~entry.producer_done for entry in self.entries))
        still_wanted = (chosen & self.valid & unproduced & producer_retargetable).any()
        m.d.comb += [self.retarget_valid.eq(still_wanted), self.retarget_index.eq(encode(chosen)),
                     self.retarget_slot.eq(chosen),
                     self.retarget_entry.eq(chosen_entry)]
        return Mux(still_wanted, chosen, 0)

