"""The HTS top level: every scheduler block, the accelerator shells, and the CPU port.

RTL of ``HTSModel`` (``models/hts.py``): it wires the blocks (docs/hardware.md, "How the
top level wires the blocks"), forms the tag sets they hear of, and retires processes.
"""

import operator
from functools import reduce

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .accelerator import AcceleratorShell, LatencyCore
from .asr import AcceleratorStatus
from .branch_unit import BranchUnit
from .cdb import CommonDataBus
from .copy_back import CopyBackEngine
from .decode import Decode, take_queue
from .dispatch import DispatchArbiter
from .enqueue import Enqueue
from .interfaces import (BranchKind, Stall, branch_read_signature, cpu_signature, dma_signature, fetch_pc_width,
                         instance_numbering, trace_layout)
from .memory_tracker import MemoryTracker
from .mutation import mutable
from .primitives import index_set, overlaps, wire
from .ready_lists import ReadyLists
from .task_queue import TaskQueue
from .tlb import TaskLookupBuffer
from .wakeup import WakeUp

__all__ = ["HTS", "connect_completion", "connect_dispatch", "queued_tag_sets", "holds", "ends", "copy_wanted"]


def holds(block, pid: int) -> Value:
    """Whether ``block`` (the TLB or the tracker) has a valid entry of process ``pid``."""
    return Cat(*(valid & (entry.pid == pid) for valid, entry in zip(block.valid, block.entries))).any()


def ends(active, drained, tracker, tlb, pid: int) -> Value:
    """Whether process ``pid`` ends now: started, drained, no tag in flight and no TLB entry
    left. Shared with ``hts.formal.retire``.
    """
    return active[pid] & drained[pid] & ~holds(tracker, pid) & ~holds(tlb, pid)


def copy_wanted(stalled_on_tlb, drained, tlb, processes: int) -> Value:
    """The copy-back engine's ``wanted``: a process stalled on the TLB last cycle, or a drained
    process still has TLB entries. Shared with ``hts.formal.retire``.
    """
    return stalled_on_tlb | Cat(*(drained[pid] & holds(tlb, pid) for pid in range(processes))).any()


def connect_dispatch(m: Module, lists, arbiter, asr):
    """Ready lists → dispatch arbiter → ASR (the formal pipeline harness wires them so too)."""
    m.d.comb += [
        arbiter.offer_valid.eq(lists.offer_valid),
        arbiter.offer_task.eq(lists.offer_task),
        lists.take.eq(arbiter.take),
        arbiter.has_free.eq(asr.has_free),
        arbiter.free_instance.eq(asr.free_instance),
        asr.occupy.eq(arbiter.occupy),
    ]


def connect_completion(m: Module, config: SystemConfig, cdb, asr, shells, squash, squashed):
    """CDB grants, squash aborts and this cycle's tag sets (the formal pipeline harness wires
    them so too). ``squashed``: the tags the squash removes from the queues. Returns
    (aborted, broadcast, released); the caller connects each shell's ``granted`` and ``abort``.
    """
    tags = config.hts.tracker_entries
    held_tags = [shell.current.tag for shell in shells]
    hit = Signal(len(shells))               # busy under a mispredicted ID, granted or not
    aborted = Signal(len(shells))
    broadcast = Signal(tags)
    released = Signal(tags)
    m.d.comb += [
        cdb.finished.eq(Cat(*(shell.done for shell in shells))),
        cdb.tags.eq(Cat(*held_tags)),
        hit.eq(mutable("abort_lost", Cat(*(shell.busy & (shell.current.mask & squash).any() for shell in shells)), 0)),
        aborted.eq(hit & ~cdb.grant),
        cdb.abort.eq(aborted),
        cdb.squashed.eq(hit),
        asr.release.eq(cdb.broadcast_instances | aborted),
        broadcast.eq(cdb.broadcast_tags),
        # A hit instance's tag leaves now, aborted or granted: the release needs no grant.
        released.eq(broadcast | squashed | index_set(hit, held_tags, tags)),
    ]
    return aborted, broadcast, released


