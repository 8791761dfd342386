"""Architectural effect of instructions on a process: PC, GPRs, loop stack, task regions.

Shared by the in-order executor (the reference for sequential equivalence) and the
decode stage of the cycle model, so the two cannot disagree on what an instruction does.
"""

from hts.config import SystemConfig
from hts.errors import Location, SourceError
from hts.isa import Opcode, Word, alu

from .gpr import GPRBank
from .loop_stack import LoopFrame, LoopStack

__all__ = ["execute_register_op", "begin_loop", "end_loop", "task_regions", "Regions"]

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


def task_regions(word: Word, gprs: GPRBank, config: SystemConfig, where: Location) -> Regions:
    """Home-memory regions of a task, reading A and C from GPRs when K bit 0 is set."""
    if not word.indirect:
        return word.a, word.b, word.c, word.d
    in_base, out_base = gprs[word.a], gprs[word.c]
    for base, size, reg, what in ((in_base, word.b, word.a, "input"), (out_base, word.d, word.c, "output")):
        if base + size > config.memory.blocks:
            raise SourceError(f"{what} region from r{reg} = {base:#x} ({size} blocks) lies past the end "
                              f"of memory (memory.blocks = {config.memory.blocks:#x})", where)
    return in_base, word.b, out_base, word.d
