"""Reservation station of one accelerator class: tasks waiting for their dependences.

RTL of ``hts.models.reservation_station``, on the window's
:class:`hts.hdl.window.AgeQueue`. Its order matrix is the order in which slots became
ready in the station, not their age.
"""

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import queued_task_layout
from .mutation import mutable
from .primitives import oldest, select, update_age_matrix, wire, youngest
from .window import AgeQueue

__all__ = ["ReservationStation"]


class ReservationStation(AgeQueue):
    """``hts.rs_entries`` tasks of one class, offering the first ready one to the dispatch arbiter.

    ``older[i]`` bit ``j``: slot ``j`` became ready before slot ``i``. In one edge the
    arrivals that are ready come after the slots ready already, in port order, and the slot
    the wake-up reaches (there is at most one) after them.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    insert_valid, insert_task : In, per way
        From the window: tasks issued to this class, with their registered ``ready``.
    offer_valid, offer_task, take : Out, Out, In
        The slot that became ready first, valid and not doomed; it leaves when taken.
    """

    def __init__(self, config: SystemConfig):
        hts, task = config.hts, queued_task_layout(config)
        self._width = hts.dispatch_width
        super().__init__(config, hts.rs_entries, {
            "insert_valid": In(hts.dispatch_width),
            "insert_task": In(data.ArrayLayout(task, hts.dispatch_width)),
            "offer_valid": Out(1),
            "offer_task": Out(task),
            "take": In(1),
        })

    def _arrivals(self) -> list:
        return [(self.insert_valid[port], self.insert_task[port]) for port in range(self._width)]

    def _departures(self, m: Module, movable: list) -> list:
        ready = [can_move & mutable("station_offers_waiting", entry.ready, 1)
                 for can_move, entry in zip(movable, self.entries)]
        first_ready = mutable("station_offers_last_ready", oldest, youngest)(ready, self.older)
        m.d.comb += [self.offer_valid.eq(Cat(*ready).any()), self.offer_task.eq(select(first_ready, self.entries))]
        return [chosen & self.take for chosen in first_ready]

    def _update_order(self, m: Module, staying: list, arriving, takes: list):
        capacity, ports = self._capacity, range(self._width)
        ready_staying = Cat(*(stays & entry.ready for stays, entry in zip(staying, self.entries)))
        # Per slot: which arrival port it takes, if that arrival is ready; whether it is woken.
        arrived_ready = [[takes[slot][port] & self.insert_task[port].ready for port in ports]
                         for slot in range(capacity)]
        woken = []
        for slot, entry in enumerate(self.entries):
            arrival = select(takes[slot], [self.insert_task[port] for port in ports])
            record = self._task(Cat(arrival)) if self._width > 1 else self.insert_task[0]
            took = Cat(*takes[slot]).any()
            woken_staying = staying[slot] & ~entry.ready & self._woken(entry)
            woken_arriving = took & ~Cat(*arrived_ready[slot]).any() & self._woken(record)
            woken.append(wire(m, woken_staying | woken_arriving, f"woken_{slot}"))
        arrivals_ready = Cat(*(Cat(*row).any() for row in arrived_ready))
        newly = wire(m, arrivals_ready | Cat(*woken), "newly_ready")
        rows = []
        for slot in range(capacity):
            earlier = Cat(*(Cat(*(arrived_ready[slot][port] & arrived_ready[other][before]
                                  for port in ports for before in range(port))).any()
                            for other in range(capacity)))
            rows.append(ready_staying | Mux(woken[slot], arrivals_ready, earlier))
        update_age_matrix(m, self.older, newly, rows)
