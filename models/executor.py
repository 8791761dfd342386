"""Functional executor: each process's program run in order, one instruction at a time.

This is the reference of the sequential-equivalence contract: whatever the scheduler
does out of order and speculatively, home memory at the end must equal what this
executor leaves. Processes run one after another in PID order; programs of different
processes must not share memory that either writes (their order is not defined).
"""

from collections import deque
from dataclasses import dataclass, field

from hts.assembler import Program
from hts.base.config import DEFAULT_STEP_LIMIT, SystemConfig
from hts.base.errors import HTSError, Location, SourceError
from hts.isa import Opcode, branch_taken

from .accelerator import AcceleratorFunctions
from .control import Fault, access_fault, begin_loop, end_loop, execute_register_op, task_regions
from .gpr import GPRBank
from .loop_stack import LoopStack
from .memory import Memory

__all__ = ["ExecutedTask", "ExecutionResult", "run_sequential", "check_programs", "StepCounter"]


@dataclass(frozen=True)
class ExecutedTask:
    pid: int
    pc: int
    accel_id: int
    regions: tuple[int, int, int, int]
    data: str          # digest of the words read and written


@dataclass
class ExecutionResult:
    memory: Memory
    registers: list[tuple[int, ...]]              # per process, at the end
    tasks: list[ExecutedTask] = field(default_factory=list)
    instructions: int = 0
    faults: list[Fault] = field(default_factory=list)    # at most one per process: it stopped there


def check_programs(programs: list[Program], config: SystemConfig):
    """Programs run as processes 0, 1, ...: there must be few enough, and pids must agree."""
    if not 1 <= len(programs) <= config.hts.processes:
        raise HTSError(f"{len(programs)} programs given, but the configuration runs 1 to "
                       f"{config.hts.processes} processes (hts.processes)")
    for pid, program in enumerate(programs):
        for pc, word in enumerate(program.decoded):
            if word.opcode is None:
                raise SourceError(f"accelerator ID {word.accel_id:#04x} names no instruction",
                                  program.location(pc))
            if word.pid != pid:
                raise SourceError(f"instruction has pid {word.pid}, but this program runs as process {pid}",
                                  program.location(pc))


class StepCounter:
    """The instructions one process has executed, with the pcs of the latest, so that a
    runaway loop is reported where it runs."""

    RECENT = 64

    def __init__(self, pid: int, program: Program, limit: int):
        self.pid, self.program, self.limit = pid, program, limit
        self.steps = 0
        self.recent: deque[int] = deque(maxlen=self.RECENT)

    def count(self, pc: int):
        self.steps += 1
        self.recent.append(pc)
        if self.steps > self.limit:
            low, high = min(self.recent), max(self.recent)
            lines = self.program.lines
            span = f" (lines {lines[low]}..{lines[high]})" if lines[low] is not None else ""
            raise HTSError(f"process {self.pid} executed {self.limit} instructions without ending; the last "
                           f"{len(self.recent)} ran at pc {low}..{high}{span}: a loop that never exits? "
                           f"(hts run --max-steps N sets the limit; other commands stop at {DEFAULT_STEP_LIMIT:,})",
                           Location(self.program.source))


def _after_matching_lend(program: Program, pc: int) -> int:
    depth = 0
    for index in range(pc, len(program)):
        op = program.decoded[index].opcode
        depth += {Opcode.LBEG: 1, Opcode.LEND: -1}.get(op, 0)
        if depth == 0:
            return index + 1
    return len(program)


def run_sequential(programs: list[Program], config: SystemConfig, memory: Memory,
                   step_limit: int = DEFAULT_STEP_LIMIT) -> ExecutionResult:
    check_programs(programs, config)
    functions = AcceleratorFunctions(config)
    result = ExecutionResult(memory, [])
    for pid, program in enumerate(programs):
        gprs, loops, pc = GPRBank(config.hts.gprs), LoopStack(config.hts.loop_depth), 0
        steps = StepCounter(pid, program, step_limit)
        window = config.window(pid)
        while pc < len(program):
            steps.count(pc)
            word = program.decoded[pc]
            op, next_pc = word.opcode, pc + 1
            regions = task_regions(word, gprs) if op == Opcode.TASK else None
            fault = access_fault(word, regions, window)
            if fault is not None:
                result.faults.append(Fault(pid, pc, *fault, program.location(pc)))
                break
            if op == Opcode.TASK:
                data = functions.run(memory, word.accel_id, *regions, word.metadata)
                result.tasks.append(ExecutedTask(pid, pc, word.accel_id, regions, data))
            elif op in (Opcode.MOV, Opcode.ADD, Opcode.MUL):
                execute_register_op(word, gprs)
            elif op == Opcode.JUMP:
                next_pc = pc + word.offset
            elif op == Opcode.IF:
                x = memory.first_word(word.a) if word.memory_branch else gprs[word.a]
                if branch_taken(word.cond, x, gprs[word.b]):
                    next_pc = pc + word.offset
            elif op == Opcode.LBEG:
                if not begin_loop(word, pc, gprs, loops):
                    next_pc = _after_matching_lend(program, pc)
            elif op == Opcode.LEND:
                back = end_loop(word, gprs, loops)
                if back is not None:
                    next_pc = back
            pc = next_pc
        result.instructions += steps.steps
        result.registers.append(gprs.snapshot())
    return result
