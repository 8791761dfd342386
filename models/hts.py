"""The cycle-level HTS model: every block of docs/microarchitecture.md, stepped cycle by cycle.

This is the golden model of the RTL. Each cycle runs the stages back to front
(completion and CDB, branch unit, copy-back, dispatch, enqueue, decode, fetch), so
that an item moves at most one stage per cycle. Every stage decides on the occupancy its
structures had at the start of the cycle. What frees a structure (a CDB broadcast, a
squash, a finished copy-back) lands at the end of the cycle. The tracker searches
(enqueue's for a task, the branch unit's for a memory branch) alone see the tags being
broadcast, so a search made in the cycle of its producer's broadcast does not wait for
it. Cycles in
which nothing can change are skipped in one step, so an accelerator latency of
thousands of cycles costs no Python time.

The stages with logic of their own are classes beside their RTL blocks (``Decode``,
``Dispatch``, ``BranchUnit``, ``CopyBackEngine``): each is handed the structures it reads
and returns what it did. This module composes them as ``hdl/hts.py`` wires the blocks:
it traces their effects and applies the end-of-cycle ones to every structure they reach.

The same model is the software-runtime baseline (``scheduler="runtime"``): the CPU does
decode and dispatch, paying memory accesses to the scheduler's structures per task, and
learns of each completion an interrupt latency late.
"""

from dataclasses import dataclass, field
from typing import Callable

from hts.assembler import Program
from hts.base.config import DEFAULT_STEP_LIMIT, SystemConfig

from .accelerator import AcceleratorFunctions
from .asr import AcceleratorStatus, Running
from .branch_unit import OUTCOME_DELAY, BranchUnit, PendingBranch
from .cdb import CommonDataBus
from .control import Fault
from .copy_back import CopyBackEngine, retarget_task, retargeted, transfer_cycles
from .decode import Decode, Decoded, ProcessContext, runtime_accesses
from .dispatch import START_DELAY, Dispatch, squash_queued
from .enqueue import EnqueueStage
from .executor import check_programs
from .memory import Memory
from .memory_tracker import MemoryTracker, overlaps
from .observation import CycleView, Occupancy
from .ready_lists import ReadyLists
from .task import DecodedTask
from .timing import DeviceTiming, TableLatency
from .tlb import TaskLookupBuffer, TLBEntry
from .trace import Trace
from .wakeup import WakeUp

__all__ = ["SCHEDULERS", "RunResult", "HTSModel", "runtime_accesses", "transfer_cycles"]

SCHEDULERS = ("hts", "hts-nospec", "runtime")

# Stall reasons that ask the copy-back engine to make room in the TLB or TM.
TLB_STALLS = ("tlb_full", "tlb_conflict")


@dataclass
class RunResult:
    scheduler: str
    cycles: int
    tasks: int
    memory: Memory
    trace: Trace
    utilization: dict[str, float]
    stalls: dict[str, int]
    registers: list[tuple[int, ...]] = field(default_factory=list)
    simulated_cycles: int = 0          # cycles actually stepped (the rest were skipped)
    # (pid, pc, data digest) of every task whose result counts, for comparison with the
    # in-order executor's tasks (tasks completed and later squashed are left out).
    committed: list[tuple[int, int, str]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)    # processes stopped at an instruction


