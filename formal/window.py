"""Formal harness of the dispatch window (``hts.hdl.window.DispatchWindow``)."""

from amaranth.hdl import Cat, Module, Signal

from hts.hdl.window import DispatchWindow

from .harness import Harness, PropertyGroup, free_inputs
from .queues import age_order_properties, registered_squash, squash_properties

__all__ = ["WindowHarness"]


class WindowHarness(Harness):
    """The window with decode, the stations and the branch unit left free."""

    # The squash's base case spans reset, an arrival, the squash and the cycle after, so
    # that a squash missing an entry fails as a counterexample from reset.
    GROUPS = (PropertyGroup("age_order", "prove", 2), PropertyGroup("squash", "prove", 4),
              PropertyGroup("wake", "prove", 2))
    ASSUMPTIONS = ("append_only_with_room", "station_room_in_range", "append_not_squashed")

    def build(self, m: Module):
        window = m.submodules.window = DispatchWindow(self.config)
        free_inputs(m, window)
        squash = registered_squash(m, window)
        # Decode appends only when the window reports room (docs/microarchitecture.md, step 8).
        self.assume(m, "append_only_with_room", ~window.append | (window.room != 0))
        # Each station reports a count of its free entries, at most its size.
        self.assume(m, "station_room_in_range",
                    Cat(*(room <= self.config.hts.rs_entries for room in window.station_room)).all())
        # The enqueue stage drops a task under a squashed ID instead of appending it
        # (``append`` is ``occupied & ~squashed`` in hdl/enqueue.py; step 7).
        self.assume(m, "append_not_squashed", ~window.append | ((window.append_task.mask & squash) == 0))
        age_order_properties(self, m, window)
        squash_properties(self, m, window, squash)
        # What the stations' harness assumes of their insertions.
        self.check(m, "squash", "issues_no_squashed_task",
                   Cat(*(~valid | ((task.mask & squash) == 0)
                         for valid, task in zip(window.issue_valid, window.issue_task))).all())
        # The wake-up reaches every queued task: the cycle after, a task that stayed with the
        # woken tag is ready. (The task appended takes its readiness from the enqueue stage.)
        was_woken, woken_tag = Signal(), Signal.like(window.woken.tag)
        was_valid = Signal.like(window.valid)
        m.d.sync += [was_woken.eq(window.woken.valid), woken_tag.eq(window.woken.tag), was_valid.eq(window.valid)]
        stayed_woken = [stayed & valid & (entry.tag == woken_tag)
                        for stayed, valid, entry in zip(was_valid, window.valid, window.entries)]
        self.check(m, "wake", "a_woken_task_is_ready",
                   ~was_woken | Cat(*(~hit | entry.ready for hit, entry in zip(stayed_woken, window.entries))).all())
        self.cover(m, "wake", "a_task_woken", was_woken & Cat(*stayed_woken).any())
