"""The dispatch window and reservation stations as ``models/hts.py`` drives them, for the RTL tests.

``ModelSurroundings`` holds a window and stations and moves tasks between them with the
model's own issue stage (``Dispatch.issue``). The squash and end-of-cycle lines of
``HTSModel`` that touch the queues are repeated here: the rest of those steps reaches
blocks the queues do not hold. (The queues hold no ranges, so the model's retargets,
which rewrite ranges, have nothing to show on them; the tracker's test and the lockstep
test of the whole scheduler cover them.) Also: random decoded tasks, and their
conversion to and from ``queued_task_layout`` and ``task_layout`` records.
"""

import random

from rtl_sim import region_value

from hts.base.config import SystemConfig
from hts.isa import FIELDS
from hts.models.dispatch import Dispatch, squash_queues
from hts.models.reservation_station import ReservationStation
from hts.models.timing import TableLatency
from hts.models.window import DecodedTask, DispatchWindow

__all__ = ["CONFIGS", "VARIANTS", "ModelSurroundings", "TaskSource", "assert_contents", "bit_set",
           "drive_end_of_cycle", "record_fields", "tags_of", "task_fields", "task_record", "task_record_value",
           "tracker_register_record",
           "delivered_record_fields", "delivered_task_fields", "delivered_task_record"]

# The default with two dispatch ways and a 6-entry window, and with three and a 5-entry one.
VARIANTS = {
    "wide": ("default", {"hts.dispatch_width": 2, "hts.window": 6}),
    "wide3": ("default", {"hts.dispatch_width": 3, "hts.window": 5}),
}
CONFIGS = ["default", "tiny", *VARIANTS]


class ModelSurroundings:
    """An ``HTSModel`` reduced to its window, its stations and its issue stage."""

    def __init__(self, config: SystemConfig):
        self.config = config
        self.window = DispatchWindow(config.hts.window)
        self.stations = [ReservationStation(config.hts.rs_entries) for _ in config.accelerators]
        self.dispatch = Dispatch(config.hts.dispatch_width, list(config.accelerators), TableLatency())

    def queued(self) -> list[DecodedTask]:
        return self.window.tasks + [task for station in self.stations for task in station.tasks]

    def squash(self, spec_bits: int) -> list[DecodedTask]:
        """The window and station part of ``HTSModel._squash`` for every ID in ``spec_bits``."""
        return squash_queues(self.window, self.stations, spec_bits)

    def end_of_cycle(self, woken: int | None, confirmed_bits: int, appended: DecodedTask | None = None):
        """The window and station part of ``HTSModel._end_of_cycle`` (its ``_wake`` and
        ``_confirm``), in its order: ``woken`` is the tag the walker makes ready, except the
        task ``appended`` to the window now (the enqueue stage gave its readiness)."""
        for task in self.queued():
            if task.tag == woken and not task.ready and task is not appended:
                if task in self.window.tasks:
                    task.ready = True
                else:
                    self.stations[task.class_index].wake(task)
        for task in self.queued():
            task.mask &= ~confirmed_bits

    def woken_tag(self, rng: random.Random) -> int | None:
        """A tag for the walker to wake: often a waiting task's, sometimes one no queue holds."""
        waiting = [task.tag for task in self.queued() if not task.ready]
        if waiting and rng.random() < 0.3:
            return rng.choice(waiting)
        return rng.randrange(self.config.hts.tracker_entries) if rng.random() < 0.1 else None


def bit_set(bits: int) -> set[int]:
    return {index for index in range(bits.bit_length()) if bits >> index & 1}


def tags_of(tasks) -> int:
    return sum(1 << task.tag for task in tasks)


def doomed_tags(ctx, dut) -> int:
    """The tags of the queue's valid slots its doomed bits remove this cycle."""
    entries, valid, doomed = ctx.get(dut.entries), ctx.get(dut.valid), ctx.get(dut.doomed)
    return sum(1 << entries[slot].tag for slot in range(len(entries)) if valid >> slot & doomed >> slot & 1)


def _field_width(name: str) -> int:
    return next(width for field, _, width in FIELDS if field == name)


class TaskSource:
    """Random decoded tasks in a small address space, so regions meet often."""

    def __init__(self, config: SystemConfig, rng: random.Random):
        self.config, self.rng, self.seq = config, rng, 0

    def region(self, nonempty: bool = False) -> tuple[int, int]:
        return self.rng.randrange(0, 24), self.rng.choice([1, 2, 3] if nonempty else [0, 1, 2, 3])

    def bits(self, count: int, chance: float) -> int:
        return sum(1 << index for index in range(count) if self.rng.random() < chance)

    def spec_ids(self) -> int:
        """Some speculation IDs, at least one (a branch resolving)."""
        return self.bits(self.config.hts.spec_ids, 0.3) | 1 << self.rng.randrange(self.config.hts.spec_ids)

    def task(self, tag: int, others: list[DecodedTask], class_index: int | None = None) -> DecodedTask:
        """A task with ``tag``; sometimes it reads exactly what one of ``others`` writes (a TM reader)."""
        rng, config = self.rng, self.config
        producers = [task.writes for task in others if task.writes[1]]
        reads = rng.choice(producers) if producers and rng.random() < 0.4 else self.region()
        if class_index is None:
            class_index = rng.randrange(len(config.accelerators))
        mask = self.spec_ids() if rng.random() < 0.4 else 0
        task = DecodedTask(self.seq, tag, pid=rng.randrange(config.hts.processes),
                           pc=rng.randrange(config.hts.program_words),
                           task_id=rng.randrange(1 << _field_width("task_id")),
                           accel_id=config.accelerators[class_index].id, class_index=class_index,
                           reads=reads, writes=self.region(), metadata=rng.randrange(1 << _field_width("metadata")),
                           mask=mask, ready=rng.random() < 0.4)
        self.seq += 1
        return task

    def free_tags(self, taken: list[DecodedTask]) -> list[int]:
        used = {task.tag for task in taken}
        return [tag for tag in range(self.config.hts.tracker_entries) if tag not in used]


