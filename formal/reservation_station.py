"""Formal harness of one reservation station (``hts.hdl.reservation_station``)."""

from amaranth.hdl import Cat, Module

from hts.hdl.primitives import oldest, popcount
from hts.hdl.reservation_station import ReservationStation

from .harness import Harness, PropertyGroup, free_inputs, strict_total_order
from .queues import registered_squash, squash_properties

__all__ = ["ReservationStationHarness"]


class ReservationStationHarness(Harness):
    """A station with the window, the dispatch arbiter, the wake-up and the branch unit left free."""

    # The squash's base case spans reset, an arrival, the squash and the cycle after, so
    # that a squash missing an entry fails as a counterexample from reset.
    GROUPS = (PropertyGroup("ready_order", "prove", 2), PropertyGroup("squash", "prove", 4))
    ASSUMPTIONS = ("insert_only_with_room", "inserts_not_squashed", "tags_distinct")

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
        # A tag names one task in flight: the wake-up's tag meets one slot or arrival at most.
        tags = [(valid, entry.tag) for valid, entry in zip(station.valid, station.entries)]
        tags += [(valid, task.tag) for valid, task in zip(station.insert_valid, station.insert_task)]
        self.assume(m, "tags_distinct", Cat(*(~(a_valid & b_valid) | (a_tag != b_tag)
                                              for i, (a_valid, a_tag) in enumerate(tags)
                                              for b_valid, b_tag in tags[i + 1:])).all())
        ready = Cat(*(valid & entry.ready for valid, entry in zip(station.valid, station.entries)))
        for name, holds in strict_total_order(ready, station.older).items():
            self.check(m, "ready_order", name, holds)
        # The offer is the slot ready first, and a slot is offered only if it is ready.
        first = Cat(*oldest(ready & ~station.doomed, station.older))
        self.check(m, "ready_order", "offers_the_first_ready",
                   station.offer_valid == (ready & ~station.doomed).any())
        self.check(m, "ready_order", "offered_task_is_the_first_ready",
                   ~station.offer_valid | Cat(*(~chosen | (station.offer_task.tag == entry.tag)
                                                for chosen, entry in zip(first, station.entries))).all())
        if self.config.hts.rs_entries > 1:
            self.cover(m, "ready_order", "two_ready_slots", popcount(ready) >= 2)
        squash_properties(self, m, station, squash)
