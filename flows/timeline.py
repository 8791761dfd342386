"""A run's trace as a timeline in the Chrome trace-event format, which Perfetto and
chrome://tracing open: ``hts run --timeline FILE.json`` (and ``hts cosim --timeline``).

The format is the JSON object form of Google's "Trace Event Format" document: a
``traceEvents`` list of events, each with ``name``, ``ph`` (phase), ``ts`` (microseconds),
``pid`` and ``tid``; ``X`` (complete) events add ``dur``, ``i`` (instant) events a scope
``s``, and ``M`` (metadata) events name processes and threads. One scheduler cycle is
one microsecond on the viewer's axis.

Tracks (a viewer "process" groups "threads"):

- **accelerators**: one thread per instance, in flat order (``accel#i``); each task it ran
  is a slice from its dispatch to its grant or abort, both cycles included, labelled
  with its class and carrying pc, tag, task ID and process;
- **process p**: ``decode`` (an instant per task decoded), ``control`` (branches,
  squashes, faults and the end, as instants) and ``run`` (one slice from cycle 0 to the
  end);
- **memory**: ``copy-back`` (a slice per copy, its cycles long) and ``retarget`` (instants).
"""

import json
from pathlib import Path

from hts.base.config import SystemConfig
from hts.base.output import atomic_path

__all__ = ["timeline", "write_timeline", "ACCELERATORS_PID", "MEMORY_PID", "process_pid"]

ACCELERATORS_PID, MEMORY_PID = 1, 2


def process_pid(pid: int) -> int:
    """The viewer process of scheduler process ``pid``."""
    return 3 + pid


def _metadata(pid: int, name: str, threads: dict[int, str], sort_index: int) -> list[dict]:
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}},
              {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": sort_index}}]
    for tid, thread in threads.items():
        events += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": thread}},
                   {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}}]
    return events


def _instant(name: str, cycle: int, pid: int, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "i", "s": "t", "ts": cycle, "pid": pid, "tid": tid, "args": args}


def _slice(name: str, start: int, cycles: int, pid: int, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "X", "ts": start, "dur": cycles, "pid": pid, "tid": tid, "args": args}


class _Instances:
    """Flat instance numbering (class-major, as the RTL's ``hts.hdl.asr``) and the task each runs."""

    def __init__(self, config: SystemConfig):
        self.tid, offset = {}, 1
        for accel in config.accelerators:
            for instance in range(accel.count):
                self.tid[accel.name, instance] = offset
                offset += 1
        self.running: dict[int, dict] = {}

    def names(self) -> dict[int, str]:
        return {tid: f"{accel}#{instance}" for (accel, instance), tid in self.tid.items()}


def timeline(events: list[dict], config: SystemConfig, processes: int) -> dict:
    """The trace-event object of a run's ``events`` (the dicts of ``hts run --trace``)."""
    instances = _Instances(config)
    task_ids: dict[tuple[int, int], int] = {}
    out: list[dict] = []
    ends: dict[int, int] = {}
    for event in events:
        kind, cycle, pid = event["event"], event["cycle"], event.get("pid")
        if kind == "decode":
            task_ids[pid, event["tag"]] = event["task_id"]
            out.append(_instant(event["accel"], cycle, process_pid(pid), 1,
                                {"pc": event["pc"], "tag": event["tag"], "task_id": event["task_id"]}))
        elif kind == "dispatch":
            tid = instances.tid[event["accel"], event["instance"]]
            instances.running[tid] = {**event, "task_id": task_ids.get((pid, event["tag"]))}
        elif kind in ("complete", "abort"):
            tid = instances.tid[event["accel"], event["instance"]]
            task = instances.running.pop(tid)
            name = task["accel"] + (" (aborted)" if kind == "abort" else "")
            out.append(_slice(name, task["cycle"], cycle - task["cycle"] + 1, ACCELERATORS_PID, tid,
                              {"pid": pid, "pc": task["pc"], "tag": task["tag"], "task_id": task["task_id"],
                               "reads": task["reads"], "writes": task["writes"]}))
        elif kind in ("branch", "squash", "fault", "end"):
            out.append(_instant(_control_name(event), cycle, process_pid(pid), 2,
                                {key: value for key, value in event.items() if key not in ("cycle", "event")}))
            if kind == "end":
                ends[pid] = cycle
        elif kind == "copyback":
            out.append(_slice("copy-back", cycle, event["cycles"], MEMORY_PID, 1,
                              {"pid": pid, "home": event["home"], "tm": event["tm"]}))
        elif kind == "retarget":
            out.append(_instant("retarget", cycle, MEMORY_PID, 2,
                                {"pid": pid, "tag": event["tag"], "home": event["home"], "tm": event["tm"]}))
    for pid, end in ends.items():
        out.append(_slice(f"process {pid}", 0, end + 1, process_pid(pid), 3, {}))
    metadata = _metadata(ACCELERATORS_PID, "accelerators", instances.names(), 0)
    metadata += _metadata(MEMORY_PID, "memory", {1: "copy-back", 2: "retarget"}, 1)
    for pid in range(processes):
        metadata += _metadata(process_pid(pid), f"process {pid}", {1: "decode", 2: "control", 3: "run"}, 2 + pid)
    return {"traceEvents": metadata + out,
            "otherData": {"time_unit": "1 us on the axis is 1 scheduler cycle", "config": str(config.source)}}


def _control_name(event: dict) -> str:
    kind = event["event"]
    if kind == "branch":
        return f"{event['kind']} {'taken' if event['taken'] else 'not taken'}"
    return f"fault: {event['cause']}" if kind == "fault" else kind


def write_timeline(path: str | Path, events: list[dict], config: SystemConfig, processes: int,
                   plot: str | Path | None = None):
    """The timeline as JSON at ``path`` and, if ``plot`` names a PNG, drawn there."""
    trace = timeline(events, config, processes)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(trace))
    if plot:
        from .plots import plot_timeline
        plot_timeline(trace, plot, f"{Path(path).name}: {config.source}")
