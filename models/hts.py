"""The cycle-level HTS model: every block of docs/microarchitecture.md, stepped cycle by cycle.

This is the golden model of the RTL. Each cycle runs the stages back to front
(completion and CDB, branch unit, copy-back, dispatch, issue, enqueue, decode, fetch), so
that an item moves at most one stage per cycle. Every stage decides on the occupancy its
structures had at the start of the cycle. What frees a structure (a CDB broadcast, a
squash, a finished copy-back) lands at the end of the cycle. The tracker searches
(enqueue's for a task, the branch unit's for a memory branch) alone see the tags being
broadcast, so a search made in the cycle of its producer's broadcast does not wait for
it. Cycles in
which nothing can change are skipped in one step, so an accelerator latency of
thousands of cycles costs no Python time.

The same model is the software-runtime baseline (``scheduler="runtime"``): the CPU does
decode and dispatch, paying memory accesses to the scheduler's structures per task, and
learns of each completion an interrupt latency late.
"""

from dataclasses import dataclass, field
from typing import Callable

from hts.assembler import Program
from hts.config import DEFAULT_STEP_LIMIT, SystemConfig
from hts.isa import Opcode, branch_taken

from .accelerator import AcceleratorFunctions
from .asr import AcceleratorStatus, Running
from .branch_unit import Checkpoint, PendingBranch
from .cdb import CommonDataBus
from .control import Fault, access_fault, begin_loop, end_loop, execute_register_op, task_regions
from .decode import ProcessContext
from .enqueue import EnqueueStage
from .executor import StepCounter, check_programs
from .memory import Memory
from .memory_tracker import MemoryTracker, Region, TrackerEntry
from .observation import CycleView, DecodedInstruction, Occupancy
from .reservation_station import ReservationStation
from .timing import DeviceTiming, TableLatency
from .tlb import CopyBack, TaskLookupBuffer
from .trace import Trace
from .window import DecodedTask, DispatchWindow

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


@dataclass(frozen=True)
class _TaskPlan:
    """What decoding a task would do, worked out before the decoder commits to it."""
    home_reads: Region
    home_writes: Region
    reads: Region                      # physical: TM when remapped
    speculative_output: bool           # the output goes to a new TM region


def runtime_accesses(tracker_occupancy: int) -> int:
    """Memory accesses a software runtime makes to schedule one task.

    It reads the task (1), scans the tracker entries in use for dependences (one each),
    writes its own tracker entry (1) and reservation-station entry (1), and at dispatch
    reads and writes the accelerator status (2).
    """
    return 5 + tracker_occupancy


