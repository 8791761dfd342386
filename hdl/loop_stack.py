"""Loop stack of one process, with speculation checkpoints.

RTL of ``hts.models.loop_stack``: frames in a shift register whose slot 0 is the top, so
``top`` comes straight from registers.
"""

from amaranth.hdl import Assert, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import loop_frame_layout
from .mutation import mutable

__all__ = ["LoopStack"]


class LoopStack(wiring.Component):
    """``hts.loop_depth`` frames and ``hts.spec_ids`` snapshots; one operation a cycle.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    top, empty, depth : Out
        The innermost frame (meaningless while ``empty``), and the frames held.
    push, replace, pop, frame : In
        ``lbeg`` pushes ``frame``; ``lend`` replaces the top with it, or pops.
    checkpoint_en, checkpoint_slot, restore_en, restore_slot : In
        Copy the stack into a slot; bring it back from one.
    """

    def __init__(self, config: SystemConfig):
        self._capacity = config.hts.loop_depth
        self._slots = config.hts.spec_ids
        frame = loop_frame_layout(config)
        slot = bits_for(config.hts.spec_ids)
        super().__init__({
            "push": In(1),
            "replace": In(1),
            "pop": In(1),
            "frame": In(frame),
            "top": Out(frame),
            "empty": Out(1),
            "depth": Out(bits_for(self._capacity + 1)),
            "checkpoint_en": In(1),
            "checkpoint_slot": In(slot),
            "restore_en": In(1),
            "restore_slot": In(slot),
        })
        self._frame = frame

    def elaborate(self, platform):
        m = Module()
        capacity = self._capacity
        # No reset, at rst or a start: frames below the depth and dead snapshots are never read.
        frames = Signal(data.ArrayLayout(self._frame, capacity), reset_less=True)   # frames[0] is the top
        m.d.comb += [self.top.eq(frames[0]), self.empty.eq(self.depth == 0)]

        ops = [self.push, self.replace, self.pop, self.restore_en]
        # Checked at the edge, where the operations land.
        m.d.sync += [
            Assert(sum(ops) <= 1, "more than one loop stack operation in a cycle"),
            Assert(~self.push | (self.depth < capacity), "loop stack overflow"),
            Assert(~(self.replace | self.pop) | ~self.empty, "loop stack underflow"),
        ]

        snapshot = data.StructLayout({"frames": frames.shape(), "depth": self.depth.shape()})
        snapshots = Signal(data.ArrayLayout(snapshot, self._slots), reset_less=True)
        with m.If(self.push):
            m.d.sync += [frames[0].eq(self.frame), self.depth.eq(self.depth + 1)]
            m.d.sync += [frames[level].eq(frames[level - 1]) for level in range(1, capacity)]
        with m.Elif(self.replace):
            m.d.sync += frames[0].eq(self.frame)
        with m.Elif(self.pop):
            # The bottom slot keeps its stale frame: below the depth, nothing is read.
            m.d.sync += [frames[level].eq(frames[level + 1]) for level in range(capacity - 1)]
            m.d.sync += self.depth.eq(self.depth - 1)
        with m.Elif(mutable("loop_stack_restore_lost", self.restore_en, 0)):
            restored = snapshots[self.restore_slot]
            m.d.sync += [frames.eq(restored.frames), self.depth.eq(restored.depth)]
        with m.If(self.checkpoint_en):
            saved = snapshots[self.checkpoint_slot]
            m.d.sync += [saved.frames.eq(frames), saved.depth.eq(self.depth)]
        return m