class HTSModel:
    def __init__(self, config: SystemConfig, programs: list[Program], memory: Memory,
                 timing: DeviceTiming | None = None, scheduler: str = "hts",
                 observer: Callable[[CycleView], None] | None = None):
        """``observer``, if given, is called with a :class:`CycleView` of every simulated cycle."""
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}")
        check_programs(programs, config)
        self.config, self.memory, self.scheduler = config, memory, scheduler
        self.timing = timing or TableLatency()
        self.observer = observer
        self.runtime = scheduler == "runtime"
        self.functions = AcceleratorFunctions(config)
        self.classes = list(config.accelerators)
        self.programs = list(programs)
        self.processes = [ProcessContext.create(pid, program, config) for pid, program in enumerate(programs)]
        # The software baseline keeps its tracker in memory: its cost is ``runtime_accesses``.
        self.tracker = MemoryTracker(config.hts.tracker_entries, None if self.runtime else config.hts.tracker_lanes)
        self.enqueue = EnqueueStage()
        # The software baseline wakes a task as its last producer is released, walking nothing.
        self.wakeup = None if self.runtime else WakeUp(config.hts.tracker_entries, config.hts.successor_slots)
        self.decode = Decode(config, programs, DEFAULT_STEP_LIMIT, self.runtime,
                             speculate=scheduler == "hts" and config.hts.speculation)
        # Enqueued tasks not dispatched yet, oldest first; the ready ones are also listed.
        self.queued: list[DecodedTask] = []
        self.ready_lists = ReadyLists(len(self.classes), config.hts.tracker_entries)
        self.dispatch = Dispatch(config.hts.dispatch_width, self.classes, self.timing,
                                 config.timing.interrupt_latency if self.runtime else 0,
                                 start_delay=0 if self.runtime else START_DELAY)
        self.asr = AcceleratorStatus([acc.count for acc in self.classes])
        self.cdb = CommonDataBus(config.hts.cdb_width)
        self.tlb = TaskLookupBuffer(config.hts.tlb_entries, config.hts.tm_blocks, config.memory.blocks,
                                    self.tracker.rows)
        self.branch_unit = BranchUnit(config.timing.memory_latency)
        self.copy_back = CopyBackEngine(config)
        self.trace = Trace()
        self.cycle = 0
        self.simulated = 0
        self.in_progress: list[Running] = []
        self.busy_cycles = [0] * len(self.classes)
        self.completed: list[DecodedTask] = []
        self.completed_speculative: list[DecodedTask] = []   # completed, still under a branch
        self._last_stalls: dict[int, str] = {}
        self._drained: list[bool] = []         # per process, at the start of the cycle
        # End-of-cycle effects gathered during the cycle.
        self._released_tags: set[int] = set()
        self._released_instances: list[tuple[int, int]] = []
        self._confirmed: list[int] = []          # speculation IDs predicted right
        self._freed_spec_ids: list[int] = []     # IDs of squashed branches
        self._dropped_spec_bits = 0              # TLB entries under these bits go
        self._copied_home = None                 # TLB entry whose copy-back finished
        self._retargeted = None                  # TLB entry whose producer now writes home
        self._search_corners: set[str] = set()   # of this cycle, for the observer
        self._wakeup_corners: set[str] = set()
        self._list_corners: set[str] = set()
        self._enqueued_now: DecodedTask | None = None
        self._seq_of_tag: dict[int, int] = {}
        self._registration: tuple[int | None, set[int]] = (None, set())   # enqueue's row: waiter, producers

    # ---- completion and the CDB ---------------------------------------------------------

    def _complete(self, t: int, retarget: TLBEntry | None) -> list[Running]:
        """Finishing instances take CDB tickets; the arbiter grants the oldest. A producer
        retargeted in this cycle writes home."""
        finished = [run for run in self.in_progress if run.finishes == t]
        for run in finished:
            self.in_progress.remove(run)
        self.cdb.take_tickets(finished)
        granted = self.cdb.grant()
        for run in granted:
            task = run.task
            if retarget is not None and task.tag == retarget.producer:
                retarget_task(task, retarget)
            task.data = self.functions.run(self.memory, task.accel_id, *task.reads, *task.writes, task.metadata)
            self.busy_cycles[task.class_index] += run.computing
            self.completed.append(task)
            if task.mask:
                self.completed_speculative.append(task)
            self.trace.emit(t, "complete", pid=task.pid, pc=task.pc, tag=task.tag,
                            accel=self.classes[task.class_index].name, instance=run.instance)
        return granted

    # ---- branch unit ----------------------------------------------------------------------

    def _resolve_branches(self, t: int) -> bool:
        """The branch unit squashes and resolves; the squashes reach every queue now, the
        confirmed and freed IDs at the end of the cycle."""
        # Coverage's corners are looked for only for an observer: the unobserved run stays lean.
        searching = [branch for branch in self.branch_unit.searching(self.processes)
                     if branch.writer_search.row] if self.observer is not None else []
        outcome = self.branch_unit.resolve(t, self.processes, self.memory)
        if any(branch not in self.processes[branch.pid].branches for branch in searching):
            self._search_corners.add("squashed")
        for branch in outcome.squashed:
            self._squash(t, branch)
        for branch, taken in outcome.resolved:
            self.trace.emit(t, "branch", pid=branch.pid, pc=branch.pc, kind=branch.kind, taken=taken,
                            spec_id=branch.spec_id)
        self._confirmed += outcome.confirmed
        self._freed_spec_ids += outcome.freed
        return outcome.progress

    def _confirm(self, spec_id: int):
        """A speculated branch went the predicted way: its ID leaves every mask (end of cycle)."""
        clear = ~(1 << spec_id)
        for task in [*self._queued_and_running(), *self.completed_speculative]:
            task.mask &= clear
        self.completed_speculative = [task for task in self.completed_speculative if task.mask]
        for entry in self.tlb.entries:
            entry.mask &= clear
        self.branch_unit.confirm(spec_id, self.processes)

    def _squash(self, t: int, branch: PendingBranch):
        """A speculated branch was taken (last cycle): undo every task decoded under it."""
        bit = 1 << branch.spec_id
        for task in self.completed_speculative:
            task.squashed = bool(task.mask & bit)
        self.completed_speculative = [task for task in self.completed_speculative if not task.squashed]
        squashed = squash_queued(self.queued, bit)
        if self.enqueue.task is not None and self.enqueue.task.mask & bit:
            if self.enqueue.search.row:
                self._search_corners.add("squashed")
            squashed.append(self.enqueue.remove())
        self._released_tags.update(task.tag for task in squashed)
        self._released_tags.update(self.cdb.squash_granted(bit))
        aborted = [run for run in self.in_progress + list(self.cdb.tickets) if run.task.mask & bit]
        for run in aborted:
            (self.in_progress if run in self.in_progress else self.cdb.tickets).remove(run)
            self._released_tags.add(run.task.tag)
            self._released_instances.append((run.task.class_index, run.instance))
            self.trace.emit(t, "abort", pid=run.task.pid, pc=run.task.pc, tag=run.task.tag,
                            accel=self.classes[run.task.class_index].name, instance=run.instance)
        self._dropped_spec_bits |= bit
        self.trace.emit(t, "squash", pid=branch.pid, pc=branch.pc, spec_id=branch.spec_id,
                        tags=sorted(task.tag for task in squashed))

    # ---- copy-back engine -----------------------------------------------------------------

    def _copy_back(self, t: int, retarget: TLBEntry | None) -> bool:
        """The engine reads the stall reasons and drain flags registered at the start of the cycle."""
        wanted = any(reason in TLB_STALLS for reason in self._last_stalls.values()) or any(
            drained and any(e.pid == pid for e in self.tlb.entries) for pid, drained in enumerate(self._drained))
        done = self.copy_back.step(t, self.tlb, self.tracker, self.memory, self._waiting(), self.in_progress, wanted,
                                   retarget)
        if done.retargeted is not None:
            entry = self._retargeted = done.retargeted
            self.trace.emit(t, "retarget", pid=entry.pid, tag=entry.producer, home=list(entry.home), tm=entry.tm_base)
        if done.started is not None:
            entry = done.started.entry
            self.trace.emit(t, "copyback", pid=entry.pid, home=list(entry.home), tm=entry.tm_base,
                            cycles=done.started.finishes - t)
        self._copied_home = done.finished
        return done.progress

    def _apply_retarget(self, entry):
        """The producer writes home; readers remapped to its TM copy read home (end of cycle)."""
        tm = (entry.tm_base, entry.home[1])
        for task in self._queued_and_running():
            retarget_task(task, entry)
        self.tracker.retarget(tm, entry.home)
        self.branch_unit.retarget(self.processes, tm, entry.home[0])
        self.tlb.entries.remove(entry)

    # ---- dispatch -------------------------------------------------------------------------

    def _dispatch(self, t: int) -> bool:
        """The grants; each event shows the regions the task starts with, this cycle's
        retarget applied (it lands at the end of the cycle, before the start). Returns
        whether a list changed: a grant, or a dead head dropped (no cycle to skip)."""
        dropped = self.ready_lists.dropped
        started = self.dispatch.dispatch(t, self.ready_lists, self.asr, self.programs)
        dropping = self.ready_lists.dropped != dropped
        if dropping:
            self._list_corners.add("dead_head")
        for run in started:
            task = run.task
            self.queued.remove(task)
            self._check_producers_released(task)
            self.in_progress.append(run)
            self.trace.emit(t, "dispatch", pid=task.pid, pc=task.pc, tag=task.tag,
                            accel=self.classes[task.class_index].name, instance=run.instance,
                            reads=list(retargeted(task.reads, self._retargeted)),
                            writes=list(retargeted(task.writes, self._retargeted)), mask=task.mask)
        return bool(started) or dropping

    def _check_producers_released(self, task: DecodedTask):
        """The wake-up's contract: a task dispatches only once every older task it overlaps
        (RAW, WAR, WAW) has left the tracker. Memory alone would not show a missed
        dependence: the model computes a task's result as it completes."""
        for tag, entry in enumerate(self.tracker.entries):
            if entry is None or self._seq_of_tag[tag] >= task.seq:
                continue
            assert not (overlaps(task.reads, entry.writes) or overlaps(task.writes, entry.reads)
                        or overlaps(task.writes, entry.writes)), \
                f"task {task.pid}:{task.pc} (tag {task.tag}) dispatched before its producer, tag {tag}"

    def _enqueue(self, t: int, broadcast: frozenset[int]) -> bool:
        """Whether the enqueue stage searched (a row a cycle) or its task left it, queued."""
        searching = self.enqueue.task is not None
        task = self.enqueue.step(self.tracker, broadcast)
        # Decode may hand the stage its next task in this cycle: take the row's finds now.
        self._registration = (self.enqueue.search.tag, self.enqueue.search.row_found)
        if task is None:
            return searching
        self.queued.append(task)
        self._enqueued_now = task
        self.trace.emit(t, "enqueue", pid=task.pid, pc=task.pc, tag=task.tag, producers=self.enqueue.registered)
        return True

    # ---- decode ---------------------------------------------------------------------------

    def _decode(self, t: int, room: dict) -> Decoded:
        decoded = self.decode.step(t, self.processes, room, self.tracker, self.tlb, self.enqueue, self.branch_unit)
        if decoded.fault is not None:
            fault = decoded.fault
            self.trace.emit(t, "fault", pid=fault.pid, pc=fault.pc, cause=fault.cause.name)
        task = decoded.task
        if task is not None:
            self._seq_of_tag[task.tag] = task.seq
            self.trace.emit(t, "decode", pid=task.pid, pc=task.pc, tag=task.tag, task_id=task.task_id,
                            accel=self.classes[task.class_index].name, reads=list(task.reads),
                            writes=list(task.writes), mask=task.mask)
        return decoded

    # ---- end of cycle ---------------------------------------------------------------------

    def _end_of_cycle(self, t: int):
        tags = self._released_tags
        for entry in self.tlb.entries:
            if entry.producer in tags and not entry.producer_done:
                entry.producer_done = True
        for tag in tags:
            self.tracker.free(tag)
        for class_index, instance in self._released_instances:
            self.asr.release(class_index, instance)
        self._wake(tags)
        if tags:
            if self.observer is not None and any(
                    search.found & tags for search in
                    [self.enqueue.search, *(b.writer_search for b in self.branch_unit.searching(self.processes))]):
                self._search_corners.add("released")
            self.enqueue.search.release(tags)
            self.branch_unit.wake(t, self.processes, tags)
        self._released_tags, self._released_instances = set(), []
        for spec_id in self._confirmed:
            self._confirm(spec_id)
        self.decode.free(self._confirmed + self._freed_spec_ids)
        self._confirmed, self._freed_spec_ids = [], []
        if self._dropped_spec_bits:
            self.tlb.entries = [e for e in self.tlb.entries if not e.mask & self._dropped_spec_bits]
            self._dropped_spec_bits = 0
        if self._retargeted is not None:
            self._apply_retarget(self._retargeted)
            self._retargeted = None
        if self._copied_home is not None:
            self.tlb.entries.remove(self._copied_home)
            self.copy_back.finish()
            self._copied_home = None
        if not self.tlb.entries and not self._tm_in_use():
            self.tlb.tm_next = 0

    def _wake(self, released: set[int]):
        """The enqueue stage's registration and the walker's step (or, for the software
        baseline, every waiter of a released tag); the tasks that become ready."""
        enqueued, self._enqueued_now = self._enqueued_now, None
        if self.wakeup is None:
            woken = [task for task in self.queued if task.waits_for & released]
            for task in woken:
                task.waits_for -= released
            woken = [task for task in woken if not task.waits_for and task is not enqueued]
            if enqueued is not None:
                enqueued.ready = not enqueued.waits_for
        else:
            waiter, producers = self._registration
            if self.observer is not None:
                self._observe_walker()
            tag = self.wakeup.end_of_cycle(waiter if producers else None, producers, released)
            woken = [] if tag is None else [task for task in self.queued if task.tag == tag and task is not enqueued]
            if enqueued is not None:
                enqueued.ready = not self.wakeup.waits(enqueued.tag)
        for task in woken:
            task.ready = True
            self.ready_lists.append(task)
        if enqueued is not None and enqueued.ready:
            self.ready_lists.append(enqueued)
            if any(task.class_index == enqueued.class_index for task in woken):
                self._list_corners.add("two_joins")
        if self.observer is not None and any(map(self.ready_lists.wraps, range(len(self.classes)))):
            self._list_corners.add("wrap")
        self.tracker.held = self.ready_lists.held() | (set() if self.wakeup is None else self.wakeup.held())

    def _observe_walker(self):
        """The wake-up's corners, on its state at the start of the cycle."""
        wakeup = self.wakeup
        if len(wakeup.to_walk) + (wakeup.walking is not None) > 1:
            self._wakeup_corners.add("queued")
        reading = wakeup.reading
        if reading is not None and wakeup.pending[reading] == 1 and reading not in (t.tag for t in self._waiting()):
            self._wakeup_corners.add("squashed_waiter")

    def _tm_in_use(self) -> bool:
        home = self.config.memory.blocks
        in_tm = [region for entry in self.tracker.entries if entry is not None
                 for region in (entry.reads, entry.writes) if region[1] and region[0] >= home]
        return bool(in_tm) or self.branch_unit.reads_tm(self.processes, home)

    def _retire_processes(self, t: int) -> bool:
        progress = False
        for proc in self.processes:
            if (proc.done_at is None and proc.drained and not self.tracker.holds_pid(proc.pid)
                    and not any(entry.pid == proc.pid for entry in self.tlb.entries)):
                proc.done_at = t
                self.trace.emit(t, "end", pid=proc.pid)
                progress = True
        return progress

    # ---- the cycle ------------------------------------------------------------------------

    def _enqueued(self):
        if self.enqueue.task is not None:
            yield self.enqueue.task

    def _waiting(self) -> list[DecodedTask]:
        """The tasks not dispatched yet: in the enqueue stage, and queued."""
        return [*self._enqueued(), *self.queued]

    def _queued_and_running(self):
        yield from self._enqueued()
        yield from self.queued
        for run in self.in_progress + list(self.cdb.tickets):
            yield run.task

    def _room_at_start(self) -> dict:
        return {
            "queue": [int(proc.queue.head() is not None) for proc in self.processes],
            "fetch": [proc.queue.occupancy for proc in self.processes],
            "tracker": self.tracker.allocatable(),
            "successors_full": self.wakeup is not None and self.wakeup.successors_full(
                tag for tag, entry in enumerate(self.tracker.entries) if entry is not None),
            # A search under way keeps the tracker's comparators in the next cycle too.
            "scan_busy": (self.enqueue.searching_next_cycle(self.tracker)
                          or self.branch_unit.searching_next_cycle(self.processes, self.tracker)),
        }

    def _occupancy(self) -> Occupancy:
        return Occupancy(
            tracker=self.tracker.occupancy(), tracker_capacity=len(self.tracker.entries),
            tlb=len(self.tlb.entries), tlb_capacity=self.tlb.capacity,
            tm_used=self.tlb.tm_next, tm_capacity=self.tlb.tm_blocks)

    def step(self) -> bool:
        """Simulate one cycle; whether anything changed."""
        t = self.cycle
        if self.observer is not None:
            start, copying = self._occupancy(), self.copy_back.under_way is not None
        # Retirement and the copy-back engine read the state registered at the start of the cycle.
        progress = self._retire_processes(t) | (self.wakeup is not None and self.wakeup.busy())
        self._drained = [proc.drained for proc in self.processes]
        room = self._room_at_start()
        broadcast = self.cdb.broadcast_tags
        self._released_tags |= broadcast
        self._released_instances += [(run.task.class_index, run.instance) for run in self.cdb.broadcasting]
        retarget = self.copy_back.retarget(t, self.tlb, self.tracker, self._waiting(), self.in_progress)
        granted = self._complete(t, retarget)
        progress |= bool(self.cdb.broadcasting) | bool(granted) | self._resolve_branches(t)
        if self.branch_unit.search(t, self.processes, self.tracker, broadcast):
            progress = True
            if self.tracker.rows > 1:
                self._search_corners.add("branch")
        progress |= self._copy_back(t, retarget)
        progress |= self._dispatch(t)
        progress |= self._enqueue(t, broadcast)
        decoded = self._decode(t, room)
        stalls = decoded.stalls
        progress |= decoded.instruction is not None
        for proc in self.processes:
            progress |= proc.queue.advance() | proc.queue.fetch(room["fetch"][proc.pid])
        self.decode.settle(t, self.processes)
        self.cdb.advance()
        self._end_of_cycle(t)
        if self.observer is not None:
            self.observer(CycleView(t, start, copying, stalls, decoded.instruction, frozenset(self._search_corners),
                                    frozenset(self._wakeup_corners), frozenset(self._list_corners)))
        self._search_corners, self._wakeup_corners, self._list_corners = set(), set(), set()
        # The stall reasons are registered: the copy-back engine acts on last cycle's, so a
        # change of reason is a change of state even when nothing else moved.
        progress |= stalls != self._last_stalls
        self._last_stalls = stalls
        return progress

    def _next_event(self) -> int | None:
        times = [run.finishes for run in self.in_progress]
        times += [time for p in self.processes for b in p.branches if b.resolves_at is not None
                  for time in (b.resolves_at - OUTCOME_DELAY, b.resolves_at)]
        times += [p.resume_at for p in self.processes]
        times.append(self.decode.free_at)
        if self.copy_back.under_way is not None:
            times.append(self.copy_back.under_way.finishes)
        later = [time for time in times if time > self.cycle]
        return min(later) if later else None

    def run(self, max_steps: int = DEFAULT_STEP_LIMIT) -> RunResult:
        """Run to the end; an error once a process has decoded more than ``max_steps`` instructions."""
        for counter in self.decode.steps:
            counter.limit = max_steps
        while any(proc.done_at is None for proc in self.processes):
            progress = self.step()
            self.simulated += 1
            if progress or self.cdb.tickets:
                advance = 1
            else:
                upcoming = self._next_event()
                if upcoming is None:
                    raise AssertionError(f"model deadlock at cycle {self.cycle}: nothing in flight can "
                                         "make progress (a bug in the model)")
                advance = upcoming - self.cycle
            for pid, reason in self._last_stalls.items():
                self.processes[pid].count_stall(reason, advance)
            self.cycle += advance
        return self._result()

    def _result(self) -> RunResult:
        cycles = max(proc.done_at for proc in self.processes) + 1
        utilization = {acc.name: self.busy_cycles[i] / (acc.count * cycles) for i, acc in enumerate(self.classes)}
        stalls: dict[str, int] = {}
        for proc in self.processes:
            for reason, count in proc.stall.items():
                stalls[reason] = stalls.get(reason, 0) + count
        committed = [(task.pid, task.pc, task.data) for task in self.completed if not task.squashed]
        return RunResult(self.scheduler, cycles, len(committed), self.memory, self.trace, utilization,
                         stalls, [proc.gprs.snapshot() for proc in self.processes], self.simulated, committed,
                         sorted((proc.fault for proc in self.processes if proc.fault), key=lambda f: f.cycle))
