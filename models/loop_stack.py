"""Loop stack of one process: one frame per open ``lbeg``, ``hts.loop_depth`` deep.

A frame keeps the trip count apart from the counter register, so a body that writes
its counter cannot make the loop run forever (docs/isa.md).
"""

from dataclasses import dataclass

__all__ = ["LoopFrame", "LoopStack"]


@dataclass(frozen=True)
class LoopFrame:
    body_start: int    # pc of the first instruction of the body
    counter: int       # GPR index counting iterations
    remaining: int     # iterations still to start after the current one


class LoopStack:
    def __init__(self, depth: int):
        self.depth = depth
        self.frames: list[LoopFrame] = []

    def push(self, frame: LoopFrame):
        # The assembler bounds static nesting by the depth, and control cannot enter a
        # body except through its lbeg, so overflow is a model bug, not a program error.
        assert len(self.frames) < self.depth, "loop stack overflow"
        self.frames.append(frame)

    def top(self) -> LoopFrame:
        return self.frames[-1]

    def replace_top(self, frame: LoopFrame):
        self.frames[-1] = frame

    def pop(self):
        self.frames.pop()

    def snapshot(self) -> tuple[LoopFrame, ...]:
        return tuple(self.frames)

    def restore(self, frames: tuple[LoopFrame, ...]):
        self.frames = list(frames)
