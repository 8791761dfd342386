"""The cycle-level HTS model: every block of docs/microarchitecture.md, stepped cycle by cycle.

This is the golden model of the RTL. Each cycle runs the stages back to front
(completion and CDB, branch unit, dispatch, issue, decode, fetch), so that an item moves
at most one stage per cycle. Every stage decides on the occupancy its structures had at
the start of the cycle. The CDB's effects (tracker entry freed, instance released,
waiting tasks woken) land at the end of the cycle. Decode alone sees the tags being
broadcast, so a task decoded in the same cycle as its producer's broadcast does not
wait for it. Cycles in which nothing can change are skipped in one step, so an
accelerator latency of thousands of cycles costs no Python time.

The same model is the software-runtime baseline (``scheduler="runtime"``): the CPU does
decode and dispatch, paying memory accesses to the scheduler's structures per task, and
learns of each completion an interrupt latency late.
"""

from dataclasses import dataclass, field

from hts.assembler import Program
from hts.config import SystemConfig
from hts.errors import HTSError, Location
from hts.isa import Opcode, branch_taken

from .accelerator import AcceleratorFunctions
from .asr import AcceleratorStatus, Running
from .branch_unit import PendingBranch
from .cdb import CommonDataBus
from .control import begin_loop, end_loop, execute_register_op, task_regions
from .decode import ProcessContext
from .executor import check_programs
from .memory import Memory
from .memory_tracker import MemoryTracker, TrackerEntry
from .reservation_station import ReservationStation
from .timing import DeviceTiming, TableLatency
from .trace import Trace
from .window import DecodedTask, DispatchWindow

__all__ = ["SCHEDULERS", "RunResult", "HTSModel", "DEFAULT_CYCLE_LIMIT", "runtime_accesses"]

SCHEDULERS = ("hts", "hts-nospec", "runtime")
DEFAULT_CYCLE_LIMIT = 10**9


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


def runtime_accesses(tracker_occupancy: int) -> int:
    """Memory accesses a software runtime makes to schedule one task.

    It reads the task (1), scans the tracker entries in use for dependences (one each),
    writes its own tracker entry (1) and reservation-station entry (1), and at dispatch
    reads and writes the accelerator status (2).
    """
    return 5 + tracker_occupancy


