"""Branch unit: every pending ``if``, its memory read and its resolution.

RTL of ``hts.models.branch_unit`` as ``models/hts.py`` drives it: allocation at decode
(the end of ``_decode_branch``), resolution (``_resolve_branches`` with ``_squash`` and
``_confirm``), the end-of-cycle updates (``_end_of_cycle``: a bus-read branch whose last
writer is released starts its read, confirmed bits leave the masks, the IDs freed go
back to decode's pool; ``_apply_retarget``), and the per-process state decode reads
(``ProcessContext.blocked`` and the branch part of ``drained``). See
docs/microarchitecture.md, steps 3 and 10 of "One cycle" and *Misprediction*. Decode
(``hts.hdl.decode``) owns the speculation-ID pool, the masks and the checkpoints.

**Slots.** At most ``hts.spec_ids`` speculated branches are pending at once (one per
speculation ID), and at most one unspeculated branch per process (it stops its process's
decode until it resolves, and its slot is free again at the edge of that cycle). So slot
``i < spec_ids`` holds the speculated branch with ID ``i``, and slot ``spec_ids + p`` the
unspeculated branch of process ``p``: the slot index is the ID (no ID or "speculated"
field, no free-slot search; the checkpoint slot is the slot index) and ``blocked[p]`` is
one valid bit. Only the per-process slots can hold an RR branch (RR is never
speculated), so only they keep X.

**Age without an age matrix.** Within a process, a speculated branch is older than
another exactly when its ID is in the other's ``mask`` (a branch's mask is the set of its
process's older pending speculated branches), and the unspeculated branch, if any, is the
youngest (nothing decodes behind it). That is all the ordering the model's per-process
list gives: a mispredicted branch's squash, the cycle after its resolution, removes every
branch whose mask holds its ID, and a younger branch due in the cycle of the
misprediction neither reports nor acts (``branch.mask & doomed`` in the model). The model
emits the ``branch`` events of one cycle by pid, then by age: the number of bits in
``mask``.

**The writers search.** Decode hands over a memory branch as MR with its block
translated. The next cycle (at most one slot is that new: decode takes one instruction
per cycle) the slot's block, from a register, is searched in the memory tracker; the
writers it finds, the CDB's broadcast aside, make it BR and are what it waits for
(``PendingBranch.search``). So no cycle does both the TLB's and the tracker's search.

**Memory reads** (one lane per slot; lane ``i`` belongs to slot ``i``). A read starts in
the cycle the model fixes ``resolves_at``: an MR branch in its search cycle, a BR branch
in the cycle its last awaited tag is released (``broadcast``), its search cycle included
when its writers are all being squashed. In that cycle ``read_valid[i]`` is set with
``read_block[i]`` (both combinational: from the search, or from ``broadcast``),
and the memory answers exactly ``timing.memory_latency`` cycles later on
``read_data[i]``, in the slot's compare cycle. With a latency of 1 this is a block
RAM's synchronous read port (address in cycle *s*, data in *s + 1*); a longer latency
adds pipeline registers. The word must be the block's first word as it stands in the
compare cycle, after that cycle's completions, which is when the model reads it; under
the model's rules only a write by another process, which the branch does not wait for,
could land between request and answer. Every slot may start a read in the same cycle
(one released tag can wake every branch waiting on it) and every slot may resolve in
the same cycle, as in the model: the cost is ``spec_ids + processes`` read lanes and as
many 32-bit comparators. Fewer lanes would serialise reads, which the model would have
to do too (microarchitecture.md, *Open points*).

**The compare is registered.** Every slot compares its operands every cycle (the read
lane's word, or X for RR) into ``compared``; a branch resolves the cycle after its
compare (``hts.models.branch_unit.OUTCOME_DELAY``): RR two cycles after decode, a
memory branch ``timing.memory_latency + 1`` cycles after its read starts. So the
32-bit compare and the resolution that fans out to every queue are in different cycles.
Whether a slot is due is a register too (``_ready``: its timer run out, no writer
awaited, no search), set a cycle ahead from the slot's own state, so the resolution
starts from flip-flops, and the tracker search's result reaches the slot's waits and
the read request but not its timer.

Ports. From decode (lands at the edge):

- ``alloc`` (in, ``hts.hdl.interfaces.branch_layout``): an ``if`` decoded this cycle, with
  its captured operands, physical block, target (saturated at ``program_words``),
  speculation ID and mask. Its block is ignored for RR (the model keeps 0 there), and is
  the TLB's translation with this cycle's retarget already applied (``hts.hdl.tlb``'s
  ``branch_phys``); it gets this cycle's ``confirm``.

The tracker (the cycle after a memory branch's decode):

- ``search_block`` (out, registered): the block of the memory branch decoded last cycle,
  as its slot holds it; ``writers`` (in, combinational): the tags writing it, the
  CDB's broadcast aside.

From the top level (land at the edge):

- ``broadcast`` (in): every tag released this cycle (CDB grants, squashed and aborted
  tasks), cleared from every ``waits``;
- ``retarget``, ``retarget_tm``, ``retarget_home`` (in, from the copy-back engine): a
  slot whose block lies in the TM region reads the home block instead (not the slot
  filled now: see ``alloc``). A read under way
  is never retargeted (asserted): its block's producer is done, and a done producer is
  not retargetable.

Memory (see above): ``read_valid``, ``read_block`` (out), ``read_data`` (in).

Resolution (combinational, in the resolution cycle):

- ``resolving``, ``taken`` (out, per slot): the slot's branch resolves now (no squash
  removes it now, and no older branch of its process is mispredicted now), and whether
  it is taken. With ``entries`` this is the trace's ``branch`` event (pid, pc, kind;
  ``spec_id`` is the slot index below ``spec_ids``, else null);
- ``confirm`` (out, to decode, window, stations, accelerators, TLB): IDs predicted right,
  cleared from every mask at the edge (here too).

The squash (registered: the misprediction of the cycle before; the slot went at that
edge, its record stays until its ID is free again, for the trace):

- ``squash`` (out, same users; the TLB's ``drop``): IDs mispredicted last cycle; their
  tasks are killed at once. This unit removes the process's younger branches (the edge);
- ``squash_next`` (out, to the window and the stations; combinational): the IDs
  mispredicted now, i.e. next cycle's ``squash``, so that those queues register which
  entries it will remove;
- ``restore`` (out, per process, ``hts.hdl.interfaces.restore_layout``): GPRs and loop
  stack come back from checkpoint ``slot``, the mask becomes the branch's ``mask``, and
  the process does not decode in this cycle (the model's ``resume_at``);
- ``freed_ids`` (out, to decode's pool): IDs free again after the edge: confirmed,
  squashed, and those of the younger branches removed;
- ``redirect``, ``redirect_pc`` (out, per process, to the task queue): an unspeculated
  taken branch (now) or a squash sends fetch to the target; never both, since the squash
  removes the unspeculated branch, the youngest of its process.

Nothing decided by a compare leaves this unit in the cycle of the compare; a
resolution leaves it as ``confirm``, ``taken`` and ``resolving`` and ``squash_next``,
while the squash's kill in window, stations and shells, and the restore in decode's
pick, start from registers a cycle later.

State (registered, start of the cycle):

- ``blocked`` (out, per process): it has an unspeculated pending branch, so it does not
  decode (in the cycle that branch resolves too, as the model's ``resume_at`` wants);
- ``pending`` (out, per process): it has a pending branch or a squash (so it is not drained);
- ``valid``, ``entries`` (out, :func:`slot_layout`): the slots;
- ``reads_tm`` (out, to the TLB's ``tm_idle``): some memory branch pending at the start
  of the cycle reads a TM block.
"""

