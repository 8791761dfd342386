"""Formal harness of the enqueue stage (``hts.hdl.enqueue.Enqueue``): its squash and its search."""

from amaranth.hdl import Module, Mux, Signal

from hts.hdl.enqueue import Enqueue
from hts.hdl.primitives import index_set

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["EnqueueHarness"]


class EnqueueHarness(Harness):
    """The enqueue stage with decode, the tracker, the branch unit and the copy-back
    engine left free.

    The stage holds the task decode handed over for the cycles of its tracker search, a
    row a cycle; decode hands over none while the search goes on
    (``arrival_waits_for_the_search``). A squash in any of them must drop it (no
    ``append``) and report its tag in ``squashed_tags``, which the top level releases. The
    task arriving at the edge of the squash cycle is decode's, which never decodes under an
    ID being squashed (``arrival_not_squashed``); with that, nothing under a squashed ID is
    held the cycle after. Each cycle of its search the task registers with what the row
    found, its own tag aside, unless squashed then; it goes to the window in its last row's
    cycle.
    """

    # The base case spans reset, an arrival, the squash of the held task and the cycle after.
    GROUPS = (PropertyGroup("squash", "prove", 4),
              PropertyGroup("search", "prove", lambda config: config.hts.tracker_rows + 2))
    ASSUMPTIONS = ("arrival_not_squashed", "arrival_waits_for_the_search")

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
        self.assume(m, "arrival_waits_for_the_search", ~stage.decoded.valid | ~stage.searching_next)

        hit = Signal()
        m.d.comb += hit.eq(stage.occupied & (held.mask & squash).any())
        self.check(m, "squash", "squashed_task_not_appended",
                   stage.append == (stage.occupied & ~stage.searching_next & ~hit))
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
        self._search(m, stage, tags, hit)

    def _search(self, m: Module, stage: Enqueue, tags: int, hit):
        """The task registers with each row's finds, its own tag aside, unless squashed; it
        stays until the tracker's last row, and not past it."""
        own = index_set([1], [stage.held.tag], tags)
        self.check(m, "search", "registers_while_held_and_not_squashed", stage.register == (stage.occupied & ~hit))
        self.check(m, "search", "registers_with_the_row_less_its_own_tag",
                   ~stage.occupied | (stage.producers == (stage.depends & ~own)))
        self.cover(m, "search", "registers_with_a_producer", stage.register & stage.producers.any())
        if self.config.hts.tracker_rows > 1:
            self.check(m, "search", "held_until_the_last_row",
                       stage.searching_next == (stage.occupied & ~stage.search_last))
            was_staying = Signal()
            m.d.sync += was_staying.eq(stage.searching_next & ~stage.squashed_tags.any())
            self.check(m, "search", "stays_while_the_search_goes_on", ~was_staying | stage.occupied)
            self.cover(m, "search", "appended_after_a_row_before", stage.append & was_staying)