class HTSModel:
    def __init__(self, config: SystemConfig, programs: list[Program], memory: Memory,
                 timing: DeviceTiming | None = None, scheduler: str = "hts"):
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}")
        check_programs(programs, config)
        self.config, self.memory, self.scheduler = config, memory, scheduler
        self.timing = timing or TableLatency()
        self.runtime = scheduler == "runtime"
        self.functions = AcceleratorFunctions(config)
        self.classes = list(config.accelerators)
        self.class_of_id = {acc.id: index for index, acc in enumerate(self.classes)}
        self.processes = [ProcessContext.create(pid, program, config) for pid, program in enumerate(programs)]
        self.tracker = MemoryTracker(config.hts.tracker_entries)
        self.window = DispatchWindow(config.hts.window)
        self.stations = [ReservationStation(config.hts.rs_entries) for _ in self.classes]
        self.asr = AcceleratorStatus([acc.count for acc in self.classes])
        self.cdb = CommonDataBus(config.hts.cdb_width)
        self.trace = Trace()
        self.cycle = 0
        self.simulated = 0
        self.seq = 0
        self.round_robin = 0
        self.in_progress: list[Running] = []
        self.decoder_free_at = 0           # runtime baseline: the CPU is busy scheduling until then
        self.busy_cycles = [0] * len(self.classes)
        self.tasks_completed = 0

    # ---- stages -------------------------------------------------------------------------

    def _complete(self, t: int) -> list[Running]:
        """Finishing instances take CDB tickets; the arbiter grants the oldest."""
        finished = [run for run in self.in_progress if run.finishes == t]
        for run in finished:
            self.in_progress.remove(run)
        self.cdb.take_tickets(finished)
        granted = self.cdb.grant()
        for run in granted:
            task = run.task
            self.functions.run(self.memory, task.accel_id, *task.reads, *task.writes, task.metadata)
            self.busy_cycles[task.class_index] += t - run.started + 1
            self.tasks_completed += 1
            self.trace.emit(t, "complete", pid=task.pid, pc=task.pc, tag=task.tag,
                            accel=self.classes[task.class_index].name, instance=run.instance)
        return granted

    def _resolve_branches(self, t: int) -> bool:
        progress = False
        for proc in self.processes:
            branch = proc.branch
            if branch is None or branch.resolves_at != t:
                continue
            word = branch.word
            x = branch.x if branch.kind == "RR" else self.memory.first_word(word.a)
            taken = branch_taken(word.cond, x, branch.y)
            self.trace.emit(t, "branch", pid=proc.pid, pc=branch.pc, kind=branch.kind, taken=taken)
            if taken:
                proc.queue.redirect(branch.pc + word.offset)
            proc.branch = None
            proc.resume_at = t + 1
            progress = True
        return progress

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
            if self.runtime:
                latency += self.config.timing.interrupt_latency
            run = Running(task, instance, t, t + latency)
            self.stations[index].remove(task)
            self.asr.occupy(run)
            self.in_progress.append(run)
            self.trace.emit(t, "dispatch", pid=task.pid, pc=task.pc, tag=task.tag, accel=acc.name,
                            instance=instance, reads=list(task.reads), writes=list(task.writes))
        return bool(offers)

    def _issue(self, t: int, station_room: list[int]) -> bool:
        moved = self.window.select(station_room, self.config.hts.dispatch_width)
        for task in moved:
            self.stations[task.class_index].tasks.append(task)
            self.trace.emit(t, "issue", pid=task.pid, pc=task.pc, tag=task.tag)
        return bool(moved)

    def _decode(self, t: int, room: dict[str, int], broadcast: frozenset[int]) -> int | None:
        """Decode one instruction of the first process (round robin) that can; its pid."""
        if t < self.decoder_free_at:
            return None
        count = len(self.processes)
        for step in range(count):
            proc = self.processes[(self.round_robin + step) % count]
            if proc.done_at is not None or proc.branch is not None or t < proc.resume_at:
                continue
            if room["queue"][proc.pid] == 0:
                continue
            head = proc.queue.head()
            if head.word.opcode == Opcode.TASK and proc.skip_depth == 0 and (
                    room["window"] == 0 or room["tracker"] == 0):
                continue
            self._decode_one(t, proc, broadcast)
            self.round_robin = (proc.pid + 1) % count
            return proc.pid
        return None

    def _decode_one(self, t: int, proc: ProcessContext, broadcast: frozenset[int]):
        fetched = proc.queue.pop()
        pc, word = fetched.pc, fetched.word
        op = word.opcode
        if proc.skip_depth:
            proc.skip_depth += {Opcode.LBEG: 1, Opcode.LEND: -1}.get(op, 0)
            return
        if op == Opcode.TASK:
            self._decode_task(t, proc, pc, word, broadcast)
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
            self._decode_branch(t, proc, pc, word, broadcast)

    def _decode_task(self, t: int, proc: ProcessContext, pc: int, word, broadcast: frozenset[int]):
        in_base, in_blocks, out_base, out_blocks = task_regions(word, proc.gprs, self.config, proc.location(pc))
        reads, writes = (in_base, in_blocks), (out_base, out_blocks)
        waits = self.tracker.dependences(reads, writes, ignoring=broadcast)
        if self.runtime:
            accesses = runtime_accesses(self.tracker.occupancy())
            self.decoder_free_at = t + accesses * self.config.timing.l2_latency
        tag = self.tracker.allocate(TrackerEntry(proc.pid, reads, writes))
        class_index = self.class_of_id[word.accel_id]
        task = DecodedTask(self.seq, tag, proc.pid, pc, word.task_id, word.accel_id, class_index, reads, writes,
                           word.metadata, set(waits))
        self.seq += 1
        self.window.tasks.append(task)
        self.trace.emit(t, "decode", pid=proc.pid, pc=pc, tag=tag, task_id=word.task_id,
                        accel=self.classes[class_index].name, reads=list(reads), writes=list(writes),
                        waits_for=sorted(waits))

    def _decode_branch(self, t: int, proc: ProcessContext, pc: int, word, broadcast: frozenset[int]):
        y = proc.gprs[word.b]
        if not word.memory_branch:
            proc.branch = PendingBranch(proc.pid, pc, word, "RR", y, x=proc.gprs[word.a], resolves_at=t + 1)
            return
        writers = self.tracker.writers_of(word.a, ignoring=broadcast)
        if writers:
            proc.branch = PendingBranch(proc.pid, pc, word, "BR", y, waits_for=set(writers))
        else:
            proc.branch = PendingBranch(proc.pid, pc, word, "MR", y,
                                        resolves_at=t + self.config.timing.memory_latency)

    def _apply_broadcast(self, t: int, granted: list[Running]):
        tags = {run.task.tag for run in granted}
        for run in granted:
            self.tracker.free(run.task.tag)
            self.asr.release(run.task.class_index, run.instance)
        if not tags:
            return
        for task in self.window.tasks:
            task.waits_for -= tags
        for station in self.stations:
            for task in station.tasks:
                task.waits_for -= tags
        for proc in self.processes:
            branch = proc.branch
            if branch is not None and branch.kind == "BR" and branch.waits_for:
                branch.waits_for -= tags
                if not branch.waits_for:
                    branch.resolves_at = t + self.config.timing.memory_latency

    def _retire_processes(self, t: int) -> bool:
        progress = False
        for proc in self.processes:
            if proc.done_at is None and proc.drained and not self.tracker.holds_pid(proc.pid):
                proc.done_at = t
                self.trace.emit(t, "end", pid=proc.pid)
                progress = True
        return progress

    # ---- the cycle ----------------------------------------------------------------------

    def _room_at_start(self) -> dict:
        return {
            "queue": [len(proc.queue.entries) for proc in self.processes],
            "window": self.window.capacity - len(self.window.tasks),
            "tracker": len(self.tracker.entries) - self.tracker.occupancy(),
            "stations": [station.capacity - len(station.tasks) for station in self.stations],
        }

    def _stall_reasons(self, t: int, decoded_pid: int | None, room: dict) -> dict[int, str]:
        reasons = {}
        for proc in self.processes:
            if proc.done_at is not None or proc.pid == decoded_pid:
                continue
            if proc.branch is not None or t < proc.resume_at:
                reason = "branch"
            elif proc.drained:
                reason = "drain"
            elif room["queue"][proc.pid] == 0:
                reason = "fetch"
            elif t < self.decoder_free_at:
                reason = "runtime_overhead"
            elif proc.queue.head().word.opcode == Opcode.TASK and room["window"] == 0:
                reason = "window_full"
            elif proc.queue.head().word.opcode == Opcode.TASK and room["tracker"] == 0:
                reason = "tracker_full"
            else:
                reason = "decoder_busy"
            reasons[proc.pid] = reason
        return reasons

    def step(self) -> bool:
        """Simulate one cycle; whether anything changed."""
        t = self.cycle
        room = self._room_at_start()
        granted = self._complete(t)
        broadcast = frozenset(run.task.tag for run in granted)
        progress = bool(granted) | self._resolve_branches(t)
        progress |= self._dispatch(t)
        progress |= self._issue(t, list(room["stations"]))
        decoded_pid = self._decode(t, room, broadcast)
        progress |= decoded_pid is not None
        for proc in self.processes:
            progress |= proc.queue.fetch(room["queue"][proc.pid])
        self._apply_broadcast(t, granted)
        progress |= self._retire_processes(t)
        self._last_stalls = self._stall_reasons(t, decoded_pid, room)
        return progress

    def _next_event(self) -> int | None:
        times = [run.finishes for run in self.in_progress]
        times += [p.branch.resolves_at for p in self.processes if p.branch and p.branch.resolves_at is not None]
        times += [p.resume_at for p in self.processes]
        times.append(self.decoder_free_at)
        later = [time for time in times if time > self.cycle]
        return min(later) if later else None

    def run(self, max_cycles: int = DEFAULT_CYCLE_LIMIT) -> RunResult:
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
            if self.cycle > max_cycles:
                raise HTSError(f"no end within {max_cycles} cycles (a loop that never exits?)",
                               Location(self.processes[0].program.source))
        return self._result()

    def _result(self) -> RunResult:
        cycles = max(proc.done_at for proc in self.processes) + 1
        utilization = {acc.name: self.busy_cycles[i] / (acc.count * cycles) for i, acc in enumerate(self.classes)}
        stalls: dict[str, int] = {}
        for proc in self.processes:
            for reason, count in proc.stall.items():
                stalls[reason] = stalls.get(reason, 0) + count
        return RunResult(self.scheduler, cycles, self.tasks_completed, self.memory, self.trace, utilization,
                         stalls, [proc.gprs.snapshot() for proc in self.processes], self.simulated)