def task_record(task: DecodedTask) -> dict:
    """A model task as a ``queued_task_layout`` record, to drive an input port."""
    return {"tag": task.tag, "accel_class": task.class_index, "mask": task.mask, "ready": task.ready}


def task_fields(task: DecodedTask) -> dict:
    """What a model task holds that a ``queued_task_layout`` record holds too."""
    return {"tag": task.tag, "accel_class": task.class_index, "mask": task.mask, "ready": task.ready}


def record_fields(record) -> dict:
    """A ``queued_task_layout`` record read from the simulator, in the form of ``task_fields``."""
    return {"tag": record.tag, "accel_class": record.accel_class, "mask": record.mask, "ready": bool(record.ready)}


def tracker_register_record(task: DecodedTask) -> dict:
    """The regions, pid and pc of a model task, as the tracker's ``entries`` show them for its tag."""
    return {"pid": task.pid, "pc": task.pc, "reads": region_value(task.reads), "writes": region_value(task.writes)}


def task_record_value(task: DecodedTask) -> dict:
    """The task ID and metadata of a model task, as a tracker record read gives them."""
    return {"task_id": task.task_id, "metadata": task.metadata}


def delivered_task_record(task: DecodedTask) -> dict:
    """A model task as a ``delivered_task_layout`` record (as the arbiter delivers it to a shell)."""
    return {**task_record(task), **tracker_register_record(task)}


def delivered_task_fields(task: DecodedTask) -> dict:
    """What a model task holds that a ``delivered_task_layout`` record holds too."""
    return {**task_fields(task), "pid": task.pid, "pc": task.pc, "reads": task.reads, "writes": task.writes}


def delivered_record_fields(record) -> dict:
    """A ``delivered_task_layout`` record read from the simulator, in the form of ``delivered_task_fields``."""
    return {**record_fields(record), "pid": record.pid, "pc": record.pc,
            "reads": (record.reads.base, record.reads.blocks), "writes": (record.writes.base, record.writes.blocks)}


def drive_end_of_cycle(ctx, dut, next_squash: int, confirm: int, woken: int | None):
    """The inputs every queue shares: next cycle's squash, confirm and the tag woken."""
    ctx.set(dut.squash_next, next_squash)
    ctx.set(dut.confirm, confirm)
    ctx.set(dut.woken, {"valid": woken is not None, "tag": woken or 0})


def age_order(valid: int, older) -> list[int]:
    """The valid slots of an age-matrix queue, oldest first.

    Each slot's place is the number of valid slots its ``older`` row names; the rows of a
    consistent matrix give every place once, which is asserted.
    """
    slots = [slot for slot in range(len(older)) if valid >> slot & 1]
    for slot in slots:
        for other in slots:
            # Of two valid slots exactly one is the older (and no slot is older than itself).
            assert (int(older[slot]) >> other & 1) != (int(older[other]) >> slot & 1) or slot == other, \
                f"slots {slot} and {other} disagree on their age"
        assert not int(older[slot]) >> slot & 1, f"slot {slot} older than itself"
    place = {slot: sum(1 for other in slots if int(older[slot]) >> other & 1) for slot in slots}
    assert sorted(place.values()) == list(range(len(slots))), f"inconsistent age matrix {place}"
    return sorted(slots, key=place.get)


def assert_contents(ctx, dut, tasks, where: str):
    """The queue's registered entries are the model's tasks, oldest first, field by field."""
    entries = ctx.get(dut.entries)
    slots = age_order(ctx.get(dut.valid), ctx.get(dut.older))
    assert len(slots) == len(tasks), where
    for position, (slot, task) in enumerate(zip(slots, tasks)):
        assert record_fields(entries[slot]) == task_fields(task), f"{where}, entry {position} (slot {slot})"


def assert_station_contents(ctx, dut, station, where: str):
    """A station's registered entries are the model's tasks, and its ready ones are in the
    model's readiness order (the station orders only those)."""
    entries, valid = ctx.get(dut.entries), ctx.get(dut.valid)
    held = sorted((record_fields(entries[slot]) for slot in range(len(entries)) if valid >> slot & 1),
                  key=lambda fields: fields["tag"])
    assert held == sorted((task_fields(task) for task in station.tasks), key=lambda fields: fields["tag"]), where
    ready = sum(1 << slot for slot in range(len(entries)) if valid >> slot & 1 and entries[slot].ready)
    order = [entries[slot].tag for slot in age_order(ready, ctx.get(dut.older))]
    assert order == [task.tag for task in station.ready], where