def queued_tag_sets(m: Module, config: SystemConfig, appended, appended_mask, last_granted, squash, confirm):
    """The tags enqueued and not dispatched, and per speculation ID those under it, in
    registers (docs/microarchitecture.md, "The queued tag sets"): a waiting task's live bit and
    mask. Returns the queued tags, the sets by ID, and the queued tags under ``squash``.
    """
    tags, spec_ids = config.hts.tracker_entries, config.hts.spec_ids
    kept = Signal(tags, name="queued_kept")
    kept_under = [Signal(tags, name=f"queued_kept_under_id{spec_id}") for spec_id in range(spec_ids)]
    queued = wire(m, kept & ~last_granted, "queued_tags")
    under = [wire(m, tags_under & ~last_granted, f"queued_under_id{spec_id}")
             for spec_id, tags_under in enumerate(kept_under)]
    squashed = wire(m, reduce(operator.or_, (Mux(squash[spec_id], tags_under, 0)
                                             for spec_id, tags_under in enumerate(under))), "queued_squashed")
    m.d.sync += kept.eq(queued & ~squashed | appended)
    for spec_id, (tags_kept, tags_under) in enumerate(zip(kept_under, under)):
        joining = Mux(appended_mask[spec_id], appended, 0)
        emptied = mutable("queued_sets_keep_confirmed", confirm[spec_id], 0)
        m.d.sync += tags_kept.eq(Mux(emptied, 0, tags_under & ~squashed | joining))
    return queued, under, squashed


