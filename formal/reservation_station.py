"""Formal harness of one reservation station (``hts.hdl.reservation_station``)."""

from amaranth.hdl import Cat, Module

from hts.hdl.primitives import popcount
from hts.hdl.reservation_station import ReservationStation

from .harness import Harness, PropertyGroup, free_inputs
from .queues import age_order_properties, registered_squash, squash_properties

__all__ = ["ReservationStationHarness"]


class ReservationStationHarness(Harness):
    """A station with the window, the dispatch arbiter and the branch unit left free."""

    # The squash's base case spans reset, an arrival, the squash and the cycle after, so
    # that a squash missing an entry fails as a counterexample from reset.
    GROUPS = (PropertyGroup("age_order", "prove", 2), PropertyGroup("squash", "prove", 4))
    ASSUMPTIONS = ("insert_only_with_room", "inserts_not_squashed", "inserts_waits_clear_of_their_waits")

    def build(self, m: Module):
        station = m.submodules.station = ReservationStation(self.config)
        free_inputs(m, station)
        squash = registered_squash(m, station)
        # The window moves no more tasks of a class than its station's room (its
        # has_room count, hdl/window.py).
        self.assume(m, "insert_only_with_room", popcount(station.insert_valid) <= station.room)
        # The window issues only tasks the squash spares (``issues_no_squashed_task``,
        # proved in the window's harness).
        self.assume(m, "inserts_not_squashed",
                    Cat(*(~valid | ((task.mask & squash) == 0)
                          for valid, task in zip(station.insert_valid, station.insert_task))).all())
        # The window reduces each inserted task's waits less the broadcast
        # (``issue_waits_clear_of_the_issued_waits``, proved in the window's harness).
        self.assume(m, "inserts_waits_clear_of_their_waits",
                    Cat(*(~valid | (clear == ~(task.waits & ~station.broadcast).any())
                          for valid, clear, task in zip(station.insert_valid, station.insert_waits_clear,
                                                        station.insert_task))).all())
        age_order_properties(self, m, station)
        squash_properties(self, m, station, squash)
