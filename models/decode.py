"""Decode: what the front end keeps for each process, and the stage that decodes.

The decode stage (:class:`Decode`; RTL ``hdl/decode.py``) decodes one instruction per
cycle for one process, picked round robin; a task takes a tracker entry (and a TLB
entry for a speculative output) and goes to the enqueue stage. Control instructions execute there, in program order, on the state below:
``mov``/``add`` in one cycle, ``mul`` in two (it holds the decoder for a cycle while
the multiplier works, then decodes), ``jump`` and a loop back by redirecting fetch,
``lbeg`` with zero iterations by discarding the body one instruction per cycle, and
``if`` by handing it to the branch unit. An unspeculated branch stops its process until
it resolves; a speculated one leaves a checkpoint and the process goes on.
"""

from dataclasses import dataclass, field

from hts.assembler import Program
from hts.base.config import SystemConfig
from hts.base.errors import Location
from hts.isa import Opcode

from .branch_unit import BranchUnit, PendingBranch
from .control import Fault, access_fault, begin_loop, end_loop, execute_register_op, task_regions
from .enqueue import EnqueueStage
from .executor import StepCounter
from .gpr import GPRBank
from .loop_stack import LoopStack
from .memory_tracker import MemoryTracker, Region, TrackerEntry
from .observation import DecodedInstruction
from .task_queue import TaskQueue
from .tlb import TaskLookupBuffer
from .task import DecodedTask

__all__ = ["ProcessContext", "Decode", "Decoded", "runtime_accesses"]


def _reads_region_base(word, register: int) -> bool:
    """Whether ``word`` is a task whose input or output base is ``register`` (K bit 0)."""
    return word.opcode == Opcode.TASK and word.indirect and register in (word.a, word.c)


def runtime_accesses(tracker_occupancy: int) -> int:
    """Memory accesses a software runtime makes to schedule one task.

    It reads the task (1), scans the tracker entries in use for dependences (one each),
    writes its own tracker entry (1) and ready-list entry (1), and at dispatch
    reads and writes the accelerator status (2).
    """
    return 5 + tracker_occupancy


@dataclass
class ProcessContext:
    """Everything the front end keeps per process."""
    pid: int
    program: Program
    queue: TaskQueue
    gprs: GPRBank
    loops: LoopStack
    branches: list[PendingBranch] = field(default_factory=list)   # unresolved, oldest first
    mispredicted: PendingBranch | None = None   # resolved taken last cycle: it squashes this cycle
    spec_mask: int = 0               # speculation IDs of its unresolved speculated branches
    skip_depth: int = 0              # > 0 while discarding a zero-iteration loop body
    resume_at: int = 0               # first cycle it may decode again after a branch
    operands_at: int | None = None   # its head waits this cycle for its region registers
    done_at: int | None = None
    fault: Fault | None = None       # it stopped there: it decodes nothing more, and ends once drained
    stall: dict[str, int] = field(default_factory=dict)

    @classmethod
    def create(cls, pid: int, program: Program, config: SystemConfig) -> "ProcessContext":
        return cls(pid, program, TaskQueue(program, config.hts.queue_depth), GPRBank(config.hts.gprs),
                   LoopStack(config.hts.loop_depth))

    def location(self, pc: int) -> Location:
        return self.program.location(pc)

    @property
    def blocked(self) -> bool:
        """Waiting on a branch it did not speculate."""
        return any(branch.spec_id is None for branch in self.branches)

    @property
    def drained(self) -> bool:
        if self.fault is not None:
            return True
        return self.queue.exhausted and not self.branches and self.mispredicted is None and self.skip_depth == 0

    def count_stall(self, reason: str, cycles: int):
        self.stall[reason] = self.stall.get(reason, 0) + cycles


@dataclass(frozen=True)
class _TaskPlan:
    """What decoding a task would do, worked out before the decoder commits to it."""
    home_reads: Region
    home_writes: Region
    reads: Region                      # physical: TM when remapped
    speculative_output: bool           # the output goes to a new TM region


@dataclass
class Decoded:
    """What decode did in one cycle."""
    stalls: dict[int, str] = field(default_factory=dict)   # why each live process did not decode
    instruction: DecodedInstruction | None = None
    task: DecodedTask | None = None    # now in the enqueue stage
    fault: Fault | None = None         # the process stopped at this instruction


@dataclass
class _Structures:
    """The blocks decode reads and allocates in, as they stand in this cycle."""
    room: dict
    tracker: MemoryTracker
    tlb: TaskLookupBuffer
    enqueue: EnqueueStage
    branch_unit: BranchUnit


