"""Formal harness of the dispatch window (``hts.hdl.window.DispatchWindow``)."""

from amaranth.hdl import Cat, Module

from hts.hdl.window import DispatchWindow

from .harness import Harness, PropertyGroup, free_inputs
from .queues import age_order_properties

__all__ = ["WindowHarness"]


class WindowHarness(Harness):
    """The window with decode, the stations and the branch unit left free."""

    GROUPS = (PropertyGroup("age_order", "prove", 2),)
    ASSUMPTIONS = ("append_only_with_room", "station_room_in_range")

    def build(self, m: Module):
        window = m.submodules.window = DispatchWindow(self.config)
        free_inputs(m, window)
        # Decode appends only when the window reports room (docs/microarchitecture.md, step 8).
        self.assume(m, "append_only_with_room", ~window.append | (window.room != 0))
        # Each station reports a count of its free entries, at most its size.
        self.assume(m, "station_room_in_range",
                    Cat(*(room <= self.config.hts.rs_entries for room in window.station_room)).all())
        age_order_properties(self, m, window)
