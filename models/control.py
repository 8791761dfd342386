"""Architectural effect of instructions on a process: PC, GPRs, loop stack, task regions.

Shared by the in-order executor (the reference for sequential equivalence) and the
decode stage of the cycle model, so the two cannot disagree on what an instruction does.
"""

from dataclasses import dataclass

from hts.base.config import Window
from hts.base.errors import Location, SourceError
from hts.isa import FaultCause, Opcode, Word, alu

from .gpr import GPRBank
from .loop_stack import LoopFrame, LoopStack

__all__ = ["execute_register_op", "begin_loop", "end_loop", "task_regions", "Regions", "Fault", "access_fault"]

Regions = tuple[int, int, int, int]  # input base, input blocks, output base, output blocks


def execute_register_op(word: Word, gprs: GPRBank):
    """``mov``, ``add`` or ``mul``."""
    if word.opcode == Opcode.MOV:
        gprs[word.c] = word.a
    else:
        gprs[word.c] = alu(word.opcode, gprs[word.a], gprs[word.b])


def begin_loop(word: Word, pc: int, gprs: GPRBank, loops: LoopStack) -> bool:
    """``lbeg``: reset the counter; push a frame unless the loop runs zero times.

    Returns whether the body runs; if not, the caller skips to after the matching lend.
    """
    gprs[word.b] = 0
    if word.a == 0:
        return False
    loops.push(LoopFrame(body_start=pc + 1, counter=word.b, remaining=word.a - 1))
    return True


def end_loop(word: Word, gprs: GPRBank, loops: LoopStack) -> int | None:
    """``lend``: count an iteration; the pc to loop back to, or None when the loop is done."""
    frame = loops.top()
    gprs[frame.counter] = gprs[frame.counter] + 1
    if frame.remaining == 0:
        loops.pop()
        return None
    loops.replace_top(LoopFrame(frame.body_start, frame.counter, frame.remaining - 1))
    return frame.body_start


def task_regions(word: Word, gprs: GPRBank) -> Regions:
    """Home-memory regions of a task, reading A and C from GPRs when K bit 0 is set."""
    if not word.indirect:
        return word.a, word.b, word.c, word.d
    return gprs[word.a], word.b, gprs[word.c], word.d


@dataclass(frozen=True)
class Fault:
    """A process stopped at ``pc`` of its committed path: the instruction there would touch
    memory outside its window. ``cycle`` is when decode met it (None in-order)."""
    pid: int
    pc: int
    cause: FaultCause
    detail: str
    location: Location
    cycle: int | None = None

    def error(self) -> SourceError:
        return SourceError(f"process {self.pid} faulted at pc {self.pc}: {self.detail}", self.location)


def access_fault(word: Word, regions: Regions | None, window: Window) -> tuple[FaultCause, str] | None:
    """Why the memory ``word`` touches (``regions`` for a task) leaves ``window``, or None."""
    bounds = f"the window [{window.base:#x}, {window.end:#x})"
    if word.opcode == Opcode.TASK:
        in_base, in_blocks, out_base, out_blocks = regions
        for cause, base, blocks, field in ((FaultCause.INPUT, in_base, in_blocks, "a"),
                                           (FaultCause.OUTPUT, out_base, out_blocks, "c")):
            if not window.holds(base, blocks):
                source = f" (from r{getattr(word, field)})" if word.indirect else ""
                return cause, (f"{cause.name.lower()} region [{base:#x}, {base + blocks:#x}){source} "
                               f"leaves {bounds}")
    elif word.opcode == Opcode.IF and word.memory_branch and not window.holds(word.a, 1):
        return FaultCause.BRANCH, f"branch block {word.a:#x} lies outside {bounds}"
    return None
