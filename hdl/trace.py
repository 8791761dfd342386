"""The trace port of the ``HTS`` top level read as the model's events.

The cycle model writes one event per scheduling step (``hts.models.trace``; the events
and their fields are listed in docs/microarchitecture.md, "Trace"). The RTL shows, every
cycle, the signals those events are made of on one output port
(:func:`hts.hdl.interfaces.trace_layout`); :class:`TraceReader` turns one cycle's value
of that port into the same event records. The Amaranth-simulator tests and the
co-simulation both read it, so an RTL trace and a model trace compare as plain lists.
The port shows each cycle's events in that cycle, but the dispatches and the issues: a
grant shows the cycle after, with the task as its shell gets it
(``dispatch_trace_layout``), an issue the cycle after too, and each is read as an event
of the cycle before.

Within a cycle the model's event order follows its Python loops (the abort events of a
squash, for instance, in the order its lists hold the running tasks), which hardware
has no reason to reproduce. :func:`canonical` orders the events of each cycle by kind
and content; a comparison of two traces compares them in that order.
"""

import json

from amaranth.hdl import Cat, Value
from amaranth.lib import data

from hts.base.config import SystemConfig

from .interfaces import instance_numbering

__all__ = ["any_event", "TraceReader", "canonical", "EVENT_KINDS"]

# The model's stage order within a cycle (models/hts.py, ``step``).
EVENT_KINDS = ("end", "complete", "branch", "abort", "squash", "retarget", "copyback", "dispatch", "issue",
               "enqueue", "decode", "fault")


def any_event(trace) -> Value:
    """Whether the trace port ``trace`` shows any event this cycle (testbenches wake on it)."""
    return Cat(trace.end.any(), trace.complete.any(), trace.abort.any(), trace.branch_resolving.any(),
               trace.squash.any(), trace.retarget.valid, trace.copyback.valid,
               *(grant.valid for grant in trace.dispatch), *(issued.valid for issued in trace.issue),
               trace.enqueue.valid, trace.decode.valid, trace.fault.valid).any()


def _bits(value: int) -> list[int]:
    return [index for index in range(value.bit_length()) if value >> index & 1]


def _region(region) -> list[int]:
    return [region.base, region.blocks]


class TraceReader:
    """Reads the trace port cycle by cycle into the model's event records (dicts).

    It remembers the process of every tag decoded, to split a cycle's squashed tags
    between the squashes of different processes.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        self._names = [acc.name for acc in config.accelerators]
        self._instances = instance_numbering(config)
        self._pid_of_tag: dict[int, int] = {}

    def events(self, cycle: int, value: data.Const) -> list[dict]:
        """The events of ``cycle``; ``value`` is the trace port's value in that cycle."""
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
        for issued in value.issue:
            if issued.valid:
                emit("issue", when=cycle - 1, pid=issued.pid, pc=issued.pc, tag=issued.tag)
        if value.enqueue.valid:
            task = value.enqueue
            emit("enqueue", pid=task.pid, pc=task.pc, tag=task.tag, waits_for=_bits(task.waits))
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
