"""Branch unit: every pending ``if``, its memory read, its resolution and its squash.

RTL of ``hts.models.branch_unit`` (docs/microarchitecture.md, "Branches: the branch
unit"). Decode owns the speculation-ID pool, the masks and the checkpoints.
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, ResetSignal, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for
from hts.isa import REGISTER_BITS, Cond
from hts.models.branch_unit import OUTCOME_DELAY

from .interfaces import BranchKind, branch_layout, fetch_pc_width, region_layout, restore_layout
from .mutation import mutable
from .primitives import encode, record_register, select, wire

__all__ = ["BranchUnit", "slot_layout"]


def slot_layout(config: SystemConfig) -> data.StructLayout:
    """A pending branch in its slot (``hts.models.branch_unit.PendingBranch``): ``timer`` counts
    to the resolution once ``waits`` is empty, holding ``memory_latency`` until then.
    """
    widths, hts = config.widths, config.hts
    return data.StructLayout({
        "pid": widths.pid,
        "pc": widths.pc,
        "target": fetch_pc_width(config),
        "cond": Cond,
        "kind": BranchKind,
        "x": REGISTER_BITS,
        "y": REGISTER_BITS,
        "block": widths.phys_block,
        "waits": hts.tracker_entries,
        "timer": bits_for(config.timing.memory_latency + OUTCOME_DELAY),
        "mask": hts.spec_ids,
    })


def _branch_taken(m: Module, cond, x, y, name: str) -> Signal:
    """``hts.isa.branch_taken``: one signed compare and one equality, picked by the condition."""
    equal, less = Signal(name=f"{name}_equal"), Signal(name=f"{name}_less")
    taken = Signal(name=f"{name}_taken")
    by_cond = {Cond.EQ: equal, Cond.NEQ: ~equal, Cond.GE: ~less, Cond.LE: less | equal}
    m.d.comb += [
        equal.eq(mutable("branch_compare_inverted", x == y, x != y)),
        less.eq(x.as_signed() < y.as_signed()),
        taken.eq(Cat(*(by_cond[c] for c in sorted(Cond, key=lambda c: c.value))).bit_select(Value.cast(cond), 1)),
    ]
    return taken


class BranchUnit(wiring.Component):
    """``hts.spec_ids`` speculated and ``hts.processes`` unspeculated branch slots.

    Slot ``i < spec_ids`` holds the branch speculated with ID ``i``, slot ``spec_ids + p``
    the unspeculated branch of process ``p``; each slot has a memory read lane.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    alloc : In(branch_layout)
        From decode: the ``if`` decoded now, its block translated; it lands at the edge.
    search_block, writers, search_last : Out (registered), In, In
        The tracker search for the memory branch decoded before, the tags of this cycle's
        row writing its block, and whether the row is the last.
    searching_next : Out
        The search goes on next cycle (decode starts none).
    broadcast : In
        Tags released this cycle, cleared from every slot's ``waits`` at the edge.
    retarget, retarget_tm, retarget_home : In
        A held block in ``retarget_tm`` moves to ``retarget_home`` at the edge.
    read_valid, read_block, read_data : Out, Out, In, per slot
        A read of a block's first word, answered ``timing.memory_latency`` cycles later.
    resolving, taken, confirm : Out
        Per slot, it resolves now and is taken (the trace's ``branch``); IDs predicted right.
    squash : Out
        IDs mispredicted last cycle (registered: their tasks go now).
    freed_ids : Out
        To decode's pool: IDs confirmed, squashed, or removed by a squash.
    redirect, redirect_pc, restore : Out, per process
        Fetch goes to a taken target; GPRs, loop stack and mask come back (registered).
    blocked, pending : Out, per process
        An unspeculated branch is pending (no decode); any branch or squash is.
    reads_tm, valid, entries : Out
        A pending memory branch reads TM; the slots (:func:`slot_layout`).
    """

    def __init__(self, config: SystemConfig):
        hts, widths = config.hts, config.widths
        self._spec_ids, self._processes = hts.spec_ids, hts.processes
        self._slot_count = slots = hts.spec_ids + hts.processes
        # Cycles from a read's start, or from an RR branch's arrival, to its resolution.
        self._memory_wait = config.timing.memory_latency + OUTCOME_DELAY
        self._register_wait = 1 + OUTCOME_DELAY
        self._home_blocks = config.memory.blocks
        self._layout = slot_layout(config)
        self._rows = hts.tracker_rows
        super().__init__({
            "alloc": In(branch_layout(config)),
            "search_block": Out(widths.phys_block),
            "search_last": In(1),
            "searching_next": Out(1),
            "writers": In(hts.tracker_entries),
            "broadcast": In(hts.tracker_entries),
            "retarget": In(1),
            "retarget_tm": In(region_layout(config)),
            "retarget_home": In(region_layout(config)),
            "read_valid": Out(slots),
            "read_block": Out(data.ArrayLayout(widths.phys_block, slots)),
            "read_data": In(data.ArrayLayout(REGISTER_BITS, slots)),
            "resolving": Out(slots),
            "taken": Out(slots),
            "confirm": Out(hts.spec_ids),
            "squash": Out(hts.spec_ids),
            "freed_ids": Out(hts.spec_ids),
            "redirect": Out(hts.processes),
            "redirect_pc": Out(data.ArrayLayout(fetch_pc_width(config), hts.processes)),
            "restore": Out(data.ArrayLayout(restore_layout(config), hts.processes)),
            "blocked": Out(hts.processes),
            "pending": Out(hts.processes),
            "reads_tm": Out(1),
            "valid": Out(slots),
            "entries": Out(data.ArrayLayout(self._layout, slots)),
        })

    def _process_slot(self, pid: int) -> int:
        return self._spec_ids + pid

    def _belongs(self, slot: int, pid: int) -> Value:
        if slot < self._spec_ids:
            return self.entries[slot].pid == pid
        return Value.cast(slot == self._process_slot(pid))

    def elaborate(self, platform):
        m = Module()
        # One-hot: the slot whose memory branch searches the tracker now, a row a cycle.
        self._searching = Signal(self._slot_count)
        # Per slot: its timer has run out and it waits for nothing (``_ready``).
        self._ready = Signal(self._slot_count)
        mispredicting, killed = self._resolve(m)
        self._per_process(m, mispredicting)
        allocated, arrival = self._arrival(m, killed)
        self._update_slots(m, killed, allocated, arrival)
        return m

    def _resolve(self, m: Module):
        """Resolution and squash; returns the IDs mispredicted now and the slots removed now."""
        spec_ids = self._spec_ids
        # Last cycle's mispredictions squash now: every slot under one goes, due or not.
        killed = [wire(m, self.valid[slot] & mutable("branch_squash_spares_nested",
                                                     (entry.mask & self.squash).any(), 0), f"killed_{slot}")
                  for slot, entry in enumerate(self.entries)]
        # Every slot compares every cycle; the outcome counts in its resolution cycle, the
        # next (one register: OUTCOME_DELAY is 1).
        assert OUTCOME_DELAY == 1
        compared = Signal(self._slot_count)
        due = [wire(m, self.valid[slot] & self._ready[slot] & ~killed[slot], f"due_{slot}")
               for slot in range(self._slot_count)]
        for slot, entry in enumerate(self.entries):
            data_word = self.read_data[slot]
            x = data_word if slot < spec_ids else Mux(entry.kind == BranchKind.RR, entry.x, data_word)
            m.d.sync += compared[slot].eq(_branch_taken(m, entry.cond, x, entry.y, f"slot_{slot}"))
        outcome = list(compared)
        # A younger branch of a misprediction does not resolve (the squash removes it next
        # cycle). Every mispredicted ID counts, even one itself under an older one: whatever
        # it would hold back holds the older ID too.
        mispredicted = wire(m, Cat(*(due[slot] & outcome[slot] for slot in range(spec_ids))), "mispredicted")
        m.d.comb += self.resolving.eq(Cat(*(is_due & ~(entry.mask & mispredicted).any()
                                            for is_due, entry in zip(due, self.entries))))
        resolving = self.resolving
        mispredicting = Cat(*(resolving[slot] & outcome[slot] for slot in range(spec_ids)))
        m.d.sync += self.squash.eq(mispredicting)
        m.d.comb += [
            self.taken.eq(Cat(*(resolving[slot] & outcome[slot] for slot in range(self._slot_count)))),
            self.confirm.eq(mutable("branch_confirm_lost",
                                    Cat(*(resolving[slot] & ~outcome[slot] for slot in range(spec_ids))), 0)),
            # Every speculated slot that goes: confirmed, squashed, or removed by a squash.
            self.freed_ids.eq(self.confirm | self.squash | Cat(*killed[:spec_ids])),
        ]
        return mispredicting, killed

    def _per_process(self, m: Module, mispredicting):
        spec_ids = self._spec_ids
        for pid in range(self._processes):
            own = self._process_slot(pid)
            speculated = [self.valid[slot] & self._belongs(slot, pid) for slot in range(spec_ids)]
            restore = self.restore[pid]
            target = Signal.like(self.redirect_pc[pid], name=f"squash_target_{pid}")
            m.d.comb += [
                self.blocked[pid].eq(self.valid[own]),
                self.pending[pid].eq(self.valid[own] | Cat(*speculated).any() | restore.valid),
            ]
            # One-hot selections (AND-OR, no priority chain): at most one per process.
            restoring = [mispredicting[slot] & self._belongs(slot, pid) for slot in range(spec_ids)]
            speculated_entries = [self.entries[slot] for slot in range(spec_ids)]
            m.d.sync += [
                restore.valid.eq(Cat(*restoring).any()),
                restore.slot.eq(encode(restoring)),
                restore.mask.eq(select(restoring, (entry.mask for entry in speculated_entries)) & ~self.confirm),
                target.eq(select(restoring, (entry.target for entry in speculated_entries))),
            ]
            # The squash and the unspeculated branch never redirect together: the squash
            # removes that branch, the youngest of its process, before it can resolve.
            m.d.comb += [
                self.redirect[pid].eq(self.taken[own] | restore.valid),
                self.redirect_pc[pid].eq(Mux(restore.valid, target, self.entries[own].target)),
            ]

    def _arrival(self, m: Module, killed):
        """The slot decode fills, its record before the retarget, and its search from next cycle."""
        new, spec_ids = self.alloc, self._spec_ids
        register_read = new.kind == BranchKind.RR
        arrival = Signal(self._layout)
        m.d.comb += [
            arrival.pid.eq(new.pid),
            arrival.pc.eq(new.pc),
            arrival.target.eq(new.target),
            arrival.cond.eq(new.cond),
            arrival.kind.eq(new.kind),
            arrival.x.eq(new.x),
            arrival.y.eq(new.y),
            arrival.block.eq(Mux(register_read, 0, new.block)),
            # RR compares the next cycle; a memory branch's timer counts from its wake-up.
            arrival.timer.eq(Mux(register_read, self._register_wait - 1, self._memory_wait - 1)),
            # Bits confirmed this cycle leave the new branch's mask too.
            arrival.mask.eq(new.mask & ~self.confirm),
        ]
        allocated = []
        for slot in range(self._slot_count):
            if slot < spec_ids:
                here = new.speculated & (new.spec_id == slot)
            else:
                here = ~new.speculated & (new.pid == slot - spec_ids)
            allocated.append(wire(m, new.valid & here, f"allocated_{slot}"))
        self._search(m, new.valid & ~register_read, Cat(*allocated), arrival.block, Cat(*killed))
        m.d.sync += [
            Assert(~(Cat(*allocated) & self.valid).any(), "branch allocated into a busy slot"),
            Assert(~(new.valid & new.speculated & register_read), "speculated RR branch"),
            Assert(~new.valid | ~Cat(*(restore.valid for restore in self.restore)).bit_select(new.pid, 1),
                   "branch decoded in the cycle its process is squashed"),
        ]
        return allocated, arrival

    def _search(self, m: Module, starting, allocated, block, killed):
        """The searching slot and its block, held while its search goes on (retargets applied)."""
        # One row: every search is in its last row (the tracker's counter is a constant then).
        self._last_row = self.search_last if self._rows > 1 else Const(1)
        m.d.comb += self.searching_next.eq(self._searching.any() & ~self._last_row)
        if self._rows == 1:
            m.d.sync += [self._searching.eq(Mux(starting, allocated, 0)), self.search_block.eq(block)]
            return
        _, moved = self._retargeted(m, self.search_block, "retargeted_search")
        going_on = Mux(self._last_row, 0, self._searching & ~killed)
        m.d.sync += [self._searching.eq(Mux(starting, allocated, going_on)),
                     self.search_block.eq(Mux(starting, block, moved))]

    def _retargeted(self, m: Module, block, name: str) -> tuple[Signal, Value]:
        tm, home = self.retarget_tm, self.retarget_home
        hit = wire(m, self.retarget & (block >= tm.base) & (block < tm.base + tm.blocks), name)
        return hit, Mux(hit, block - tm.base + home.base, block)

    def _ready_next(self, m: Module, slot: int, entry):
        """The slot's ``_ready`` bit a cycle ahead: a slot filled now starts its timer at 1 or more,
        a waiting one holds it, so only a slot at 1 or 0 waiting for nothing is ready next.
        """
        waiting = self._searching[slot] | entry.waits.any()
        # Invariants of the state, so not in the reset cycle, whose state may be anything.
        settled = ResetSignal() | ~self.valid[slot]
        m.d.sync += [self._ready[slot].eq(self.valid[slot] & ~waiting & (entry.timer < 2)),
                     Assert(settled | (self._ready[slot] == (~waiting & (entry.timer == 0))),
                            "a slot's registered readiness disagrees with its timer"),
                     Assert(settled | ~waiting | (entry.timer == self._memory_wait - 1),
                            "a waiting slot's timer left its start value")]

    def _update_slots(self, m: Module, killed, allocated, arrival):
        # No reset: a record means something only while its slot is valid.
        records = record_register(m, self.entries, "slot_records")
        found = wire(m, self.writers & ~self.broadcast, "found_writers")
        for slot, entry in enumerate(self.entries):
            searching = self._searching[slot]
            # A search accumulates in ``waits`` (empty on arrival) what its rows find.
            if self._rows == 1:
                waits_left, writers = Mux(searching, found, entry.waits & ~self.broadcast), self.writers
            else:
                waits_left, writers = entry.waits & ~self.broadcast | Mux(searching, found, 0), entry.waits | self.writers
            waits_left = wire(m, waits_left, f"waits_left_{slot}")
            live = self.valid[slot] & ~killed[slot]
            searched = searching & self._last_row
            wakes = wire(m, live & (entry.waits.any() & ~searching | searched) & ~waits_left.any(), f"wakes_{slot}")
            staying = Signal(self._layout, name=f"staying_{slot}")
            m.d.comb += [staying.eq(entry), staying.waits.eq(waits_left),
                         staying.mask.eq(entry.mask & ~self.confirm)]
            with m.If(searched & writers.any()):
                m.d.comb += staying.kind.eq(BranchKind.BR)
            # A memory branch's timer holds its start value from its arrival until it wakes,
            # so waking loads nothing: the tracker search stops at the read request.
            with m.If(~searching & ~entry.waits.any() & ~self._ready[slot]):
                m.d.comb += staying.timer.eq(entry.timer - 1)
            self._ready_next(m, slot, entry)

            incoming = Signal(self._layout, name=f"incoming_{slot}")
            m.d.comb += incoming.eq(Mux(allocated[slot], arrival, staying))
            if slot < self._spec_ids:
                m.d.comb += incoming.x.eq(0)        # never RR: no X to keep
            following = Signal(self._layout, name=f"next_{slot}")
            stays = Signal(name=f"stays_{slot}")
            # The arriving block comes from the TLB with this cycle's retarget applied.
            moved, block = self._retargeted(m, staying.block, f"retargeted_{slot}")
            m.d.comb += [
                following.eq(incoming),
                following.block.eq(Mux(allocated[slot], arrival.block, block)),
                stays.eq(allocated[slot] | (self.valid[slot] & ~self.resolving[slot] & ~killed[slot])),
                self.read_valid[slot].eq(wakes),
                self.read_block[slot].eq(entry.block),
            ]
            # A slot arriving now, or searching on, searches next cycle: it is not reading yet.
            reading = (stays & ~allocated[slot] & ~(searching & ~self._last_row) & (incoming.kind != BranchKind.RR)
                       & ~incoming.waits.any())
            m.d.sync += [
                Assert(~(reading & moved), "retarget of a block whose read is under way"),
                records[slot].eq(following),
                self.valid[slot].eq(stays),
            ]
        m.d.comb += self.reads_tm.eq(Cat(*(valid & (entry.kind != BranchKind.RR) & (entry.block >= self._home_blocks)
                                           for valid, entry in zip(self.valid, self.entries))).any())