class Decode:
    def __init__(self, config: SystemConfig, programs: list[Program], step_limit: int, runtime: bool = False,
                 speculate: bool = False):
        """``runtime``: the CPU decodes, busy for the memory accesses of each task it schedules.
        ``speculate``: memory branches marked to speculate take a speculation ID while one is free."""
        self.config, self.runtime, self.speculate = config, runtime, speculate
        self.free_spec_ids = list(range(config.hts.spec_ids))
        self.class_of_id = {acc.id: index for index, acc in enumerate(config.accelerators)}
        # Instructions decoded per process (wrong-path ones too): a runaway loop stops.
        self.steps = [StepCounter(pid, program, step_limit) for pid, program in enumerate(programs)]
        self.round_robin = 0
        self.seq = 0                     # decode order of tasks
        self.free_at = 0                 # runtime baseline: the CPU is busy scheduling until then
        self.multiplying: ProcessContext | None = None   # its mul at the head decodes this cycle
        self.written: dict[int, int] = {}  # pid -> the register its instruction decoded now writes

    def step(self, t: int, processes: list[ProcessContext], room: dict, tracker: MemoryTracker,
             tlb: TaskLookupBuffer, enqueue: EnqueueStage, branch_unit: BranchUnit) -> Decoded:
        """Decode one instruction of one process.

        ``room``: whether each process has a queue head, the free tracker entries and
        the successor lists' room, at the start of the cycle. The round-robin arbiter picks the first
        process (from the one after the last picked) whose queue head is present and not
        blocked; only that one is planned, so decode does one TLB and tracker look-up per
        cycle. The pointer moves on whether or not the plan succeeds, so a stalled process
        cannot keep the others waiting.
        """
        blocks = _Structures(room, tracker, tlb, enqueue, branch_unit)
        count = len(processes)
        order = [processes[(self.round_robin + step) % count] for step in range(count)]
        reasons = {proc.pid: self._why_not_decodable(t, proc, room) for proc in order}
        # A mul's second cycle is its process's, or no one's (a squash may have taken its head).
        finishing_mul = self.multiplying is not None
        candidates = [self.multiplying] if finishing_mul else order
        self.multiplying = None
        chosen = next((proc for proc in candidates if reasons[proc.pid] is None), None)
        out = Decoded()
        for proc in order:
            if proc.done_at is None and proc is not chosen:
                out.stalls[proc.pid] = reasons[proc.pid] or "decoder_busy"
        if chosen is None:
            return out
        self.round_robin = (chosen.pid + 1) % count
        head, plan = chosen.queue.head(), None
        if chosen.skip_depth == 0:
            if head.word.opcode == Opcode.TASK:
                plan = self._plan_task(t, chosen, head.pc, head.word, blocks, out)
            elif head.word.opcode == Opcode.IF:
                plan = ("scan" if head.word.memory_branch and room["scan_busy"]
                        else self._fault_of(t, chosen, head.pc, head.word, None, out))
            elif head.word.opcode == Opcode.MUL and not finishing_mul:
                self.multiplying = chosen       # the partial products go into registers
                plan = "decoder_busy"
            if isinstance(plan, str):
                out.stalls[chosen.pid] = plan
                return out
        speculative = bool(chosen.spec_mask)
        self._decode_one(t, chosen, plan, blocks, out)
        out.instruction = DecodedInstruction(chosen.pid, head.pc, head.word.opcode, speculative,
                                             chosen.skip_depth > 0)
        return out

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
        if proc.operands_at == t:
            return "operands"
        if t < self.free_at:
            return "runtime_overhead"
        return None

    def _plan_task(self, t: int, proc: ProcessContext, pc: int, word, blocks: _Structures,
                   out: Decoded) -> _TaskPlan | str:
        """How the task at ``pc`` would be decoded now, or why it cannot be."""
        if blocks.room["scan_busy"]:
            return "scan"
        if blocks.room["tracker"] == 0:
            return "tracker_full"
        if blocks.room["successors_full"]:
            return "successors_full"
        regions = task_regions(word, proc.gprs)
        fault = self._fault_of(t, proc, pc, word, regions, out)
        if fault is not None:
            return fault
        in_base, in_blocks, out_base, out_blocks = regions
        home_reads, home_writes = (in_base, in_blocks), (out_base, out_blocks)
        reads = home_reads
        tlb = blocks.tlb
        if in_blocks:
            entry = tlb.youngest_overlapping(home_reads)
            if entry is not None:
                # Another process's copy may be speculative: read it only once it is home.
                if entry.home != home_reads or entry.pid != proc.pid:
                    return "tlb_conflict"
                reads = (entry.tm_base, in_blocks)
        speculative_output = bool(proc.spec_mask) and out_blocks > 0
        if speculative_output and not tlb.has_room(out_blocks):
            return "tlb_full"
        if not speculative_output and out_blocks and tlb.any_overlapping(home_writes):
            return "tlb_conflict"
        return _TaskPlan(home_reads, home_writes, reads, speculative_output)

    def _fault_of(self, t: int, proc: ProcessContext, pc: int, word, regions, out: Decoded) -> str | None:
        """The stall of an instruction touching memory outside its process's window, or None.

        On a wrong path it may never execute: it waits for the branches to resolve. On the
        committed path the process faults and decodes nothing more.
        """
        fault = access_fault(word, regions, self.config.window(proc.pid))
        if fault is None:
            return None
        if proc.spec_mask:
            return "speculative_fault"
        proc.fault = out.fault = Fault(proc.pid, pc, *fault, proc.location(pc), cycle=t)
        return "fault"

    def _decode_one(self, t: int, proc: ProcessContext, plan: _TaskPlan | None, blocks: _Structures,
                    out: Decoded):
        fetched = proc.queue.pop()
        pc, word = fetched.pc, fetched.word
        self.steps[proc.pid].count(pc)
        op = word.opcode
        if proc.skip_depth:
            proc.skip_depth += {Opcode.LBEG: 1, Opcode.LEND: -1}.get(op, 0)
            return
        if op == Opcode.TASK:
            out.task = self._decode_task(t, proc, pc, word, plan, blocks)
        elif op in (Opcode.MOV, Opcode.ADD, Opcode.MUL):
            execute_register_op(word, proc.gprs)
            self.written[proc.pid] = word.c
        elif op == Opcode.JUMP:
            proc.queue.redirect(pc + word.offset)
        elif op == Opcode.LBEG:
            self.written[proc.pid] = word.b
            if not begin_loop(word, pc, proc.gprs, proc.loops):
                proc.skip_depth = 1
        elif op == Opcode.LEND:
            self.written[proc.pid] = proc.loops.top().counter
            back = end_loop(word, proc.gprs, proc.loops)
            if back is not None:
                proc.queue.redirect(back)
        elif op == Opcode.IF:
            blocks.branch_unit.decode(t, proc, pc, word, blocks.tlb, self.take_spec_id(word))

    def settle(self, t: int, processes: list[ProcessContext]):
        """End of cycle, once the queues have moved: a process's new head that reads a
        region base from the register its instruction decoded now writes waits a cycle.
        In hardware the TLB and window relations of the next head are compared a cycle
        ahead, from its registers as they stand before the write lands; they are compared
        again in that cycle (docs/microarchitecture.md, "Decode's cycle")."""
        for pid, register in self.written.items():
            head = processes[pid].queue.head()
            if head is not None and _reads_region_base(head.word, register):
                processes[pid].operands_at = t + 1
        self.written = {}

    def take_spec_id(self, word) -> int | None:
        """The speculation ID of the branch ``word``: the lowest free one (a priority encoder
        in hardware), or None when it does not speculate."""
        if not (word.memory_branch and self.speculate and word.speculate and self.free_spec_ids):
            return None
        spec_id = min(self.free_spec_ids)
        self.free_spec_ids.remove(spec_id)
        return spec_id

    def free(self, spec_ids: list[int]):
        """IDs confirmed or squashed (end of cycle) can be taken again."""
        self.free_spec_ids.extend(spec_ids)

    def _decode_task(self, t: int, proc: ProcessContext, pc: int, word, plan: _TaskPlan,
                     blocks: _Structures) -> DecodedTask:
        tracker = blocks.tracker
        writes = plan.home_writes
        tag = tracker.free_tag()
        if plan.speculative_output:
            writes = (blocks.tlb.allocate(self.seq, proc.pid, plan.home_writes, proc.spec_mask, tag, t),
                      plan.home_writes[1])
        if self.runtime:
            self.free_at = t + runtime_accesses(tracker.occupancy()) * self.config.timing.l2_latency
        tracker.allocate(tag, TrackerEntry(proc.pid, plan.reads, writes))
        task = DecodedTask(self.seq, tag, proc.pid, pc, word.task_id, word.accel_id, self.class_of_id[word.accel_id],
                           plan.reads, writes, word.metadata, mask=proc.spec_mask)
        self.seq += 1
        blocks.enqueue.hold(task)
        return task
