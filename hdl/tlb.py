"""Task Lookup Buffer and transactional-memory allocator: where speculative outputs live.

RTL of ``hts.models.tlb``; docs/microarchitecture.md gives the rules and their timing.
Entries are kept oldest first by position (a collapsing queue), so "youngest overlapping"
is a priority search from the top and "no older entry overlaps" a search below. TM space
is a bump pointer, reset when the buffer is empty and nothing in flight still reads TM.
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.config import SystemConfig, bits_for

from .layouts import overlaps, region_layout, tracker_entry_layout

__all__ = ["TaskLookupBuffer", "tlb_entry_layout", "tlb_request_layout"]


def tlb_entry_layout(config: SystemConfig) -> data.StructLayout:
    widths = config.widths
    return data.StructLayout({
        "pid": widths.pid,
        "home": region_layout(config),
        "tm_base": widths.phys_block,
        "mask": config.hts.spec_ids,       # unresolved speculation IDs of the producer
        "producer": widths.tag,            # producer's tag, meaningful while not producer_done
        "producer_done": 1,
    })


def tlb_request_layout(config: SystemConfig) -> data.StructLayout:
    """What decode supplies for a new entry; the TLB adds its TM base, not yet produced."""
    return data.StructLayout({"pid": config.widths.pid, "home": region_layout(config),
                              "mask": config.hts.spec_ids, "producer": config.widths.tag})


class TaskLookupBuffer(wiring.Component):
    """``hts.tlb_entries`` mappings home region -> TM region, oldest first.

    Look-ups for decode (combinational, start-of-cycle state):

    - ``read_region`` (in): a task's input. ``read_hit`` (out): some entry overlaps it;
      ``read_exact`` (out): the youngest overlapping entry maps exactly that region, and
      ``read_tm_base`` (out) is where its TM copy starts. Hit but not exact: decode stalls
      (``tlb_conflict``).
    - ``write_region`` (in): a non-speculative task's output; ``write_hit`` (out): some
      entry overlaps it (decode stalls until it is copied home).
    - ``branch_block`` (in): the block a memory branch reads; ``branch_phys`` (out): where
      its current value is (the youngest covering entry's TM block, or itself).
    - ``alloc_blocks`` (in): size of a speculative output; ``has_room`` (out): a free
      entry and that many TM blocks left; ``alloc_tm_base`` (out): where it would go.

    Updates from decode and the back end (land at the clock edge, in the model's order):

    - ``alloc`` (in) with ``alloc_entry`` (in, ``tlb_request_layout``): append an entry at
      ``alloc_tm_base``;
    - ``broadcast`` (in, from the CDB: tags broadcast or squashed this cycle): entries
      whose producer is among them learn that it is done;
    - ``confirm`` (in): speculation IDs cleared from every mask;
    - ``drop`` (in): entries under these IDs are removed (misprediction);
    - ``remove`` (in, one bit per position, from the copy-back engine): entries copied home
      or retargeted this cycle;
    - ``tm_idle`` (in, from the top level): after this cycle nothing in flight refers to
      TM, so an empty buffer may reset the bump pointer.

    Choices for the copy-back engine (combinational, start-of-cycle state):

    - ``tracker_valid``, ``tracker_entries`` (in, from the memory tracker): every in-flight
      access; ``retargetable_tags`` (in, from the top level): producers that have not
      started writing back;
    - ``copy_valid``, ``copy_index``, ``copy_entry`` (out): the oldest entry that may be
      copied home (resolved, produced, no older overlap, no in-flight access to its home);
    - ``retarget_valid``, ``retarget_index``, ``retarget_entry`` (out): the oldest resolved
      entry whose producer may still be told to write home (same conditions, its own
      producer's accesses aside).

    State: ``valid`` and ``entries`` (out), for the top level's retire logic.
    """

    def __init__(self, config: SystemConfig):
        hts = config.hts
        self._config = config
        self._count = hts.tlb_entries
        self._home_blocks = config.memory.blocks
        self._tm_blocks = hts.tm_blocks
        self._tracker_count = hts.tracker_entries
        entry, region = tlb_entry_layout(config), region_layout(config)
        index = bits_for(hts.tlb_entries)
        super().__init__({
            "read_region": In(region),
            "read_hit": Out(1),
            "read_exact": Out(1),
            "read_tm_base": Out(config.widths.phys_block),
            "write_region": In(region),
            "write_hit": Out(1),
            "branch_block": In(config.widths.phys_block),
            "branch_phys": Out(config.widths.phys_block),
            "alloc_blocks": In(config.widths.region_blocks),
            "has_room": Out(1),
            "alloc_tm_base": Out(config.widths.phys_block),
            "alloc": In(1),
            "alloc_entry": In(tlb_request_layout(config)),
            "broadcast": In(hts.tracker_entries),
            "confirm": In(hts.spec_ids),
            "drop": In(hts.spec_ids),
            "remove": In(hts.tlb_entries),
            "tm_idle": In(1),
            "tracker_valid": In(hts.tracker_entries),
            "tracker_entries": In(data.ArrayLayout(tracker_entry_layout(config), hts.tracker_entries)),
            "retargetable_tags": In(hts.tracker_entries),
            "copy_valid": Out(1),
            "copy_index": Out(index),
            "copy_entry": Out(entry),
            "retarget_valid": Out(1),
            "retarget_index": Out(index),
            "retarget_entry": Out(entry),
            "valid": Out(hts.tlb_entries),
            "entries": Out(data.ArrayLayout(entry, hts.tlb_entries)),
        })

    def elaborate(self, platform):
        m = Module()
        count = self._count
        tm_next = Signal(range(self._tm_blocks + 1))

        self._look_up(m)
        self._choose_for_copy_back(m)

        # Room: a free entry (the queue is full when its last position is valid) and TM left.
        m.d.comb += [
            self.has_room.eq(~self.valid[count - 1] & (tm_next + self.alloc_blocks <= self._tm_blocks)),
            self.alloc_tm_base.eq(self._home_blocks + tm_next),
        ]

        # End of cycle: update every entry (the one decode appends included), then compact
        # the survivors, oldest first.
        new_entry = Signal(tlb_entry_layout(self._config))
        request = self.alloc_entry
        m.d.comb += [new_entry.pid.eq(request.pid), new_entry.home.eq(request.home),
                     new_entry.mask.eq(request.mask), new_entry.producer.eq(request.producer),
                     new_entry.tm_base.eq(self.alloc_tm_base)]
        candidates = [*zip(self.entries, self.valid, self.remove), (new_entry, self.alloc, Const(0))]
        updated = [Signal.like(new_entry, name=f"updated{i}") for i in range(count + 1)]
        survives = Signal(count + 1)
        for i, (entry, valid, removed) in enumerate(candidates):
            m.d.comb += [
                updated[i].eq(entry),
                updated[i].producer_done.eq(entry.producer_done | self.broadcast.bit_select(entry.producer, 1)),
                updated[i].mask.eq(entry.mask & ~self.confirm),
                survives[i].eq(valid & ~(entry.mask & self.drop).any() & ~removed),
            ]

        # Position k of the next state takes the k-th survivor.
        for k in range(count):
            rank = Const(0, range(count + 2))
            chosen = Signal.like(new_entry, name=f"next{k}")
            chosen_valid = Signal(name=f"next_valid{k}")
            for i in range(count + 1):
                with m.If(survives[i] & (rank == k)):
                    m.d.comb += [chosen.eq(updated[i]), chosen_valid.eq(1)]
                rank = rank + survives[i]
            m.d.sync += [self.entries[k].eq(chosen), self.valid[k].eq(chosen_valid)]

        with m.If(~survives.any() & self.tm_idle):
            m.d.sync += tm_next.eq(0)
        with m.Elif(self.alloc):
            m.d.sync += tm_next.eq(tm_next + self.alloc_blocks)
        return m

    def _look_up(self, m: Module):
        """Decode's searches: youngest overlap wins, so scan from oldest and let later win."""
        branch_region = Signal.like(self.read_region)
        m.d.comb += [branch_region.base.eq(self.branch_block), branch_region.blocks.eq(1),
                     self.branch_phys.eq(self.branch_block)]
        write_hits = []
        for entry, valid in zip(self.entries, self.valid):
            with m.If(valid & overlaps(entry.home, self.read_region)):
                m.d.comb += [self.read_hit.eq(1),
                             self.read_exact.eq((entry.home.base == self.read_region.base)
                                                & (entry.home.blocks == self.read_region.blocks)),
                             self.read_tm_base.eq(entry.tm_base)]
            with m.If(valid & overlaps(entry.home, branch_region)):
                m.d.comb += self.branch_phys.eq(entry.tm_base + self.branch_block - entry.home.base)
            write_hits.append(valid & overlaps(entry.home, self.write_region))
        m.d.comb += self.write_hit.eq(Cat(*write_hits).any())

    def _choose_for_copy_back(self, m: Module):
        """Oldest copyable and oldest retargetable entry: scan from youngest, let older win."""
        for i in reversed(range(self._count)):
            entry = self.entries[i]
            older_overlap = Cat(*(self.valid[j] & overlaps(self.entries[j].home, entry.home)
                                  for j in range(i))).any() if i else Const(0)
            busy = Const(0)
            busy_elsewhere = Const(0)
            for tag, tracked in enumerate(self.tracker_entries):
                touches = self.tracker_valid[tag] & (overlaps(tracked.reads, entry.home)
                                                     | overlaps(tracked.writes, entry.home))
                busy = busy | touches
                busy_elsewhere = busy_elsewhere | (touches & (entry.producer != tag))
            free_to_go = self.valid[i] & ~entry.mask.any() & ~older_overlap
            with m.If(free_to_go & entry.producer_done & ~busy):
                m.d.comb += [self.copy_valid.eq(1), self.copy_index.eq(i), self.copy_entry.eq(entry)]
            with m.If(free_to_go & ~entry.producer_done & ~busy_elsewhere
                      & self.retargetable_tags.bit_select(entry.producer, 1)):
                m.d.comb += [self.retarget_valid.eq(1), self.retarget_index.eq(i),
                             self.retarget_entry.eq(entry)]
