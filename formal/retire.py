"""Formal harness of a process's end: a drained process whose copies home nothing holds
up any more ends (``hts.hdl.hts.ends``) within a bound computed from the configuration."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.hdl._ir import Fragment

from hts.base.config import SystemConfig
from hts.hdl.copy_back import CopyBackEngine
from hts.hdl.hts import copy_wanted, ends, holds
from hts.hdl.interfaces import beats_per_block, largest_copy_beats
from hts.hdl.memory_tracker import MemoryTracker
from hts.hdl.primitives import index_set, overlaps, popcount, region_end
from hts.hdl.tlb import TaskLookupBuffer

from .harness import Harness, PropertyGroup, elaborated_with, free_inputs, registers, strict_total_order

__all__ = ["RetireHarness", "largest_copy", "retire_bound"]


def largest_copy(config: SystemConfig) -> int:
    """Beats of the largest copy: a home of the most blocks an entry's size field holds,
    but no more than home memory (``tlb_homes_in_home_memory``)."""
    return min(largest_copy_beats(config), config.memory.blocks * beats_per_block(config))


def retire_bound(config: SystemConfig) -> int:
    """Cycles within which a drained process with nothing in flight ends: every TLB entry
    may have to be copied home first (the process's own, and any older one, which the
    engine copies first), one at a time, each taking its beats and the cycle in which it
    finishes (that cycle starts no copy)."""
    return config.hts.tlb_entries * (largest_copy(config) + 1)


class RetireHarness(Harness):
    """The memory tracker, the TLB and the copy-back engine, wired as ``hts.hdl.hts.HTS``
    wires them; decode (its allocations and ``drained``), the CDB and squash (``release``,
    ``confirm``, ``drop``), the queues and shells (what may be retargeted) are free.

    The memory behind the engine's two ports is always ready and answers every read in the
    next cycle (the timing of the model's copy-back). Process ``p`` is *watched* from a
    cycle in which it is active and drained, has no tag in flight, and every TLB entry
    *ahead* (its own, and those older than one of them: the engine copies oldest first)
    is resolved (no speculation ID), produced, and touched by no tag in flight. After the
    last task's broadcast, with no speculation pending, that is so. ``bound`` proves that
    ``p`` ends within :func:`retire_bound` cycles of that cycle, however the other
    processes go on: a counter of the cycles watched stays below the bound while ``p``
    has not ended.

    The induction rests on a potential: the cycles watched plus the cycles of copying
    left (the copy in progress's writes, and the largest copy plus one for every other
    entry ahead) never exceed the bound. Helpers make the state the induction starts
    from reachable: the TLB's age order and overlap relation, its entries' producers in
    flight until broadcast, the tracker's ``touches`` rows of new tags empty, the
    engine's copy in a valid, resolved entry with one read in flight, and the entries
    ahead staying ready (a new tag has no ``touches`` bit for them, and a retarget moves
    only homes no older entry overlaps).
    """

    # The base case spans reset, a start with an allocation, its search's rows, its
    # producer's broadcast, the first cycle watched and the one after, so that a drained process allocating again
    # fails as a counterexample from reset. The covers need an allocation, its producer's
    # broadcast and two copies of one block.
    GROUPS = (PropertyGroup("bound", "prove", lambda config: 4 + config.hts.tracker_rows,
                            cover_depth=lambda config: 7 + config.hts.tracker_rows + 2 * beats_per_block(config)),)
    ASSUMPTIONS = ("drained_stays", "drained_process_allocates_nothing", "alloc_needs_free_tag",
                   "release_only_in_flight", "tlb_alloc_only_with_room", "tlb_entry_with_its_producer",
                   "tlb_homes_in_home_memory", "no_allocation_during_a_search", "young_producer_searching")

    def build(self, m: Module):
        config = self.config
        processes = config.hts.processes
        tracker = MemoryTracker(config)
        tlb = m.submodules.tlb = TaskLookupBuffer(config)
        engine = CopyBackEngine(config)
        m.submodules.tracker, tracker_young = elaborated_with(tracker, "young")
        m.submodules.copy_back = engine_fragment = Fragment.get(engine, None)
        inside = registers(engine_fragment, "slot", "reads_left", "writes_left", "in_flight")
        buffer = next(fragment.origins[0] for fragment, name, *_ in engine_fragment.subfragments if name == "buffer")

        released, stalled_on_tlb, start = Signal(config.hts.tracker_entries), Signal(), Signal(processes)
        # The search that starts the cycle after a TLB allocation takes the new home as its
        # write query while it goes on (``HTS._tracker_search``): the slot's ``touches``
        # column comes from it, a row a cycle. Other searches leave the columns alone.
        speculative, new_home = Signal(), Signal.like(tlb.alloc_entry.home, reset_less=True)
        going_on = speculative & ~tracker.search_last
        m.d.sync += [speculative.eq(tlb.alloc | going_on),
                     new_home.eq(Mux(going_on, new_home, tlb.alloc_entry.home))]
        drained, active, retiring = Signal(processes), Signal(processes), Signal(processes)
        answered = Signal()                      # a TM read accepted last cycle
        m.d.comb += [released.eq(AnySeq(len(released))), stalled_on_tlb.eq(AnySeq(1)),
                     start.eq(AnySeq(processes)), drained.eq(AnySeq(processes))]
        # As hdl/hts.py wires them (``_copy_back``, the end-of-cycle updates, ``_front_end``).
        wired = [
            *(getattr(engine, name).eq(getattr(tlb, name)) for name in
              ("copy_valid", "copy_index", "copy_entry", "retarget_valid", "retarget_index", "retarget_entry")),
            tlb.retargetable_tags.eq(engine.retargetable_tags),
            tlb.tracker_valid.eq(tracker.valid),
            tlb.touches.eq(tracker.touches),
            engine.wanted.eq(copy_wanted(stalled_on_tlb, drained, tlb, processes)),
            tlb.remove.eq(engine.remove),
            tracker.release.eq(released),
            # No wake-up here: no tag is held from allocation once free.
            tracker.held.eq(0),
            tlb.broadcast.eq(released),
            *(getattr(tracker, name).eq(getattr(engine, name))
              for name in ("retarget", "retarget_tm", "retarget_home", "retarget_producer")),
            tracker.retarget_slot.eq(tlb.retarget_slot),
            tracker.tlb_alloc.eq(tlb.alloc),
            tracker.tlb_alloc_slot.eq(tlb.alloc_slot),
            tracker.query_home.eq(speculative),
            tracker.search_start.eq(tlb.alloc),
            tracker.home_search_continues.eq(going_on),
            tlb.home_search_continues.eq(going_on),
            tracker.query_writes.eq(Mux(speculative, new_home, AnySeq(tracker.query_writes.shape().size))),
            *(home.eq(entry.home) for home, entry in zip(tracker.tlb_homes, tlb.entries)),
            # The memory: always ready, a read answered in the next cycle.
            engine.tm_port.ready.eq(1),
            engine.tm_port.rvalid.eq(answered),
            engine.home_port.ready.eq(1),
            # Decode's head regions are free here: no check of the relations kept for them.
            tlb.lookup_checks.eq(0),
        ]
        # ``tlb_homes`` is one port assigned element by element.
        for block in (tracker, tlb, engine):
            free_inputs(m, block, wired=[statement.lhs for statement in wired] + [tracker.tlb_homes])
        m.d.comb += wired
        # Decode allocates nothing while a search goes on next cycle (Stall.SCAN), and the
        # producer of the young slot, searching from the enqueue stage, is not released
        # before its search ends (a squash ends the search with it).
        self.assume(m, "no_allocation_during_a_search", ~(tlb.alloc | tracker.alloc) | ~going_on)
        young_released = Cat(*(young & released.bit_select(entry.producer, 1)
                               for young, entry in zip(tlb._young, tlb.entries)))
        self.assume(m, "young_producer_searching", ~going_on | ~young_released.any())
        m.d.sync += answered.eq(engine.tm_port.read & engine.tm_port.ready)
        m.d.comb += retiring.eq(Cat(*(ends(active, drained, tracker, tlb, pid) for pid in range(processes))))
        m.d.sync += active.eq(active & ~retiring | start)

        self._assumptions(m, tracker, tlb, drained, active, retiring)
        self._helpers(m, tracker, tracker_young, tlb, engine, inside, buffer, answered)
        for pid in range(processes):
            self._bound(m, pid, tracker, tlb, engine, inside, drained, active, retiring)

    def _assumptions(self, m: Module, tracker, tlb, drained, active, retiring):
        processes = self.config.hts.processes
        # Decode: a drained process has an exhausted queue and no pending branch, and
        # nothing but its end and a new start changes that.
        going_on = Signal(processes)
        m.d.sync += going_on.eq(active & drained & ~retiring)
        self.assume(m, "drained_stays", (going_on & ~drained) == 0)
        # Decode does not decode a drained process (Stall.DRAIN): no tag, no TLB entry.
        self.assume(m, "drained_process_allocates_nothing", Cat(*(
            ~drained[pid] | ~(tracker.alloc & (tracker.alloc_entry.pid == pid)) & ~(tlb.alloc & (tlb.alloc_entry.pid == pid))
            for pid in range(processes))).all())
        # Decode allocates a tag only with ``has_free``, a TLB entry only with ``has_room``
        # (step 8); the CDB and the squash release tags in flight only.
        self.assume(m, "alloc_needs_free_tag", ~tracker.alloc | tracker.has_free)
        self.assume(m, "release_only_in_flight", (tracker.release & ~tracker.valid) == 0)
        self.assume(m, "tlb_alloc_only_with_room", ~tlb.alloc | tlb.has_room)
        # A TLB entry is a task's speculative output: decode writes it with the task's tag,
        # allocated in the same cycle, as its producer.
        self.assume(m, "tlb_entry_with_its_producer",
                    ~tlb.alloc | tracker.alloc & (tlb.alloc_entry.producer == tracker.free_tag))
        # An output region has at least one block (a copy of no beats never finishes), and
        # lies in home memory (decode faults on a region past the process's window). The
        # TLB keeps each home's end in ``widths.phys_block + 1`` bits, which a home past
        # the physical space (possible in ``region_blocks`` wider than that) would wrap.
        home = tlb.alloc_entry.home
        self.assume(m, "tlb_homes_in_home_memory",
                    ~tlb.alloc | (home.blocks != 0) & (region_end(home) <= self.config.memory.blocks))

    def _helpers(self, m: Module, tracker, tracker_young, tlb, engine, inside, buffer, answered):
        """Facts about the blocks' state that the bound's induction needs (all of them hold
        from reset whatever the process does)."""
        group = "bound"
        entries, valid = tlb.entries, tlb.valid
        for name, holds_now in strict_total_order(valid, tlb.older).items():
            self.check(m, group, f"tlb_{name}", holds_now)
        # ``shadowed`` (an older entry overlaps a slot's home) is exact, with the registered ends.
        self.check(m, group, "tlb_home_ends_exact",
                   Cat(*(~valid[i] | (tlb._home_ends[i] == region_end(entries[i].home))
                         for i in range(len(entries)))).all())
        self.check(m, group, "tlb_shadowed_exact", Cat(*(
            ~(valid[i] & valid[j]) | (tlb._shadowed[i][j] == (tlb.older[i][j] & overlaps(entries[i].home, entries[j].home)))
            for i in range(len(entries)) for j in range(len(entries)))).all())
        self.check(m, group, "tlb_valid_homes_in_home_memory",
                   Cat(*(~v | (entry.home.blocks != 0) & (region_end(entry.home) <= self.config.memory.blocks)
                         for v, entry in zip(valid, entries))).all())
        # A producer is in flight until its broadcast marks it done; an entry allocated last
        # cycle is not done (its producer was free, so not released, then).
        self.check(m, group, "tlb_producer_in_flight_until_done",
                   Cat(*(~v | entry.producer_done | tracker.valid.bit_select(entry.producer, 1)
                         for v, entry in zip(valid, entries))).all())
        self.check(m, group, "tlb_young_entry_not_done",
                   Cat(*(~(young & v) | ~entry.producer_done
                         for young, v, entry in zip(tlb._young, valid, entries))).all())
        # The tracker's ``touches``: a tag allocated last cycle touches nothing yet (its row
        # was kept empty while free: from the second edge, the first sees arbitrary state),
        # and its young slot is the TLB's.
        was_valid = Signal.like(tracker.valid)
        m.d.sync += was_valid.eq(tracker.valid)
        self.check(m, group, "tracker_new_tags_touch_nothing",
                   Cat(*(~v | was | (row == 0) for v, was, row in zip(tracker.valid, was_valid, tracker.touches))).all())
        self.check(m, group, "tracker_young_is_the_tlbs", tracker_young == tlb._young)
        # The engine: a copy in progress is of a valid, resolved, produced entry, with a
        # write to do, no more than the largest copy's, and one read in flight; with this
        # memory nothing waits in its buffer.
        slot, copying = inside["slot"], engine.copying
        # (With one slot the index is a bit wider than the array it selects from.)
        copied = entries[slot] if len(entries) > 1 else entries[0]
        self.check(m, group, "copy_of_a_resolved_entry",
                   ~copying | valid.bit_select(slot, 1) & ~copied.mask.any() & copied.producer_done)
        self.check(m, group, "copy_reads_ahead_by_one",
                   (buffer.level == 0) & (inside["in_flight"] == copying) & (answered == copying)
                   & (~copying | (inside["writes_left"] != 0) & (inside["writes_left"] <= largest_copy(self.config))
                      & (inside["writes_left"] == inside["reads_left"] + inside["in_flight"])))

    def _bound(self, m: Module, pid: int, tracker, tlb, engine, inside, drained, active, retiring):
        config, group = self.config, "bound"
        count, bound = config.hts.tlb_entries, retire_bound(config)
        entries, valid = tlb.entries, tlb.valid
        own = [v & (entry.pid == pid) for v, entry in zip(valid, entries)]
        # The entries the engine copies before the process's last is gone: its own and
        # those older than one of them.
        ahead = Signal(count, name=f"ahead_{pid}")
        m.d.comb += ahead.eq(Cat(*(own[e] | valid[e] & Cat(*(own[s] & tlb.older[s][e] for s in range(count))).any()
                                   for e in range(count))))
        # An entry ahead is ready to go when it is resolved, produced and no tag in flight
        # touches its home; then only the engine's time stands between it and its copy.
        resolved = Cat(*(~entry.mask.any() & entry.producer_done for entry in entries))
        untouched = Cat(*((Cat(*(row[e] for row in tracker.touches)) & tracker.valid) == 0 for e in range(count)))
        watched, since = Signal(name=f"watched_{pid}"), Signal(range(bound + 1), name=f"since_{pid}")
        watching, elapsed = Signal(name=f"watching_{pid}"), Signal.like(since, name=f"elapsed_{pid}")
        m.d.comb += [
            watching.eq(watched | active[pid] & drained[pid] & ~holds(tracker, pid)
                        & ((ahead & ~(resolved & untouched)) == 0)),
            elapsed.eq(Mux(watched, since, 0)),
        ]
        # ``since`` wraps only after the bound has failed.
        m.d.sync += [watched.eq(watching & ~retiring[pid]), since.eq(elapsed + 1)]
        waiting = watching & ~retiring[pid]

        name = f"process_{pid}"
        self.check(m, group, f"{name}_ends_within_the_bound", ~waiting | (elapsed < bound))
        # The potential: the copy in progress's writes left, and the largest copy plus its
        # finishing cycle for every other entry ahead.
        copying, slot = engine.copying, inside["slot"]
        copy_slot = index_set([copying], [slot], count)
        left = Mux(copying, inside["writes_left"], 0) + popcount(ahead & ~copy_slot) * (largest_copy(config) + 1)
        self.check(m, group, f"{name}_time_left_within_the_bound", ~waiting | (elapsed + left <= bound))
        # What the potential's steps need while the process is watched: none of its tags in
        # flight, the entries ahead resolved and produced, and no tag in flight touching them.
        self.check(m, group, f"{name}_watched_while_active_and_drained", ~watching | active[pid] & drained[pid])
        self.check(m, group, f"{name}_no_tag_in_flight", ~watching | ~holds(tracker, pid))
        self.check(m, group, f"{name}_entries_ahead_resolved", ~watching | ((ahead & ~resolved) == 0))
        self.check(m, group, f"{name}_entries_ahead_untouched", ~watching | ((ahead & ~untouched) == 0))
        self.check(m, group, f"{name}_entries_ahead_not_young", ~watching | ((tlb._young & ahead) == 0))

        if pid == 0:
            # A copy of the process's own entry, and one of another process's entry,
            # finished while it was watched (covered for process 0; the others are alike).
            finishing = copying & (engine.remove & copy_slot).any()
            copied_entry = entries[slot] if count > 1 else entries[0]
            own_copied, other_copied = Signal(), Signal()
            m.d.sync += [
                own_copied.eq(waiting & (own_copied | finishing & (copied_entry.pid == pid))),
                other_copied.eq(waiting & (other_copied | finishing & (copied_entry.pid != pid))),
            ]
            self.cover(m, group, "ends_after_a_copy_back", retiring[pid] & own_copied)
            if config.hts.processes > 1:
                self.cover(m, group, "ends_after_copying_another_process_entry_first",
                           retiring[pid] & own_copied & other_copied)