class HTS(wiring.Component):
    """The hardware task scheduler with its accelerator instances.

    Parameters
    ----------
    config : SystemConfig
    core : callable
        Builds each instance's core from ``(config, class_index)``; default ``LatencyCore``.

    Attributes
    ----------
    cpu : In(cpu_signature)
        Program load, length, window, start; running, ended, fault.
    branch_read, copyback_tm, copyback_home, accel_dma : Out
        Memory ports: branch reads, the copy-back engine's, each core's (``dma_signature``).
    events : Out(trace_layout)
        The trace port (not ``trace``: Verilator gives its models a ``trace`` method).
    queues, decode, enqueue, tracker, wakeup, tlb, ready_lists, arbiter, asr, cdb, branch_unit, copy_back, shells
        The blocks, for tests and the synthesis report.
    """

    def __init__(self, config: SystemConfig, core=LatencyCore):
        self._config = config
        hts = config.hts
        self._instances = instance_numbering(config)
        super().__init__({
            "cpu": In(cpu_signature(config)),
            "branch_read": Out(branch_read_signature(config)),
            "copyback_tm": Out(dma_signature(config)),
            "copyback_home": Out(dma_signature(config)),
            "accel_dma": Out(dma_signature(config)).array(len(self._instances)),
            "events": Out(trace_layout(config)),
        })
        self.queues = [TaskQueue(config) for _ in range(hts.processes)]
        self.decode = Decode(config)
        self.enqueue = Enqueue(config)
        self.tracker = MemoryTracker(config)
        self.wakeup = WakeUp(config)
        self.tlb = TaskLookupBuffer(config)
        self.ready_lists = ReadyLists(config)
        self.arbiter = DispatchArbiter(config)
        self.asr = AcceleratorStatus(config)
        self.cdb = CommonDataBus(config)
        self.branch_unit = BranchUnit(config)
        self.copy_back = CopyBackEngine(config)
        self.shells = [AcceleratorShell(config, core(config, class_index)) for class_index, _ in self._instances]

    def elaborate(self, platform):
        m = Module()
        config = self._config
        decode, enqueue, tracker, tlb, lists = self.decode, self.enqueue, self.tracker, self.tlb, self.ready_lists
        arbiter, asr, cdb = self.arbiter, self.asr, self.cdb
        branch_unit, copy_back, shells = self.branch_unit, self.copy_back, self.shells
        for pid, queue in enumerate(self.queues):
            m.submodules[f"queue{pid}"] = queue
        m.submodules.decode = decode
        m.submodules.enqueue = enqueue
        m.submodules.tracker = tracker
        m.submodules.wakeup = wakeup = self.wakeup
        m.submodules.tlb = tlb
        m.submodules.ready_lists = lists
        m.submodules.arbiter = arbiter
        m.submodules.asr = asr
        m.submodules.cdb = cdb
        m.submodules.branch_unit = branch_unit
        m.submodules.copy_back = copy_back
        for flat, shell in enumerate(shells):
            m.submodules[f"shell{flat}"] = shell

        # ---- completion, squash and the tag sets every block hears of ---------------------
        queued, under, queue_squashed = queued_tag_sets(
            m, config, Mux(enqueue.append, enqueue.queued_tags, 0), enqueue.append_task.mask,
            arbiter.last_granted_tags, branch_unit.squash, branch_unit.confirm)
        squashed = Signal(config.hts.tracker_entries)
        m.d.comb += squashed.eq(enqueue.squashed_tags | queue_squashed)
        aborted, broadcast, released = connect_completion(m, config, cdb, asr, shells, branch_unit.squash, squashed)
        for flat, shell in enumerate(shells):
            m.d.comb += [shell.granted.eq(cdb.grant[flat]), shell.abort.eq(aborted[flat]),
                         shell.power_enable.eq(1), shell.confirm.eq(branch_unit.confirm),
                         shell.retarget.eq(copy_back.shell_retarget[flat]),
                         shell.delivered.eq(arbiter.delivered[flat]), shell.record.eq(arbiter.deliver_record[flat])]
            wiring.connect(m, arbiter.deliver[flat], shell.task)
            wiring.connect(m, shell.dma, wiring.flipped(self.accel_dma[flat]))

        # ---- end-of-cycle updates of every block that holds tasks or branches -------------
        m.d.comb += [enqueue.squash.eq(branch_unit.squash), enqueue.confirm.eq(branch_unit.confirm)]
        # The ready lists: the task leaving the enqueue stage and the walker's woken tag join
        # them; a listed tag is live while queued.
        m.d.comb += [
            lists.append.eq(enqueue.append),
            lists.append_task.eq(enqueue.append_task),
            lists.woken.eq(wakeup.woken),
            lists.queued.eq(queued),
            lists.squashed.eq(queue_squashed),
            lists.under.eq(Cat(*under)),
        ]
        # The wake-up: the enqueue stage registers its task a row a cycle; released tags are walked.
        m.d.comb += [
            wakeup.register.eq(enqueue.register),
            wakeup.waiter.eq(enqueue.held.tag),
            wakeup.producers.eq(enqueue.producers),
            wakeup.search_row.eq(tracker.search_row),
            enqueue.row_found.eq(wakeup.row_found),
            enqueue.ready.eq(wakeup.waiter_ready),
            wakeup.release.eq(released),
            wakeup.tracked.eq(tracker.valid),
            tracker.held.eq(wakeup.held | lists.held),
            decode.successors_full.eq(wakeup.successors_full),
        ]
        # The retarget rewrites the ranges of queued tasks in the tracker, where they are
        # kept, and of the task entering the enqueue stage, which searches with them.
        m.d.comb += [
            tracker.retarget.eq(copy_back.retarget),
            enqueue.retarget.eq(copy_back.retarget),
            tracker.retarget_tm.eq(copy_back.retarget_tm),
            enqueue.retarget_tm.eq(copy_back.retarget_tm),
            tracker.retarget_home.eq(copy_back.retarget_home),
            enqueue.retarget_home.eq(copy_back.retarget_home),
            tracker.retarget_producer.eq(copy_back.retarget_producer),
            enqueue.retarget_producer.eq(copy_back.retarget_producer),
            tracker.retarget_slot.eq(tlb.retarget_slot),
            enqueue.retarget_slot.eq(tlb.retarget_slot),
            tracker.alloc_reads_copy.eq(decode.enqueue.reads_copy),
            branch_unit.retarget.eq(copy_back.retarget),
            branch_unit.retarget_tm.eq(copy_back.retarget_tm),
            branch_unit.retarget_home.eq(copy_back.retarget_home),
        ]
        wiring.connect(m, decode.enqueue, enqueue.decoded)
        m.d.comb += [
            tracker.release.eq(released),
            tracker.ignoring.eq(broadcast),
            branch_unit.broadcast.eq(released),
            tlb.broadcast.eq(released),
            tlb.confirm.eq(branch_unit.confirm),
            tlb.drop.eq(branch_unit.squash),
            tlb.remove.eq(copy_back.remove),
            tlb.tm_idle.eq(~tracker.holds_tm & ~branch_unit.reads_tm),
        ]

        # ---- dispatch -------------------------------------------------------------------------
        connect_dispatch(m, lists, arbiter, asr)
        m.d.comb += arbiter.tasks.eq(tracker.entries)
        for reader, port in zip(arbiter.record_reads, tracker.record_reads):
            wiring.connect(m, reader, port)

        # ---- copy-back engine and TLB choices ----------------------------------------------
        self._copy_back(m, queued)

        # ---- front end: CPU port, task queues, decode, branch unit -------------------------
        retiring = self._front_end(m)

        # ---- trace ----------------------------------------------------------------------------
        trace = self.events
        m.d.comb += [
            trace.end.eq(retiring),
            trace.complete.eq(cdb.grant),
            trace.abort.eq(aborted),
            trace.branch_resolving.eq(branch_unit.resolving),
            trace.branch_taken.eq(branch_unit.taken),
            trace.squash.eq(branch_unit.squash),
            trace.squashed_tags.eq(squashed),
            trace.retarget.eq(copy_back.trace_retarget),
            trace.copyback.eq(copy_back.trace_copyback),
            trace.dispatch.eq(arbiter.trace),
            trace.fault.eq(decode.fault),
            trace.decode.valid.eq(decode.enqueue.valid),
            trace.decode.task.eq(decode.enqueue.task),
            trace.enqueue.valid.eq(enqueue.append),
            trace.enqueue.pid.eq(enqueue.held.pid),
            trace.enqueue.pc.eq(enqueue.held.pc),
            trace.enqueue.tag.eq(enqueue.held.tag),
            trace.enqueue.producers.eq(enqueue.producers_found),
        ]
        for flat, shell in enumerate(shells):
            held = trace.held[flat]
            m.d.comb += [held.pid.eq(shell.current.pid), held.pc.eq(shell.current.pc), held.tag.eq(shell.current.tag)]
        for slot, entry in enumerate(branch_unit.entries):
            view = trace.branches[slot]
            m.d.comb += [view.pid.eq(entry.pid), view.pc.eq(entry.pc), view.kind.eq(entry.kind)]
        return m

    def _copy_back(self, m: Module, queued):
        copy_back, tlb, tracker, decode = self.copy_back, self.tlb, self.tracker, self.decode
        m.d.comb += [
            copy_back.copy_valid.eq(tlb.copy_valid),
            copy_back.copy_index.eq(tlb.copy_index),
            copy_back.copy_entry.eq(tlb.copy_entry),
            copy_back.retarget_valid.eq(tlb.retarget_valid),
            copy_back.retarget_index.eq(tlb.retarget_index),
            copy_back.retarget_entry.eq(tlb.retarget_entry),
            tlb.retargetable_tags.eq(copy_back.retargetable_tags),
            tlb.tracker_valid.eq(tracker.valid),
            tlb.touches.eq(tracker.touches),
            copy_back.queued_tags.eq(queued | self.enqueue.queued_tags),
        ]
        for flat, (shell, view) in enumerate(zip(self.shells, copy_back.shells)):
            delivered = self.arbiter.deliver[flat]
            m.d.comb += [view.busy.eq(shell.busy), view.writeback_started.eq(shell.writeback_started),
                         view.tag.eq(shell.current.tag), view.delivered.eq(delivered.valid),
                         view.delivered_tag.eq(delivered.payload.tag)]
        wiring.connect(m, copy_back.tm_port, wiring.flipped(self.copyback_tm))
        wiring.connect(m, copy_back.home_port, wiring.flipped(self.copyback_home))

        stalled_on_tlb = Signal()
        m.d.sync += stalled_on_tlb.eq(Cat(*((reason == Stall.TLB_FULL) | (reason == Stall.TLB_CONFLICT)
                                            for reason in decode.stall)).any())
        m.d.comb += copy_back.wanted.eq(copy_wanted(stalled_on_tlb, decode.drained, self.tlb, len(self.queues)))

    def _front_end(self, m: Module) -> Signal:
        config, cpu = self._config, self.cpu
        decode, enqueue, tracker, tlb, branch_unit = self.decode, self.enqueue, self.tracker, self.tlb, self.branch_unit
        processes = config.hts.processes
        active = Signal(processes)
        retiring = Signal(processes)
        lengths = Signal(data.ArrayLayout(fetch_pc_width(config), processes))
        for pid, queue in enumerate(self.queues):
            m.d.comb += retiring[pid].eq(ends(active, decode.drained, tracker, tlb, pid))
            with m.If(cpu.length.valid & (cpu.length.pid == pid)):
                m.d.sync += lengths[pid].eq(cpu.length.words)
            redirect = branch_unit.redirect[pid]
            m.d.comb += [
                queue.load_en.eq(cpu.load.valid & (cpu.load.pid == pid)),
                queue.load_addr.eq(cpu.load.addr),
                queue.load_data.eq(cpu.load.word),
                queue.program_len.eq(lengths[pid]),
                queue.start.eq(cpu.start[pid]),
                queue.pop.eq(decode.pop[pid]),
                # Never both: a process does not decode in the cycle its branch resolves.
                queue.redirect.eq(decode.redirect[pid] | redirect),
                queue.redirect_pc.eq(Mux(redirect, branch_unit.redirect_pc[pid], decode.redirect_pc[pid])),
                *take_queue(decode, pid, queue),
            ]
        m.d.sync += active.eq(active & ~retiring | cpu.start)
        # A new tag touches no TLB home, nor after a retarget in its cycle moves its reads
        # home (the retargeted entry, which leaves, aside): hdl/memory_tracker.py relies on it.
        alloc, copy_back = tracker.alloc_entry, self.copy_back
        reads_moved = copy_back.retarget & (alloc.reads == copy_back.retarget_tm)
        # The task decoded reads the retargeted copy exactly when its TLB slot is the one
        # retargeted (hdl/primitives.py ``retargeted_ranges`` relies on it).
        by_slot = copy_back.retarget & (tracker.alloc_reads_copy & tlb.retarget_slot).any()
        m.d.sync += Assert(~tracker.alloc | (by_slot == reads_moved),
                           "a decoded task's copy slot disagrees with its reads")
        new_touches = Cat(*(valid & (overlaps(alloc.reads, entry.home) | overlaps(alloc.writes, entry.home)
                                     | reads_moved & overlaps(copy_back.retarget_home, entry.home)
                                     & (entry.tm_base != copy_back.retarget_tm.base))
                            for valid, entry in zip(tlb.valid, tlb.entries)))
        m.d.sync += Assert(~tracker.alloc | ~new_touches.any(), "a new tag touches a TLB home")
        # The retarget, chosen a cycle before its offer, is still touched by its producer
        # alone: no access to a held home arrives in between (hdl/tlb.py relies on it).
        offered_to = Cat(*(row.bit_select(tlb.retarget_index, 1) for row in tracker.touches)) & tracker.valid
        others = offered_to & ~(1 << tlb.retarget_entry.producer)
        m.d.sync += Assert(~tlb.retarget_valid | ~others.any(), "a retargeted home is touched by another task")
        m.d.comb += [
            cpu.running.eq(active),
            cpu.ended.eq(retiring),
            cpu.fault.eq(decode.fault),
            decode.start.eq(cpu.start),
            decode.set_window.eq(cpu.window),
            # An ending process is done in its end cycle already, as in the model.
            decode.done.eq(~active | retiring),
            decode.blocked.eq(branch_unit.blocked),
            decode.pending.eq(branch_unit.pending),
            decode.restore.eq(branch_unit.restore),
            decode.confirm.eq(branch_unit.confirm),
            decode.freed_ids.eq(branch_unit.freed_ids),
            branch_unit.alloc.eq(decode.branch),
            enqueue.depends.eq(tracker.depends),
            branch_unit.writers.eq(tracker.depends),
            decode.tracker_has_free.eq(tracker.has_free),
            decode.tracker_free_tag.eq(tracker.free_tag),
            tracker.alloc.eq(decode.tracker_alloc),
            tracker.alloc_entry.eq(decode.tracker_alloc_entry),
            # TLB: decode's look-ups and allocation.
            tlb.lookup_pid.eq(decode.tlb_pid),
            tlb.lookup_checks.eq(decode.tlb_checks),
            tlb.lookahead.eq(decode.tlb_lookahead),
            tlb.read_region.eq(decode.tlb_read_region),
            tlb.write_region.eq(decode.tlb_write_region),
            tlb.branch_block.eq(decode.tlb_branch_block),
            tlb.alloc_blocks.eq(decode.tlb_alloc_blocks),
            decode.tlb_read_hit.eq(tlb.read_hit),
            decode.tlb_read_copy.eq(tlb.read_copy),
            decode.tlb_read_tm_base.eq(tlb.read_tm_base),
            decode.tlb_write_hit.eq(tlb.write_hit),
            decode.tlb_has_room.eq(tlb.has_room),
            decode.tlb_alloc_tm_base.eq(tlb.alloc_tm_base),
            decode.tlb_branch_phys.eq(tlb.branch_phys),
            tlb.alloc.eq(decode.tlb_alloc),
            tlb.alloc_entry.eq(decode.tlb_alloc_entry),
            # Tracker: which TLB homes its entries touch, kept as TLB entries arrive.
            # A new tag touches none there is (hdl/memory_tracker.py relies on it).
            tracker.tlb_alloc.eq(decode.tlb_alloc),
            tracker.tlb_alloc_slot.eq(tlb.alloc_slot),
            *(home.eq(entry.home) for home, entry in zip(tracker.tlb_homes, tlb.entries)),
            # Branch reads go straight to the memory port.
            self.branch_read.valid.eq(branch_unit.read_valid),
            self.branch_read.block.eq(branch_unit.read_block),
            branch_unit.read_data.eq(self.branch_read.data),
        ]
        self._tracker_search(m)
        return retiring

    def _tracker_search(self, m: Module):
        """The tracker's one search, a row a cycle: the enqueue stage's task, else the branch
        unit's memory branch."""
        tracker, enqueue, branch_unit, decode, tlb = self.tracker, self.enqueue, self.branch_unit, self.decode, self.tlb
        m.d.sync += Assert(~(decode.enqueue.valid & decode.branch.valid),
                           "a task and a memory branch decoded together would search the tracker together")
        # The home means something only when ``speculative``: no reset (record_register). Both
        # are held while the search of the task that made it goes on, unless a squash ends it.
        speculative, home = Signal(), Signal.like(decode.tlb_alloc_entry.home, reset_less=True)
        going_on = enqueue.searching_next & ~enqueue.squashed_tags.any()
        m.d.sync += [speculative.eq(decode.tlb_alloc | speculative & going_on),
                     home.eq(Mux(going_on, home, decode.tlb_alloc_entry.home))]
        m.d.comb += [tracker.query_home.eq(speculative), tracker.home_search_continues.eq(going_on),
                     tlb.home_search_continues.eq(going_on),
                     # Searches never overlap: one row counter, restarted by each hand-over.
                     tracker.search_start.eq(decode.tracker_alloc
                                             | decode.branch.valid & (decode.branch.kind != BranchKind.RR)),
                     enqueue.search_last.eq(tracker.search_last), branch_unit.search_last.eq(tracker.search_last),
                     decode.scan_busy.eq(enqueue.searching_next | branch_unit.searching_next)]
        touched = Cat(*(valid & (overlaps(enqueue.query_writes, entry.reads) | overlaps(enqueue.query_writes, entry.writes))
                        for valid, entry in zip(tracker.valid, tracker.entries)))
        m.d.sync += Assert(~speculative | enqueue.occupied & ((touched & ~enqueue.queued_tags) == 0),
                           "a new TM region is touched by a task in flight")
        with m.If(enqueue.occupied):
            m.d.comb += [tracker.query_reads.eq(enqueue.query_reads),
                         tracker.query_writes.eq(Mux(speculative, home, enqueue.query_writes))]
        with m.Else():
            m.d.comb += [tracker.query_reads.base.eq(branch_unit.search_block),
                         tracker.query_reads.blocks.eq(mutable("tracker_branch_writers_ignored", 1, 0))]
