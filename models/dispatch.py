"""Issue and dispatch: the two stages between the dispatch window and the accelerators.

Issue moves up to ``dispatch_width`` tasks from the window into their class's
reservation station, within the room the stations had at the start of the cycle.
Dispatch lets each station offer its oldest ready task when its class has a free
instance; the offers of the ``dispatch_width`` lowest-numbered classes start. RTL:
``hdl/window.py`` (issue) and ``hdl/dispatch.py`` (the arbiter).
"""

from hts.assembler import Program

from .asr import AcceleratorStatus, Running
from .reservation_station import ReservationStation
from .timing import DeviceTiming
from .window import DecodedTask, DispatchWindow

__all__ = ["Dispatch"]


class Dispatch:
    def __init__(self, width: int, classes: list, timing: DeviceTiming, interrupt_latency: int = 0):
        """``interrupt_latency``: the software runtime learns of a completion that much later,
        and the instance waits idle meanwhile (0 for the hardware scheduler)."""
        self.width, self.classes, self.timing = width, classes, timing
        self.interrupt_latency = interrupt_latency

    def issue(self, window: DispatchWindow, stations: list[ReservationStation],
              station_room: list[int]) -> list[DecodedTask]:
        """Move tasks from the window into their stations; the tasks moved, in issue order."""
        moved = window.select(station_room, self.width)
        for task in moved:
            stations[task.class_index].tasks.append(task)
        return moved

    def dispatch(self, t: int, stations: list[ReservationStation], asr: AcceleratorStatus,
                 programs: list[Program]) -> list[Running]:
        """Start the offers of the lowest-numbered classes on free instances; the runs started, in class order."""
        started = []
        for index, task, instance in self._offers(stations, asr)[: self.width]:
            latency = self.timing.cycles(self.classes[index], programs[task.pid].decoded[task.pc])
            run = Running(task, instance, t, t + latency + self.interrupt_latency, computing=latency)
            stations[index].remove(task)
            asr.occupy(run)
            started.append(run)
        return started

    @staticmethod
    def _offers(stations: list[ReservationStation], asr: AcceleratorStatus) -> list[tuple]:
        """(class, task, instance) of every station with a ready task and a free instance, in class order."""
        offers = []
        for index, station in enumerate(stations):
            task = station.oldest_ready()
            instance = asr.free_instance(index)
            if task is not None and instance is not None:
                offers.append((index, task, instance))
        return offers
