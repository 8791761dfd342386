"""Issue and dispatch: the two stages between the dispatch window and the accelerators.

Issue moves up to ``dispatch_width`` tasks from the window into their class's
reservation station, within the room the stations had at the start of the cycle.
Dispatch lets each station offer its first ready task when its class has a free
instance; the offers of the ``dispatch_width`` lowest-numbered classes are granted. A
granted task holds its instance from the grant and starts the cycle after
(``START_DELAY``), when the shell has its regions. RTL: ``hdl/window.py`` (issue) and
``hdl/dispatch.py`` (the arbiter).
"""

from hts.assembler import Program

from .asr import AcceleratorStatus, Running
from .reservation_station import ReservationStation
from .timing import DeviceTiming
from .window import DecodedTask, DispatchWindow

__all__ = ["Dispatch", "START_DELAY", "squash_queues"]

# Cycles from a dispatch grant to the accelerator's first cycle: the grant is registered,
# and the shell reads the task's regions by the registered tag (docs/microarchitecture.md,
# "Dispatch: the grant's cycle and the start cycle").
START_DELAY = 1


def squash_queues(window: DispatchWindow, stations: list[ReservationStation], bits: int) -> list[DecodedTask]:
    """Remove from the window and the stations every task under a speculation ID of ``bits``; the tasks removed."""
    squashed = [task for task in window.tasks if task.mask & bits]
    for task in squashed:
        window.tasks.remove(task)
    for station in stations:
        in_station = [task for task in station.tasks if task.mask & bits]
        for task in in_station:
            station.remove(task)
        squashed += in_station
    return squashed


class Dispatch:
    def __init__(self, width: int, classes: list, timing: DeviceTiming, interrupt_latency: int = 0,
                 start_delay: int = START_DELAY):
        """``interrupt_latency``: the software runtime learns of a completion that much later,
        and the instance waits idle meanwhile (0 for the hardware scheduler).
        ``start_delay``: cycles from a grant to the task's start (0 for the runtime, which
        starts a task as it dispatches it)."""
        self.width, self.classes, self.timing = width, classes, timing
        self.interrupt_latency, self.start_delay = interrupt_latency, start_delay

    def issue(self, window: DispatchWindow, stations: list[ReservationStation],
              station_room: list[int]) -> list[DecodedTask]:
        """Move tasks from the window into their stations; the tasks moved, in issue order."""
        moved = window.select(station_room, self.width)
        for task in moved:
            stations[task.class_index].arrive(task)
        return moved

    def dispatch(self, t: int, stations: list[ReservationStation], asr: AcceleratorStatus,
                 programs: list[Program]) -> list[Running]:
        """Grant the offers of the lowest-numbered classes free instances; the runs granted, in class order."""
        started = []
        for index, task, instance in self._offers(stations, asr)[: self.width]:
            latency = self.timing.cycles(self.classes[index], programs[task.pid].decoded[task.pc])
            start = t + self.start_delay
            run = Running(task, instance, start, start + latency + self.interrupt_latency, computing=latency)
            stations[index].remove(task)
            asr.occupy(run)
            started.append(run)
        return started

    @staticmethod
    def _offers(stations: list[ReservationStation], asr: AcceleratorStatus) -> list[tuple]:
        """(class, task, instance) of every station with a ready task and a free instance, in class order."""
        offers = []
        for index, station in enumerate(stations):
            task = station.first_ready()
            instance = asr.free_instance(index)
            if task is not None and instance is not None:
                offers.append((index, task, instance))
        return offers
