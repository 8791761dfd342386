"""Pass 4: check a resolved program against the system configuration.

Registers must exist, regions must lie in home memory, PIDs must name a process, loops
must pair and nest no deeper than the loop stack, and control may enter or leave a loop
body only through its ``lbeg``/``lend`` (a jump into or out of a body would leave the
loop stack inconsistent; a target at or past the end of the program ends the program
from anywhere).
"""

from hts.base.config import SystemConfig
from hts.base.errors import SourceError, SourceErrors
from hts.isa import Opcode, Role

from .resolver import Resolved

__all__ = ["check"]


def _check_fields(item: Resolved, config: SystemConfig, errors: list[SourceError]):
    word, fields = item.word, item.statement.fields
    for name, role in item.roles.items():
        value = getattr(word, name)
        if role == Role.REGISTER and value >= config.hts.gprs:
            errors.append(SourceError(f"register r{value} does not exist (hts.gprs = {config.hts.gprs})",
                                      fields[name].location))
    if word.pid >= config.hts.processes:
        errors.append(SourceError(f"pid {word.pid} does not exist (hts.processes = {config.hts.processes})",
                                  fields["pid"].location))
    blocks = config.memory.blocks
    if item.opcode == Opcode.IF and item.roles["a"] == Role.BLOCK and word.a >= blocks:
        errors.append(SourceError(f"block {word.a:#x} read by the branch lies past the end of memory "
                                  f"(memory.blocks = {blocks:#x})", fields["a"].location))
    if item.opcode != Opcode.TASK or item.roles["a"] != Role.BLOCK:
        return
    for base, size, what in (("a", "b", "input"), ("c", "d", "output")):
        start = getattr(word, base)
        end = start + getattr(word, size)
        if end > blocks:
            errors.append(SourceError(f"{what} region [{start:#x}, {end:#x}) lies past the end of memory "
                                      f"(memory.blocks = {blocks:#x})", fields[base].location))


def _loop_contexts(program: list[Resolved], config: SystemConfig, errors: list[SourceError]) -> list[int | None]:
    """Pair lbeg/lend and return, per instruction, the pc of its innermost enclosing lbeg.

    An lend belongs to the body it closes; an lbeg to the body around it.
    """
    open_loops: list[Resolved] = []
    contexts = []
    for item in program:
        if item.opcode == Opcode.LEND:
            if not open_loops:
                errors.append(SourceError("lend without lbeg", item.statement.location))
            else:
                opened = open_loops[-1]
                if opened.word.b != item.word.b:
                    errors.append(SourceError(
                        f"lend closes the loop counted by r{item.word.b}, but the innermost open loop "
                        f"(line {opened.statement.location.line}) is counted by r{opened.word.b}",
                        item.statement.fields["b"].location))
        contexts.append(open_loops[-1].statement.pc if open_loops else None)
        if item.opcode == Opcode.LBEG:
            open_loops.append(item)
            if len(open_loops) > config.hts.loop_depth:
                errors.append(SourceError(f"loops nest {len(open_loops)} deep, more than the loop stack "
                                          f"holds (hts.loop_depth = {config.hts.loop_depth})",
                                          item.statement.location))
        elif item.opcode == Opcode.LEND and open_loops:
            open_loops.pop()
    for item in open_loops:
        errors.append(SourceError("lbeg without lend", item.statement.location))
    return contexts


def _check_targets(program: list[Resolved], contexts: list[int | None], errors: list[SourceError]):
    for item in program:
        if item.opcode not in (Opcode.JUMP, Opcode.IF):
            continue
        target = item.statement.pc + item.word.offset
        where = item.statement.fields["c"].location
        if target < 0:
            errors.append(SourceError(f"target {target} lies before the start of the program", where))
        elif target < len(program) and contexts[target] != contexts[item.statement.pc]:
            line = program[target].statement.location.line
            errors.append(SourceError(f"target (line {line}) is in a different loop body than the "
                                      f"{item.statement.keyname.text}; control may enter or leave a loop "
                                      "only through lbeg and lend", where))


def check(program: list[Resolved], config: SystemConfig):
    errors: list[SourceError] = []
    if len(program) > config.hts.program_words:
        errors.append(SourceError(f"the program has {len(program)} instructions, more than program memory holds "
                                  f"(hts.program_words = {config.hts.program_words})",
                                  program[config.hts.program_words].statement.location))
    for item in program:
        _check_fields(item, config, errors)
    contexts = _loop_contexts(program, config, errors)
    _check_targets(program, contexts, errors)
    if errors:
        raise SourceErrors(errors)
