"""Loop stack of one process, with speculation checkpoints.

RTL of ``hts.models.loop_stack``; decode drives it as ``begin_loop`` and ``end_loop`` in
models/control.py do: ``lbeg`` pushes, ``lend`` reads the top and replaces it with one
iteration fewer, or pops it after the last. The frames sit in a shift register whose
slot 0 is the top, so ``top`` comes straight from registers: decode indexes a GPR read
port with ``top.counter`` and decides loop back on ``top.remaining`` in the same cycle.
"""

from amaranth.hdl import Assert, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for

from .interfaces import loop_frame_layout
from .mutation import mutable

__all__ = ["LoopStack"]


class LoopStack(wiring.Component):
    """``hts.loop_depth`` frames and ``hts.spec_ids`` snapshots of the whole stack.

    Outputs (combinational from registers, the state at the start of the cycle):

    - ``top`` (out, to decode): the innermost frame; meaningless while ``empty``;
    - ``empty`` (out), ``depth`` (out): frames on the stack.

    Updates (land at the clock edge; at most one of push, replace, pop and restore per
    cycle, since decode executes one instruction per cycle and a restore happens only in
    a cycle the process does not decode; asserted):

    - ``push`` (in, ``lbeg`` with A > 0): ``frame`` becomes the new top; only while not
      full (the assembler bounds nesting by ``hts.loop_depth``);
    - ``replace`` (in, ``lend`` looping back): ``frame`` replaces the top;
    - ``pop`` (in, ``lend`` of the last iteration): drop the top;
    - ``frame`` (in): the frame pushed or written by ``replace``;
    - ``checkpoint_en``, ``checkpoint_slot`` (in, from decode): copy the stack and its
      depth as they are at the start of the cycle into a slot, whatever else lands
      (decode does so into the lowest free speculation ID's slot in every cycle, as for
      the GPR bank);
    - ``restore_en``, ``restore_slot`` (in, the branch unit on a misprediction): the
      stack and depth come back from a slot.
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
        # Frames below the depth and snapshots of no live checkpoint are never read: no
        # reset (record_register, hdl/primitives.py), neither at rst nor at a process start.
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
