"""Formal harness of the enqueue stage (``hts.hdl.enqueue.Enqueue``): its squash."""

from amaranth.hdl import Module, Mux, Signal

from hts.hdl.enqueue import Enqueue
from hts.hdl.primitives import index_set

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["EnqueueHarness"]


class EnqueueHarness(Harness):
    """The enqueue stage with decode, the tracker, the branch unit and the copy-back
    engine left free.

    The stage holds the task decode handed over at the last edge for exactly one cycle.
    A squash in that cycle must drop it (no ``append``) and report its tag in
    ``squashed_tags``, which the top level releases. The task arriving at the edge of the
    squash cycle is decode's, which never decodes under an ID being squashed
    (``arrival_not_squashed``); with that, nothing under a squashed ID is held the cycle
    after.
    """

    # The base case spans reset, an arrival, the squash of the held task and the cycle after.
    GROUPS = (PropertyGroup("squash", "prove", 4),)
    ASSUMPTIONS = ("arrival_not_squashed",)

    def build(self, m: Module):
        stage = m.submodules.enqueue = Enqueue(self.config)
        free_inputs(m, stage)
        tags = self.config.hts.tracker_entries
        held, squash = stage.held, stage.squash
        # Decode does not decode a process in the cycle its squash restores it (the branch
        # unit's ``restore``, hdl/decode.py: Stall.BRANCH), and another process's masks
        # never hold this process's IDs; so a task decoded now is under no ID squashed now.
        self.assume(m, "arrival_not_squashed",
                    ~stage.decoded.valid | ((stage.decoded.task.mask & squash) == 0))

        hit = Signal()
        m.d.comb += hit.eq(stage.occupied & (held.mask & squash).any())
        self.check(m, "squash", "squashed_task_not_appended", stage.append == (stage.occupied & ~hit))
        self.check(m, "squash", "squashed_tags_are_the_held_task",
                   stage.squashed_tags == Mux(hit, index_set([1], [held.tag], tags), 0))
        was_squash = Signal.like(squash)
        m.d.sync += was_squash.eq(squash)
        # Zero after reset: the first cycle checked compares with no squash.
        self.check(m, "squash", "nothing_held_under_a_squashed_id",
                   ~stage.occupied | ((held.mask & was_squash) == 0))
        self.cover(m, "squash", "squash_drops_the_held_task", hit)
        if self.config.hts.spec_ids > 1:   # one ID cannot squash one task and spare another
            self.cover(m, "squash", "squash_spares_the_held_task",
                       stage.occupied & squash.any() & ~hit & held.mask.any())
