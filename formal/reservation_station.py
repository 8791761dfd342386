"""Formal harness of one reservation station (``hts.hdl.reservation_station``)."""

from amaranth.hdl import Module

from hts.hdl.primitives import popcount
from hts.hdl.reservation_station import ReservationStation

from .harness import Harness, PropertyGroup, free_inputs
from .queues import age_order_properties

__all__ = ["ReservationStationHarness"]


class ReservationStationHarness(Harness):
    """A station with the window, the dispatch arbiter and the branch unit left free."""

    GROUPS = (PropertyGroup("age_order", "prove", 2),)
    ASSUMPTIONS = ("insert_only_with_room",)

    def build(self, m: Module):
        station = m.submodules.station = ReservationStation(self.config)
        free_inputs(m, station)
        # The window moves no more tasks of a class than its station's room (its
        # has_room count, hdl/window.py).
        self.assume(m, "insert_only_with_room", popcount(station.insert_valid) <= station.room)
        age_order_properties(self, m, station)
