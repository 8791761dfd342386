"""Reservation station of one accelerator class: tasks waiting for their dependences.

RTL of ``hts.models.reservation_station``, on the window's
:class:`hts.hdl.window.AgeQueue`.
"""

from amaranth.hdl import Assert, Cat, Module, ResetSignal, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import queued_task_layout
from .mutation import mutable
from .primitives import oldest, select, youngest
from .window import AgeQueue

__all__ = ["ReservationStation"]


class ReservationStation(AgeQueue):
    """``hts.rs_entries`` tasks of one class, offering the oldest ready one to the dispatch arbiter.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    insert_valid, insert_task, insert_waits_clear : In, per way
        From the window: tasks issued to this class, and whether their ``waits`` is empty.
    offer_valid, offer_task, take : Out, Out, In
        The oldest slot valid, not doomed, with empty ``waits``; it leaves when taken.
    waits_empty : Signal
        Per slot, registered: the record's ``waits`` is empty.
    """

    def __init__(self, config: SystemConfig):
        hts, task = config.hts, queued_task_layout(config)
        self._width = hts.dispatch_width
        super().__init__(config, hts.rs_entries, {
            "insert_valid": In(hts.dispatch_width),
            "insert_task": In(data.ArrayLayout(task, hts.dispatch_width)),
            "insert_waits_clear": In(hts.dispatch_width),
            "offer_valid": Out(1),
            "offer_task": Out(task),
            "take": In(1),
        })
        self.waits_empty = Signal(hts.rs_entries, reset_less=True)

    def _register_slot(self, m: Module, slot: int, own, took: list):
        waits_empty = Signal(name=f"waits_empty_next_{slot}")
        m.d.comb += waits_empty.eq(~own.waits.any())
        for port, took_it in enumerate(took):
            with m.If(took_it):
                m.d.comb += waits_empty.eq(self.insert_waits_clear[port])
        m.d.sync += self.waits_empty[slot].eq(waits_empty)

    def _check_waits_empty(self, m: Module):
        """Simulation only: each valid slot's ``waits_empty`` is its ``waits`` reduced."""
        direct = Cat(*(~entry.waits.any() for entry in self.entries))
        m.d.sync += Assert(ResetSignal() | ((self.valid & (self.waits_empty ^ direct)) == 0),
                           "a waits_empty bit disagrees with waits")

    def _arrivals(self) -> list:
        return [(self.insert_valid[port], self.insert_task[port]) for port in range(self._width)]

    def _departures(self, m: Module, movable: list) -> list:
        self._check_waits_empty(m)
        ready = [can_move & mutable("station_offers_waiting", waits_empty, 1)
                 for can_move, waits_empty in zip(movable, self.waits_empty)]
        oldest_ready = mutable("station_offers_youngest", oldest, youngest)(ready, self.older)
        m.d.comb += [self.offer_valid.eq(Cat(*ready).any()), self.offer_task.eq(select(oldest_ready, self.entries))]
        return [chosen & self.take for chosen in oldest_ready]
