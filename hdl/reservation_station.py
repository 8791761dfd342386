"""Reservation station of one accelerator class: tasks waiting for their dependences.

RTL of ``hts.models.reservation_station`` as ``models/hts.py`` drives it (``_issue``,
``_dispatch``, ``_squash``, ``_confirm``, ``_end_of_cycle``); see
docs/microarchitecture.md for its timing. Same fixed-slot queue with an age matrix as
the dispatch window (:class:`hts.hdl.window.AgeQueue`).
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

    Ports, besides those of :class:`AgeQueue` (``room``: the window's ``station_room``
    for this class):

    - ``insert_valid``, ``insert_task`` (in, from the window): up to ``dispatch_width``
      tasks, oldest first; the top level routes the window's ``issue_task`` here with
      ``insert_valid[k] = issue_to[k][this class]`` (the window's one-hot class of a valid
      position), so the valid bits need not be contiguous. They land
      at the edge behind every task that stays, with this cycle's end-of-cycle updates;
      the window sends only what ``room`` allows;
    - ``insert_waits_clear`` (in, from the window's ``issue_waits_clear``): per port,
      the inserted task's ``waits`` is empty once this cycle's ``broadcast`` is cleared;
    - ``offer_valid``, ``offer_task`` (out, to the dispatch arbiter): the oldest entry,
      not squashed this cycle, whose ``waits`` is empty (start-of-cycle state), as a
      queued record (the arbiter completes it from the tracker);
    - ``take`` (in, from the dispatch arbiter): the offered task leaves at the edge
      (ignored without an offer).

    Besides the queue's registered state, ``waits_empty`` (one bit per slot) says that
    the entry's ``waits`` is empty: at the edge the slot reduces its own record's, or
    takes an arrival's from ``insert_waits_clear``, so an offer starts from flip-flops
    (every simulation asserts it against ``waits``).
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
        """Simulation only (and not under reset): each valid slot's ``waits_empty`` is its ``waits`` reduced."""
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
