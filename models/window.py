"""Dispatch window: decoded tasks in program order, waiting for room in their station.

Decode has already found each task's dependences; the window only lets tasks of a
class whose reservation station is full step aside, so that younger tasks of other
classes can move on. Each cycle the oldest tasks whose station had room at the start of
the cycle move to it, up to ``hts.dispatch_width`` of them.
"""

from dataclasses import dataclass, field

__all__ = ["DecodedTask", "DispatchWindow"]


@dataclass
class DecodedTask:
    seq: int                  # decode order, for oldest-first selection
    tag: int                  # memory tracker entry
    pid: int
    pc: int
    task_id: int
    accel_id: int
    class_index: int
    reads: tuple[int, int]    # (base, blocks) as delivered to the accelerator: TM when remapped
    writes: tuple[int, int]
    metadata: int
    waits_for: set[int] = field(default_factory=set)   # tags its search found
    ready: bool = False       # every producer it waited for is released (woken)
    mask: int = 0             # speculation IDs of the unresolved branches it is under
    data: str | None = None   # digest of what it read and wrote, once completed
    squashed: bool = False    # completed under a branch that then went the other way


class DispatchWindow:
    def __init__(self, entries: int):
        self.capacity = entries
        self.tasks: list[DecodedTask] = []

    def select(self, station_room: list[int], width: int) -> list[DecodedTask]:
        """Oldest tasks whose station has room (``station_room`` is updated as they are taken)."""
        chosen = []
        for task in self.tasks:
            if len(chosen) == width:
                break
            if station_room[task.class_index] > 0:
                station_room[task.class_index] -= 1
                chosen.append(task)
        for task in chosen:
            self.tasks.remove(task)
        return chosen