from amaranth.hdl import Assert, Cat, Module, Mux, ResetSignal, Signal, Value
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
    """A pending branch in its slot (``hts.models.branch_unit.PendingBranch``).

    ``target``: pc + C, saturated at ``program_words``. ``block``: physical block read (0
    for RR, as in the model). ``waits``: writers not yet released (BR). ``timer``: once
    ``waits`` is empty, cycles left before the resolution cycle (the read, then the
    registered compare); ``memory_latency`` while a memory branch searches or waits, so
    that waking loads nothing. ``mask``: the IDs the branch is itself under. ``x`` is
    kept in the per-process slots only.
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
    """``hts.spec_ids`` speculated and ``hts.processes`` unspeculated branch slots; see the module doc."""

    def __init__(self, config: SystemConfig):
        hts, widths = config.hts, config.widths
        self._spec_ids, self._processes = hts.spec_ids, hts.processes
        self._slot_count = slots = hts.spec_ids + hts.processes
        # Cycles from a read's start, or from an RR branch's arrival, to its resolution.
        self._memory_wait = config.timing.memory_latency + OUTCOME_DELAY
        self._register_wait = 1 + OUTCOME_DELAY
        self._home_blocks = config.memory.blocks
        self._layout = slot_layout(config)
        super().__init__({
            "alloc": In(branch_layout(config)),
            "search_block": Out(widths.phys_block),
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
            "squash_next": Out(hts.spec_ids),
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
        """Whether ``slot`` holds a branch of process ``pid`` (its validity aside)."""
        if slot < self._spec_ids:
            return self.entries[slot].pid == pid
        return Value.cast(slot == self._process_slot(pid))

    def elaborate(self, platform):
        m = Module()
        # One-hot: the slot whose memory branch was decoded last cycle searches the tracker now.
        self._searching = Signal(self._slot_count)
        # Per slot: its timer has run out and it waits for nothing (``_ready``).
        self._ready = Signal(self._slot_count)
        mispredicting, killed = self._resolve(m)
        self._per_process(m, mispredicting)
        allocated, arrival = self._arrival(m)
        self._update_slots(m, killed, allocated, arrival)
        return m

    def _resolve(self, m: Module):
        """Which slots resolve now and how, which IDs go free, which slots last cycle's
        misprediction removes; returns the IDs mispredicted now and the removed slots."""
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
        m.d.comb += self.squash_next.eq(mispredicting)
        m.d.sync += self.squash.eq(self.squash_next)
        m.d.comb += [
            self.taken.eq(Cat(*(resolving[slot] & outcome[slot] for slot in range(self._slot_count)))),
            self.confirm.eq(mutable("branch_confirm_lost",
                                    Cat(*(resolving[slot] & ~outcome[slot] for slot in range(spec_ids))), 0)),
            # Every speculated slot that goes: confirmed, squashed, or removed by a squash.
            self.freed_ids.eq(self.confirm | self.squash | Cat(*killed[:spec_ids])),
        ]
        return mispredicting, killed

    def _per_process(self, m: Module, mispredicting):
        """Blocking, pending, redirect and restore of each process.

        A misprediction is registered with what its squash needs next cycle: the restore
        (checkpoint slot, and the branch's mask less this cycle's confirm) and the target.
        """
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

    def _arrival(self, m: Module):
        """The slot decode fills, the record it lands as (before the retarget), and the
        tracker search it makes next cycle if it reads memory."""
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
        m.d.sync += [
            self._searching.eq(Mux(register_read, 0, Cat(*allocated))),
            self.search_block.eq(arrival.block),
            Assert(~(Cat(*allocated) & self.valid).any(), "branch allocated into a busy slot"),
            Assert(~(new.valid & new.speculated & register_read), "speculated RR branch"),
            Assert(~new.valid | ~Cat(*(restore.valid for restore in self.restore)).bit_select(new.pid, 1),
                   "branch decoded in the cycle its process is squashed"),
        ]
        return allocated, arrival

    def _retargeted(self, m: Module, block, name: str) -> tuple[Signal, Value]:
        """Whether this cycle's retarget moves ``block``, and where it goes."""
        tm, home = self.retarget_tm, self.retarget_home
        hit = wire(m, self.retarget & (block >= tm.base) & (block < tm.base + tm.blocks), name)
        return hit, Mux(hit, block - tm.base + home.base, block)

    def _ready_next(self, m: Module, slot: int, entry):
        """The slot's ``_ready`` bit, registered a cycle ahead from its own state: a slot
        filled now starts its timer at 1 or more, and a waiting one holds its start value
        (``memory_latency``, at least 1), so only a slot at 1 or 0 that waits for nothing
        is ready next."""
        waiting = self._searching[slot] | entry.waits.any()
        # Invariants of the state, so not in the reset cycle, whose state may be anything.
        settled = ResetSignal() | ~self.valid[slot]
        m.d.sync += [self._ready[slot].eq(self.valid[slot] & ~waiting & (entry.timer < 2)),
                     Assert(settled | (self._ready[slot] == (~waiting & (entry.timer == 0))),
                            "a slot's registered readiness disagrees with its timer"),
                     Assert(settled | ~waiting | (entry.timer == self._memory_wait - 1),
                            "a waiting slot's timer left its start value")]

    def _update_slots(self, m: Module, killed, allocated, arrival):
        """Next state of every slot, its memory read, and whether TM is still read."""
        # A slot's record means something only while its valid bit is set: no reset
        # (record_register, hdl/primitives.py).
        records = record_register(m, self.entries, "slot_records")
        found = wire(m, self.writers & ~self.broadcast, "found_writers")
        for slot, entry in enumerate(self.entries):
            searching = self._searching[slot]
            waits_left = wire(m, Mux(searching, found, entry.waits & ~self.broadcast), f"waits_left_{slot}")
            live = self.valid[slot] & ~killed[slot]
            wakes = wire(m, live & (entry.waits.any() | searching) & ~waits_left.any(), f"wakes_{slot}")
            staying = Signal(self._layout, name=f"staying_{slot}")
            m.d.comb += [staying.eq(entry), staying.waits.eq(waits_left),
                         staying.mask.eq(entry.mask & ~self.confirm)]
            with m.If(searching & self.writers.any()):
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
            # A slot arriving now searches next cycle: it is not reading yet.
            reading = stays & ~allocated[slot] & (incoming.kind != BranchKind.RR) & ~incoming.waits.any()
            m.d.sync += [
                Assert(~(reading & moved), "retarget of a block whose read is under way"),
                records[slot].eq(following),
                self.valid[slot].eq(stays),
            ]
        m.d.comb += self.reads_tm.eq(Cat(*(valid & (entry.kind != BranchKind.RR) & (entry.block >= self._home_blocks)
                                           for valid, entry in zip(self.valid, self.entries))).any())
