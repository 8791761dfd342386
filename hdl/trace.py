"""The trace port of the ``HTS`` top level read as the model's events.

:class:`TraceReader` files dispatches, shown a cycle late, under the cycle before;
:func:`canonical` orders a cycle's events by stage and content (docs/microarchitecture.md,
"Trace").
"""

import json

from amaranth.hdl import Cat, Value
from amaranth.lib import data

from hts.base.config import SystemConfig

from .interfaces import instance_numbering

__all__ = ["any_event", "TraceReader", "canonical", "EVENT_KINDS"]

# The model's stage order within a cycle (models/hts.py, ``step``).
EVENT_KINDS = ("end", "complete", "branch", "abort", "squash", "retarget", "copyback", "dispatch", "enqueue",
               "decode", "fault")


def any_event(trace) -> Value:
    """Whether the trace port ``trace`` shows any event this cycle (testbenches wake on it)."""
    return Cat(trace.end.any(), trace.complete.any(), trace.abort.any(), trace.branch_resolving.any(),
               trace.squash.any(), trace.retarget.valid, trace.copyback.valid,
               *(grant.valid for grant in trace.dispatch),
               trace.enqueue.valid, trace.decode.valid, trace.fault.valid).any()


def _bits(value: int) -> list[int]:
    return [index for index in range(value.bit_length()) if value >> index & 1]


def _region(region) -> list[int]:
    return [region.base, region.blocks]


class TraceReader:
    """Reads the trace port cycle by cycle into the model's event records (dicts); it remembers
    each decoded tag's process, to split a cycle's squashed tags between squashes.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        self._names = [acc.name for acc in config.accelerators]
        self._instances = instance_numbering(config)
        self._pid_of_tag: dict[int, int] = {}

    def events(self, cycle: int, value: data.Const) -> list[dict]:
        out = []

        def emit(event, /, when=cycle, **fields):
            out.append({"cycle": when, "event": event, **fields})

        for pid in _bits(value.end):
            emit("end", pid=pid)
        for kind in ("complete", "abort"):
            for flat in _bits(getattr(value, kind)):
                held = value.held[flat]
                class_index, instance = self._instances[flat]
                emit(kind, pid=held.pid, pc=held.pc, tag=held.tag, accel=self._names[class_index],
                     instance=instance)
        spec_ids = self._config.hts.spec_ids
        for slot in _bits(value.branch_resolving):
            branch = value.branches[slot]
            emit("branch", pid=branch.pid, pc=branch.pc, kind=branch.kind.name,
                 taken=bool(value.branch_taken >> slot & 1), spec_id=slot if slot < spec_ids else None)
        squashed = _bits(value.squashed_tags)
        for spec_id in _bits(value.squash):
            branch = value.branches[spec_id]
            emit("squash", pid=branch.pid, pc=branch.pc, spec_id=spec_id,
                 tags=[tag for tag in squashed if self._pid_of_tag.get(tag) == branch.pid])
        if value.retarget.valid:
            event = value.retarget
            emit("retarget", pid=event.pid, tag=event.tag, home=_region(event.home), tm=event.tm)
        if value.copyback.valid:
            event = value.copyback
            emit("copyback", pid=event.pid, home=_region(event.home), tm=event.tm, cycles=event.cycles)
        for grant in value.dispatch:
            if grant.valid:
                task = grant.task
                emit("dispatch", when=cycle - 1, pid=task.pid, pc=task.pc, tag=task.tag,
                     accel=self._names[task.accel_class],
                     instance=grant.instance, reads=_region(task.reads), writes=_region(task.writes),
                     mask=task.mask)
        if value.enqueue.valid:
            task = value.enqueue
            emit("enqueue", pid=task.pid, pc=task.pc, tag=task.tag, producers=task.producers)
        if value.decode.valid:
            task = value.decode.task
            self._pid_of_tag[task.tag] = task.pid
            emit("decode", pid=task.pid, pc=task.pc, tag=task.tag, task_id=task.task_id,
                 accel=self._names[task.accel_class], reads=_region(task.reads), writes=_region(task.writes),
                 mask=task.mask)
        if value.fault.valid:
            fault = value.fault
            emit("fault", pid=fault.pid, pc=fault.pc, cause=fault.cause.name)
        return out


def canonical(events: list[dict]) -> list[dict]:
    """``events`` ordered by cycle, then the model's stage order, then content."""
    rank = {kind: index for index, kind in enumerate(EVENT_KINDS)}
    return sorted(events, key=lambda e: (e["cycle"], rank[e["event"]], json.dumps(e, sort_keys=True)))
