"""Random decoded tasks as the scheduler's queues carry them, and the model's dispatch stage, for the RTL tests.

``TaskSource`` makes decoded tasks; the functions below turn them into the records of
``queued_task_layout``, ``task_layout`` and ``delivered_task_layout`` and back.
``DispatchStage`` is the model's dispatch (``Dispatch.dispatch``) with what it reads: the
ready lists, an ASR, and programs for its timing.
"""

import random
from types import SimpleNamespace

from rtl_sim import region_value

from hts.base.config import SystemConfig
from hts.isa import FIELDS
from hts.models.asr import AcceleratorStatus, Running
from hts.models.dispatch import Dispatch
from hts.models.ready_lists import ReadyLists
from hts.models.task import DecodedTask
from hts.models.timing import TableLatency

__all__ = ["DispatchStage", "TaskSource", "bit_set", "record_fields", "task_fields", "task_record",
           "task_record_value", "tracker_register_record",
           "delivered_record_fields", "delivered_task_fields", "delivered_task_record"]


class AnyInstruction:
    """Program text stand-in: ``TableLatency`` times a task by its class, not its word."""

    def __getitem__(self, pc):
        return None


class DispatchStage:
    """``HTSModel``'s ready lists, ASR and dispatch, without the rest of the scheduler.

    ``width``: the classes granted a cycle, the configuration's by default; the number of
    classes lets every live head with a free instance go, as an arbiter of any width might.
    """

    def __init__(self, config: SystemConfig, width: int | None = None):
        classes = list(config.accelerators)
        self.lists = ReadyLists(len(classes), config.hts.tracker_entries)
        self.asr = AcceleratorStatus([acc.count for acc in classes])
        self.dispatch = Dispatch(width or config.hts.dispatch_width, classes, TableLatency())
        self.programs = [SimpleNamespace(decoded=AnyInstruction())] * config.hts.processes

    def grant(self, t: int) -> list[Running]:
        """The model's dispatch in cycle ``t``: dead heads dropped, live ones granted."""
        return self.dispatch.dispatch(t, self.lists, self.asr, self.programs)

    def in_flight(self) -> list[DecodedTask]:
        """The tasks that hold a tag here: listed (live or dead) and running."""
        return [task for entries in self.lists.lists for task in entries] + [run.task for run in self.asr.running()]


def bit_set(bits: int) -> set[int]:
    return {index for index in range(bits.bit_length()) if bits >> index & 1}


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
