"""Hypothesis strategy: valid assembly source for a configuration, in every syntax the
assembler accepts (plain hex, 0x, 0d, rN registers, labels and numeric offsets, comments).
"""

from hypothesis import strategies as st

from hts.base.config import SystemConfig


def _number(draw, value: int) -> str:
    form = draw(st.sampled_from(["hex", "0x", "0d"]))
    return {"hex": f"{value:x}", "0x": f"0x{value:X}", "0d": f"0d{value}"}[form]


def _register(draw, config: SystemConfig) -> str:
    index = draw(st.integers(0, config.hts.gprs - 1))
    return f"r{index}" if draw(st.booleans()) else _number(draw, index)


def _tail(draw, config: SystemConfig, k: int, metadata: bool = True) -> list[str]:
    """taskid pid K metadata."""
    fields = [_number(draw, draw(st.integers(0, 15))), _number(draw, draw(st.integers(0, config.hts.processes - 1))),
              _number(draw, k)]
    if metadata:
        fields.append(_number(draw, draw(st.integers(0, (1 << 60) - 1))))
    return fields


def _task(draw, config: SystemConfig) -> list[str]:
    acc = draw(st.sampled_from(config.accelerators))
    indirect = draw(st.booleans())
    fields = []
    for _ in range(2):  # input region, then output region
        size = draw(st.integers(0, min(255, config.memory.blocks)))
        base = _register(draw, config) if indirect else _number(
            draw, draw(st.integers(0, config.memory.blocks - size)))
        fields += [base, _number(draw, size)]
    k = int(indirect) | draw(st.sampled_from([0, 2, 4, 6]))  # bits 1-3 of a task's K are carried, unused
    return [acc.name, *fields, *_tail(draw, config, k)]


def _alu(draw, config: SystemConfig) -> list[str]:
    op = draw(st.sampled_from(["mov", "add", "mul"]))
    if op == "mov":
        a, b = _number(draw, draw(st.integers(0, 0xFFFF))), "0"
    else:
        a, b = _register(draw, config), _register(draw, config)
    # control instructions may leave out the metadata field
    return [op, a, b, _register(draw, config), "0", *_tail(draw, config, 0, metadata=draw(st.booleans()))]


class _Jump:
    """A jump or if whose target is item ``target`` of its own block (len(block) = the block's end)."""

    def __init__(self, words: list[str], target: int):
        self.words, self.target = words, target


def _block(draw, config: SystemConfig, depth: int, budget: list[int]):
    items = []
    for _ in range(draw(st.integers(1, 6))):
        if budget[0] <= 0:
            break
        budget[0] -= 1
        kind = draw(st.sampled_from(["task", "task", "alu", "loop", "jump"]))
        if kind == "loop" and depth < config.hts.loop_depth:
            counter = draw(st.integers(0, config.hts.gprs - 1))
            body = _block(draw, config, depth + 1, budget)
            items.append(("loop", draw(st.integers(0, 0xFFFF)), counter, body))
        elif kind == "jump":
            items.append(("jump", draw(st.booleans()), draw(st.integers(0, 1 << 20))))
        elif kind == "alu":
            items.append(("line", _alu(draw, config)))
        else:
            items.append(("line", _task(draw, config)))
    return items


def _layout(draw, config, items, out: list, jumps: list):
    """Flatten items into ``out`` (list of word lists), recording item start PCs."""
    starts = []
    for item in items:
        starts.append(len(out))
        if item[0] == "line":
            out.append(item[1])
        elif item[0] == "loop":
            _, count, counter, body = item
            reg = f"r{counter}"
            out.append(["lbeg", _number(draw, count), reg, "0", "0", *_tail(draw, config, 0)])
            _layout(draw, config, body, out, jumps)
            out.append(["lend", "0", reg, "0", "0", *_tail(draw, config, 0)])
        else:
            _, is_if, choice = item
            jumps.append((len(out), is_if, choice, starts, items))
            out.append(None)  # filled in once every start is known
    starts.append(len(out))   # the block's end: its lend, or the program's end
    return starts


@st.composite
def program_sources(draw, config: SystemConfig, max_items: int = 30) -> str:
    items = _block(draw, config, 0, [max_items])
    out, jumps = [], []
    _layout(draw, config, items, out, jumps)
    label_at: dict[int, str] = {}
    # Resolve each jump against the starts of its own block (recorded by _layout).
    for pc, is_if, choice, starts, block in jumps:
        targets = starts[: len(block) + 1]
        target = targets[choice % len(targets)]
        if target == len(out) and draw(st.booleans()):
            target += draw(st.integers(0, 100))  # anywhere past the end ends the program
        if target < len(out) and draw(st.booleans()):
            name = label_at.setdefault(target, f"L{target}")
            c = name
        else:
            offset = target - pc
            c = f"-{-offset:x}" if offset < 0 and draw(st.booleans()) else _number(draw, offset & 0xFFFF)
        if is_if:
            memory = draw(st.booleans())
            k = memory << 3 | draw(st.booleans()) << 2 | draw(st.integers(0, 3))
            a = _number(draw, draw(st.integers(0, config.memory.blocks - 1))) if memory else _register(draw, config)
            out[pc] = ["if", a, _register(draw, config), c, "0", *_tail(draw, config, k)]
        else:
            out[pc] = ["jump", "0", "0", c, "0", *_tail(draw, config, 0)]
    lines = []
    for pc, words in enumerate(out):
        prefix = f"{label_at[pc]}: " if pc in label_at else ""
        comment = draw(st.sampled_from(["", " ; note", "  # note"]))
        lines.append(prefix + " ".join(words) + comment)
    return "\n".join(lines) + "\n"
