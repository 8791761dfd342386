"""Scheduling events: the trace that the RTL is compared against, cycle for cycle.

One JSON object per line, fields in a fixed order; ``cycle`` and ``event`` first. The
events and their fields are listed in docs/microarchitecture.md (section "Trace").
"""

import json
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["Event", "Trace", "EVENT_KINDS"]

# Every kind of event, in the order of the table in docs/microarchitecture.md.
EVENT_KINDS = ("decode", "enqueue", "dispatch", "complete", "branch", "squash", "abort", "copyback",
               "retarget", "fault", "end")


@dataclass(frozen=True)
class Event:
    cycle: int
    event: str
    fields: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"cycle": self.cycle, "event": self.event, **self.fields}


class Trace:
    """Collects events in the order the model emits them (by cycle, then pipeline stage)."""

    def __init__(self):
        self.events: list[Event] = []

    def emit(self, cycle: int, event: str, **fields):
        self.events.append(Event(cycle, event, fields))

    def write_jsonl(self, out: IO[str]):
        for event in self.events:
            out.write(json.dumps(event.as_dict()) + "\n")

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.event == kind]