def transfer_cycles(config: SystemConfig, blocks: int) -> int:
    """Cycles to move ``blocks`` over a memory port (copy-back, an accelerator's write-back)."""
    words = blocks * config.memory.block_words
    return max(1, -(-words // config.hts.copyback_words_per_cycle))


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
        self.speculate = scheduler == "hts" and config.hts.speculation
        self.functions = AcceleratorFunctions(config)
        self.classes = list(config.accelerators)
        self.class_of_id = {acc.id: index for index, acc in enumerate(self.classes)}
        self.processes = [ProcessContext.create(pid, program, config) for pid, program in enumerate(programs)]
        # Instructions decoded per process (wrong-path ones too): a runaway loop stops.
        self.steps = [StepCounter(pid, program, DEFAULT_STEP_LIMIT) for pid, program in enumerate(programs)]
        self.tracker = MemoryTracker(config.hts.tracker_entries)
        self.enqueue = EnqueueStage()
        self.window = DispatchWindow(config.hts.window)
        self.stations = [ReservationStation(config.hts.rs_entries) for _ in self.classes]
        self.asr = AcceleratorStatus([acc.count for acc in self.classes])
        self.cdb = CommonDataBus(config.hts.cdb_width)
        self.tlb = TaskLookupBuffer(config.hts.tlb_entries, config.hts.tm_blocks, config.memory.blocks)
        self.free_spec_ids = list(range(config.hts.spec_ids))
        self.copyback: CopyBack | None = None
        self.trace = Trace()
        self.cycle = 0
        self.simulated = 0
        self.seq = 0
        self.round_robin = 0
        self.in_progress: list[Running] = []
        self.decoder_free_at = 0           # runtime baseline: the CPU is busy scheduling until then
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

    # ---- completion and the CDB ---------------------------------------------------------

    def _complete(self, t: int) -> list[Running]:
        """Finishing instances take CDB tickets; the arbiter grants the oldest."""
        finished = [run for run in self.in_progress if run.finishes == t]
        for run in finished:
            self.in_progress.remove(run)
        self.cdb.take_tickets(finished)
        granted = self.cdb.grant()
        for run in granted:
            task = run.task
            task.data = self.functions.run(self.memory, task.accel_id, *task.reads, *task.writes, task.metadata)
            self.busy_cycles[task.class_index] += run.computing
            self.completed.append(task)
            if task.mask:
                self.completed_speculative.append(task)
            self._released_tags.add(task.tag)
            self._released_instances.append((task.class_index, run.instance))
            self.trace.emit(t, "complete", pid=task.pid, pc=task.pc, tag=task.tag,
                            accel=self.classes[task.class_index].name, instance=run.instance)
        return granted

    # ---- branch unit ----------------------------------------------------------------------

    def _resolve_branches(self, t: int) -> bool:
        """Last cycle's mispredictions squash; then the branches due now resolve.

        A misprediction takes effect the cycle after its resolution (the squash is
        registered): until then its process decodes on, and what it decodes carries the
        mispredicted ID, so the squash removes it with the rest. A younger branch of the
        process due in the cycle of the misprediction does not resolve: the squash removes it.
        """
        progress = False
        for proc in self.processes:
            if proc.mispredicted is not None:
                self._squash(t, proc, proc.mispredicted)
                proc.mispredicted = None
                progress = True
        for proc in self.processes:
            doomed = 0          # IDs mispredicted this cycle
            for branch in [b for b in proc.branches if b.resolves_at == t]:
                if branch not in proc.branches or branch.mask & doomed:     # under an older misprediction
                    continue
                word = branch.word
                x = branch.x if branch.kind == "RR" else self.memory.first_word(branch.block)
                taken = branch_taken(word.cond, x, branch.y)
                self.trace.emit(t, "branch", pid=proc.pid, pc=branch.pc, kind=branch.kind, taken=taken,
                                spec_id=branch.spec_id)
                proc.branches.remove(branch)
                if branch.spec_id is None:
                    if taken:
                        proc.queue.redirect(branch.target)
                    proc.resume_at = t + 1
                elif taken:
                    proc.mispredicted = branch
                    doomed |= 1 << branch.spec_id
                else:
                    self._confirmed.append(branch.spec_id)
                progress = True
        return progress

    def _search_branches(self, t: int, broadcast: frozenset[int]):
        """Memory branches decoded last cycle search the tracker for their block's writers."""
        for proc in self.processes:
            for branch in proc.branches:
                if not branch.searched:
                    branch.search(self.tracker, broadcast, t, self.config.timing.memory_latency)

    def _confirm(self, spec_id: int):
        """A speculated branch went the predicted way: its ID leaves every mask (end of cycle)."""
        clear = ~(1 << spec_id)
        for task in [*self._queued_and_running(), *self.completed_speculative]:
            task.mask &= clear
        self.completed_speculative = [task for task in self.completed_speculative if task.mask]
        for entry in self.tlb.entries:
            entry.mask &= clear
        for proc in self.processes:
            proc.spec_mask &= clear
            for branch in [*proc.branches, *([proc.mispredicted] if proc.mispredicted else [])]:
                branch.mask &= clear
        self.free_spec_ids.append(spec_id)

    def _squash(self, t: int, proc: ProcessContext, branch: PendingBranch):
        """A speculated branch was taken (last cycle): undo everything decoded under it."""
        bit = 1 << branch.spec_id
        for task in self.completed_speculative:
            task.squashed = bool(task.mask & bit)
        self.completed_speculative = [task for task in self.completed_speculative if not task.squashed]
        squashed = [task for task in self.window.tasks if task.mask & bit]
        squashed += [task for station in self.stations for task in station.tasks if task.mask & bit]
        for task in squashed:
            (self.window.tasks if task in self.window.tasks else self.stations[task.class_index].tasks).remove(task)
        if self.enqueue.task is not None and self.enqueue.task.mask & bit:
            squashed.append(self.enqueue.remove())
        self._released_tags.update(task.tag for task in squashed)
        aborted = [run for run in self.in_progress + list(self.cdb.tickets) if run.task.mask & bit]
        for run in aborted:
            (self.in_progress if run in self.in_progress else self.cdb.tickets).remove(run)
            self._released_tags.add(run.task.tag)
            self._released_instances.append((run.task.class_index, run.instance))
            self.trace.emit(t, "abort", pid=run.task.pid, pc=run.task.pc, tag=run.task.tag,
                            accel=self.classes[run.task.class_index].name, instance=run.instance)
        self._dropped_spec_bits |= bit
        for younger in [b for b in proc.branches if b.mask & bit]:
            proc.branches.remove(younger)
            if younger.spec_id is not None:
                self._freed_spec_ids.append(younger.spec_id)
        proc.gprs.restore(branch.checkpoint.gprs)
        proc.loops.restore(branch.checkpoint.loops)
        proc.spec_mask = branch.mask
        proc.skip_depth = 0
        proc.queue.redirect(branch.target)
        proc.resume_at = t + 1
        self._freed_spec_ids.append(branch.spec_id)
        self.trace.emit(t, "squash", pid=proc.pid, pc=branch.pc, spec_id=branch.spec_id,
                        tags=sorted(task.tag for task in squashed))

    # ---- copy-back engine -----------------------------------------------------------------

    def _transfer_cycles(self, blocks: int) -> int:
        return transfer_cycles(self.config, blocks)

    def _busy_regions(self) -> list[tuple[int, Region]]:
        return [(tag, region) for tag, entry in enumerate(self.tracker.entries) if entry is not None
                for region in (entry.reads, entry.writes)]

    def _retarget(self, t: int) -> bool:
        """Send a resolved entry's output home before its producer writes it: a free copy-back.

        A producer can be retargeted until its accelerator starts writing back, which it
        does over the last ``_transfer_cycles(output)`` cycles of its latency.
        """
        waiting = [*self._enqueued(), *self.window.tasks,
                   *(task for station in self.stations for task in station.tasks)]
        not_writing = {task.tag for task in waiting} | {
            run.task.tag for run in self.in_progress if run.finishes - t > self._transfer_cycles(run.task.writes[1])}
        entry = self.tlb.retargetable(self._busy_regions(), not_writing, t)
        if entry is None:
            return False
        self._retargeted = entry
        self.trace.emit(t, "retarget", pid=entry.pid, tag=entry.producer, home=list(entry.home), tm=entry.tm_base)
        return True

    def _apply_retarget(self, entry):
        """The producer writes home; readers remapped to its TM copy read home (end of cycle)."""
        tm = (entry.tm_base, entry.home[1])

        def redirect(region: Region) -> Region:
            return entry.home if region == tm else region

        for task in self._queued_and_running():
            task.reads, task.writes = redirect(task.reads), redirect(task.writes)
        for tag, tracked in enumerate(self.tracker.entries):
            if tracked is not None:
                self.tracker.entries[tag] = TrackerEntry(tracked.pid, redirect(tracked.reads), redirect(tracked.writes))
        for proc in self.processes:
            for branch in proc.branches:
                if tm[0] <= branch.block < tm[0] + tm[1]:
                    branch.block += entry.home[0] - tm[0]
        self.tlb.entries.remove(entry)

    def _copy_back(self, t: int) -> bool:
        retargeted = bool(self.tlb.entries) and self._retarget(t)
        if self.copyback is not None:
            if self.copyback.finishes != t:
                return retargeted
            entry = self.copyback.entry
            self.memory.write(entry.home[0], entry.home[1], self.memory.read(entry.tm_base, entry.home[1]))
            self._copied_home = entry
            return True
        wanted = any(reason in TLB_STALLS for reason in self._last_stalls.values()) or any(
            drained and any(e.pid == pid for e in self.tlb.entries) for pid, drained in enumerate(self._drained))
        if not wanted:
            return retargeted
        entry = self.tlb.copyable([region for _, region in self._busy_regions()])
        if entry is None:
            return retargeted
        cycles = self._transfer_cycles(entry.home[1])
        self.copyback = CopyBack(entry, t, t + cycles)
        self.trace.emit(t, "copyback", pid=entry.pid, home=list(entry.home), tm=entry.tm_base, cycles=cycles)
        return True

    # ---- dispatch and issue ---------------------------------------------------------------

    def _dispatch(self, t: int) -> bool:
        """Stations offer their oldest ready task with a free instance; the oldest go."""
        offers = []
        for index, station in enumerate(self.stations):
            task = station.oldest_ready()
            instance = self.asr.free_instance(index)
            if task is not None and instance is not None:
                offers.append((task.seq, index, task, instance))
        offers.sort()
        for _, index, task, instance in offers[: self.config.hts.dispatch_width]:
            acc = self.classes[index]
            latency = self.timing.cycles(acc, self.processes[task.pid].program.decoded[task.pc])
            # The runtime learns of completion an interrupt later; the instance waits idle.
            notified = latency + (self.config.timing.interrupt_latency if self.runtime else 0)
            run = Running(task, instance, t, t + notified, computing=latency)
            self.stations[index].remove(task)
            self.asr.occupy(run)
            self.in_progress.append(run)
            self.trace.emit(t, "dispatch", pid=task.pid, pc=task.pc, tag=task.tag, accel=acc.name,
                            instance=instance, reads=list(task.reads), writes=list(task.writes), mask=task.mask)
        return bool(offers)

    def _issue(self, t: int, station_room: list[int]) -> bool:
        moved = self.window.select(station_room, self.config.hts.dispatch_width)
        for task in moved:
            self.stations[task.class_index].tasks.append(task)
            self.trace.emit(t, "issue", pid=task.pid, pc=task.pc, tag=task.tag)
        return bool(moved)

    def _enqueue(self, t: int, broadcast: frozenset[int]) -> bool:
        task = self.enqueue.step(self.tracker, broadcast)
        if task is None:
            return False
        self.window.tasks.append(task)
        self.trace.emit(t, "enqueue", pid=task.pid, pc=task.pc, tag=task.tag, waits_for=sorted(task.waits_for))
        return True

    # ---- decode ---------------------------------------------------------------------------

    def _plan_task(self, t: int, proc: ProcessContext, pc: int, word, room: dict) -> _TaskPlan | str:
        """How the task at ``pc`` would be decoded now, or why it cannot be."""
        if room["window"] == 0:
            return "window_full"
        if room["tracker"] == 0:
            return "tracker_full"
        regions = task_regions(word, proc.gprs)
        fault = self._fault_of(t, proc, pc, word, regions)
        if fault is not None:
            return fault
        in_base, in_blocks, out_base, out_blocks = regions
        home_reads, home_writes = (in_base, in_blocks), (out_base, out_blocks)
        reads = home_reads
        if in_blocks:
            entry = self.tlb.youngest_overlapping(home_reads)
            if entry is not None:
                # Another process's copy may be speculative: read it only once it is home.
                if entry.home != home_reads or entry.pid != proc.pid:
                    return "tlb_conflict"
                reads = (entry.tm_base, in_blocks)
        speculative_output = bool(proc.spec_mask) and out_blocks > 0
        if speculative_output and not self.tlb.has_room(out_blocks):
            return "tlb_full"
        if not speculative_output and out_blocks and self.tlb.any_overlapping(home_writes):
            return "tlb_conflict"
        return _TaskPlan(home_reads, home_writes, reads, speculative_output)

    def _fault_of(self, t: int, proc: ProcessContext, pc: int, word, regions) -> str | None:
        """The stall of an instruction touching memory outside its process's window, or None.

        On a wrong path it may never execute: it waits for the branches to resolve. On the
        committed path the process faults and decodes nothing more.
        """
        fault = access_fault(word, regions, self.config.window(proc.pid))
        if fault is None:
            return None
        if proc.spec_mask:
            return "speculative_fault"
        proc.fault = Fault(proc.pid, pc, *fault, proc.location(pc), cycle=t)
        self.trace.emit(t, "fault", pid=proc.pid, pc=pc, cause=fault[0].name)
        return "fault"

    def _decode(self, t: int, room: dict, stalls: dict[int, str]) -> DecodedInstruction | None:
        """Decode one instruction of one process; what it decoded, or None.

        The round-robin arbiter picks the first process (from the one after the last
        picked) whose queue head is present and not blocked; only that one is planned, so
        decode does one TLB and tracker look-up per cycle. The pointer moves on whether or
        not the plan succeeds, so a stalled process cannot keep the others waiting.
        """
        count = len(self.processes)
        order = [self.processes[(self.round_robin + step) % count] for step in range(count)]
        reasons = {proc.pid: self._why_not_decodable(t, proc, room) for proc in order}
        chosen = next((proc for proc in order if reasons[proc.pid] is None), None)
        for proc in order:
            if proc.done_at is None and proc is not chosen:
                stalls[proc.pid] = reasons[proc.pid] or "decoder_busy"
        if chosen is None:
            return None
        self.round_robin = (chosen.pid + 1) % count
        head, plan = chosen.queue.head(), None
        if chosen.skip_depth == 0:
            if head.word.opcode == Opcode.TASK:
                plan = self._plan_task(t, chosen, head.pc, head.word, room)
            elif head.word.opcode == Opcode.IF:
                plan = self._fault_of(t, chosen, head.pc, head.word, None)
            if isinstance(plan, str):
                stalls[chosen.pid] = plan
                return None
        speculative = bool(chosen.spec_mask)
        self._decode_one(t, chosen, plan)
        return DecodedInstruction(chosen.pid, head.pc, head.word.opcode, speculative, chosen.skip_depth > 0)

    def _why_not_decodable(self, t: int, proc: ProcessContext, room: dict) -> str | None:
        if proc.done_at is not None:
            return "done"
        if proc.fault is not None:
            return "fault"
        if proc.blocked or t < proc.resume_at:
            return "branch"
        if proc.drained:
            return "drain"
        if room["queue"][proc.pid] == 0:
            return "fetch"
        if t < self.decoder_free_at:
            return "runtime_overhead"
        return None

    def _decode_one(self, t: int, proc: ProcessContext, plan: _TaskPlan | None):
        fetched = proc.queue.pop()
        pc, word = fetched.pc, fetched.word
        self.steps[proc.pid].count(pc)
        op = word.opcode
        if proc.skip_depth:
            proc.skip_depth += {Opcode.LBEG: 1, Opcode.LEND: -1}.get(op, 0)
            return
        if op == Opcode.TASK:
            self._decode_task(t, proc, pc, word, plan)
        elif op in (Opcode.MOV, Opcode.ADD, Opcode.MUL):
            execute_register_op(word, proc.gprs)
        elif op == Opcode.JUMP:
            proc.queue.redirect(pc + word.offset)
        elif op == Opcode.LBEG:
            if not begin_loop(word, pc, proc.gprs, proc.loops):
                proc.skip_depth = 1
        elif op == Opcode.LEND:
            back = end_loop(word, proc.gprs, proc.loops)
            if back is not None:
                proc.queue.redirect(back)
        elif op == Opcode.IF:
            self._decode_branch(t, proc, pc, word)

    def _decode_task(self, t: int, proc: ProcessContext, pc: int, word, plan: _TaskPlan):
        writes = plan.home_writes
        tag = self.tracker.free_tag()
        if plan.speculative_output:
            writes = (self.tlb.allocate(self.seq, proc.pid, plan.home_writes, proc.spec_mask, tag, t),
                      plan.home_writes[1])
        if self.runtime:
            self.decoder_free_at = t + runtime_accesses(self.tracker.occupancy()) * self.config.timing.l2_latency
        self.tracker.allocate(tag, TrackerEntry(proc.pid, plan.reads, writes))
        class_index = self.class_of_id[word.accel_id]
        task = DecodedTask(self.seq, tag, proc.pid, pc, word.task_id, word.accel_id, class_index, plan.reads,
                           writes, word.metadata, mask=proc.spec_mask)
        self.seq += 1
        self.enqueue.hold(task)
        self.trace.emit(t, "decode", pid=proc.pid, pc=pc, tag=tag, task_id=word.task_id,
                        accel=self.classes[class_index].name, reads=list(plan.reads), writes=list(writes),
                        mask=task.mask)

    def _decode_branch(self, t: int, proc: ProcessContext, pc: int, word):
        branch = PendingBranch(proc.pid, pc, word, "RR", proc.gprs[word.b], mask=proc.spec_mask)
        if not word.memory_branch:
            branch.x, branch.resolves_at = proc.gprs[word.a], t + 1
            proc.branches.append(branch)
            return
        branch.kind, branch.block, branch.searched = "MR", self.tlb.translate_block(word.a, proc.pid), False
        if self.speculate and word.speculate and self.free_spec_ids:
            branch.spec_id = min(self.free_spec_ids)     # a priority encoder in hardware
            self.free_spec_ids.remove(branch.spec_id)
            branch.checkpoint = Checkpoint(proc.gprs.snapshot(), proc.loops.snapshot())
            proc.spec_mask |= 1 << branch.spec_id
        proc.branches.append(branch)

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
        if tags:
            for task in self.window.tasks + [task for station in self.stations for task in station.tasks]:
                task.waits_for -= tags
            for proc in self.processes:
                for branch in proc.branches:
                    if branch.kind == "BR" and branch.waits_for:
                        branch.waits_for -= tags
                        if not branch.waits_for:
                            branch.resolves_at = t + self.config.timing.memory_latency
        self._released_tags, self._released_instances = set(), []
        for spec_id in self._confirmed:
            self._confirm(spec_id)
        self.free_spec_ids.extend(self._freed_spec_ids)
        self._confirmed, self._freed_spec_ids = [], []
        if self._dropped_spec_bits:
            self.tlb.entries = [e for e in self.tlb.entries if not e.mask & self._dropped_spec_bits]
            self._dropped_spec_bits = 0
        if self._retargeted is not None:
            self._apply_retarget(self._retargeted)
            self._retargeted = None
        if self._copied_home is not None:
            self.tlb.entries.remove(self._copied_home)
            self.copyback = self._copied_home = None
        if not self.tlb.entries and not self._tm_in_use():
            self.tlb.tm_next = 0

    def _tm_in_use(self) -> bool:
        home = self.config.memory.blocks
        in_tm = [region for entry in self.tracker.entries if entry is not None
                 for region in (entry.reads, entry.writes) if region[1] and region[0] >= home]
        return bool(in_tm) or any(b.block >= home for proc in self.processes for b in proc.branches)

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

    def _queued_and_running(self):
        yield from self._enqueued()
        yield from self.window.tasks
        for station in self.stations:
            yield from station.tasks
        for run in self.in_progress + list(self.cdb.tickets):
            yield run.task

    def _room_at_start(self) -> dict:
        return {
            "queue": [len(proc.queue.entries) for proc in self.processes],
            # The task in the enqueue stage has a window slot waiting for it.
            "window": self.window.capacity - len(self.window.tasks) - (self.enqueue.task is not None),
            "tracker": len(self.tracker.entries) - self.tracker.occupancy(),
            "stations": [station.capacity - len(station.tasks) for station in self.stations],
        }

    def _occupancy(self) -> Occupancy:
        hts = self.config.hts
        return Occupancy(
            window=len(self.window.tasks) + (self.enqueue.task is not None), window_capacity=self.window.capacity,
            tracker=self.tracker.occupancy(), tracker_capacity=len(self.tracker.entries),
            stations=tuple(len(station.tasks) for station in self.stations), station_capacity=hts.rs_entries,
            tlb=len(self.tlb.entries), tlb_capacity=self.tlb.capacity,
            tm_used=self.tlb.tm_next, tm_capacity=self.tlb.tm_blocks)

    def step(self) -> bool:
        """Simulate one cycle; whether anything changed."""
        t = self.cycle
        if self.observer is not None:
            start, copying = self._occupancy(), self.copyback is not None
        # Retirement and the copy-back engine read the state registered at the start of the cycle.
        progress = self._retire_processes(t)
        self._drained = [proc.drained for proc in self.processes]
        room = self._room_at_start()
        granted = self._complete(t)
        broadcast = frozenset(run.task.tag for run in granted)
        progress |= bool(granted) | self._resolve_branches(t)
        self._search_branches(t, broadcast)
        progress |= self._copy_back(t)
        progress |= self._dispatch(t)
        progress |= self._issue(t, list(room["stations"]))
        progress |= self._enqueue(t, broadcast)
        stalls: dict[int, str] = {}
        decoded = self._decode(t, room, stalls)
        progress |= decoded is not None
        for proc in self.processes:
            progress |= proc.queue.fetch(room["queue"][proc.pid])
        self._end_of_cycle(t)
        if self.observer is not None:
            self.observer(CycleView(t, start, copying, stalls, decoded))
        # The stall reasons are registered: the copy-back engine acts on last cycle's, so a
        # change of reason is a change of state even when nothing else moved.
        progress |= stalls != self._last_stalls
        self._last_stalls = stalls
        return progress

    def _next_event(self) -> int | None:
        times = [run.finishes for run in self.in_progress]
        times += [b.resolves_at for p in self.processes for b in p.branches if b.resolves_at is not None]
        times += [p.resume_at for p in self.processes]
        times.append(self.decoder_free_at)
        if self.copyback is not None:
            times.append(self.copyback.finishes)
        later = [time for time in times if time > self.cycle]
        return min(later) if later else None

    def run(self, max_steps: int = DEFAULT_STEP_LIMIT) -> RunResult:
        """Run to the end; an error once a process has decoded more than ``max_steps`` instructions."""
        for counter in self.steps:
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
