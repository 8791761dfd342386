"""Functional coverage: which scheduling situations a set of runs actually reached.

Every bin is defined once, in :data:`BINS`, with a name, a one-line meaning and where
it is counted from:

- ``trace`` bins are read from the event trace alone (:func:`trace_coverage`), so they
  count the same on the model's trace and on the RTL's (co-simulation compares the two
  event for event, cycle for cycle);
- ``model`` bins need state the trace does not carry (occupancy, decode stalls, the
  copy-back engine, the instruction decoded): :class:`StateCoverage` observes the model
  through its public ``observer`` hook (``models/observation.py``). In co-simulation
  they come from the model run in lockstep with the RTL.

A :class:`Coverage` counts hits per bin and merges with another. State conditions
(a structure full, a stall) count once per episode: the cycle they start to hold, so a
count does not depend on how many cycles the model skipped.
"""

from dataclasses import dataclass
from itertools import groupby
from typing import Iterable, Iterator

from hts.isa import Opcode

from .observation import LIST_CORNERS, SEARCH_CORNERS, WAKEUP_CORNERS, CycleView
from .trace import EVENT_KINDS, Trace

__all__ = ["Bin", "BINS", "BIN_NAMES", "Coverage", "trace_coverage", "StateCoverage", "model_coverage",
           "coverage_table"]


@dataclass(frozen=True)
class Bin:
    name: str
    meaning: str
    source: str                    # "trace" or "model"


def _event_bins() -> list[Bin]:
    return [Bin(f"event.{kind}", f"an event `{kind}`", "trace") for kind in EVENT_KINDS]


def _branch_bins() -> list[Bin]:
    """Kind x outcome x speculated; an RR branch is never speculated (docs/microarchitecture.md)."""
    bins = []
    for kind in ("RR", "MR", "BR"):
        for speculated in ((False,) if kind == "RR" else (False, True)):
            for taken in (False, True):
                name = f"branch.{kind}.{'taken' if taken else 'not_taken'}{'.speculated' if speculated else ''}"
                outcome = ("mispredicted, squashes" if taken else "predicted right") if speculated else (
                    "taken" if taken else "not taken")
                bins.append(Bin(name, f"{kind} branch{' speculated' if speculated else ''}, {outcome}", "trace"))
    return bins


# Where a squashed task can be: the stage names of the squash bins.
SQUASH_STAGES = ("enqueue", "queued", "running")
_SQUASH_MEANINGS = {
    "enqueue": "a squash removes the task in the enqueue stage (decoded the cycle before)",
    "queued": "a squash removes a task enqueued and not dispatched",
    "running": "a squash aborts a task running on an instance",
}

# Decode stall reasons of the hardware scheduler (models/hts.py). ``runtime_overhead``
# belongs to the software baseline, not to the hardware under test: it has no bin.
STALL_REASONS = ("fetch", "operands", "branch", "scan", "tracker_full", "successors_full", "tlb_full",
                 "tlb_conflict", "speculative_fault", "fault", "decoder_busy", "drain")
_TLB_STALLS = ("tlb_full", "tlb_conflict")

BINS: tuple[Bin, ...] = (
    *_event_bins(),
    *_branch_bins(),
    *(Bin(f"squash.{stage}", meaning, "trace") for stage, meaning in _SQUASH_MEANINGS.items()),
    Bin("squash.all_stages", "one squash removes tasks from all three: enqueue stage, queued, running", "trace"),
    Bin("run.processes_interleave",
        "a run in which a process decodes tasks both before and after another process does", "trace"),
    Bin("full.tracker", "every tracker entry (tag) is in flight at the start of a cycle", "model"),
    Bin("full.tlb", "no room for a speculative output at the start of a cycle: every TLB entry valid "
        "or every TM block allocated", "model"),
    *(Bin(f"stall.{reason}", f"a process's decode stalls: `{reason}`", "model") for reason in STALL_REASONS),
    Bin("copyback.stalls_decode", "decode waits on the TLB (tlb_full or tlb_conflict) while the copy-back "
        "engine moves a TM copy home over the memory port", "model"),
    *(Bin(f"search.{corner}", meaning, "model") for corner, meaning in SEARCH_CORNERS.items()),
    *(Bin(f"wakeup.{corner}", meaning, "model") for corner, meaning in WAKEUP_CORNERS.items()),
    *(Bin(f"lists.{corner}", meaning, "model") for corner, meaning in LIST_CORNERS.items()),
    Bin("speculation.loop", "a loop body entered under speculation: `lbeg` with iterations decoded "
        "while an unresolved speculated branch is pending", "model"),
)
BIN_NAMES = tuple(b.name for b in BINS)
assert len(set(BIN_NAMES)) == len(BIN_NAMES)


class Coverage:
    """Hits per bin of :data:`BINS`."""

    def __init__(self):
        self.hits = dict.fromkeys(BIN_NAMES, 0)

    def hit(self, name: str, count: int = 1):
        if name not in self.hits:
            raise KeyError(f"no coverage bin {name!r}")
        self.hits[name] += count

    def merge(self, other: "Coverage") -> "Coverage":
        """Add ``other``'s hits to these; returns self, so merges chain."""
        for name, count in other.hits.items():
            self.hits[name] += count
        return self

    def missed(self) -> list[Bin]:
        return [b for b in BINS if not self.hits[b.name]]

    def as_dict(self) -> dict[str, int]:
        return dict(self.hits)


def coverage_table(coverage: Coverage) -> str:
    """One line per bin: name, hits, where counted, meaning; then the bins hit."""
    width = max(len(name) for name in BIN_NAMES)
    lines = [f"{'bin':<{width}}  {'hits':>8}  {'source':<6}  meaning"]
    lines += [f"{b.name:<{width}}  {coverage.hits[b.name]:>8}  {b.source:<6}  {b.meaning}" for b in BINS]
    lines.append(f"{len(BINS) - len(coverage.missed())} of {len(BINS)} bins hit")
    return "\n".join(lines)


# ---- trace bins -------------------------------------------------------------------------

# Where a task stands after its latest event: the stage its next squash finds it in.
_STAGE_AFTER = {"decode": "enqueue", "enqueue": "queued", "dispatch": "running"}
_LEAVES = ("complete", "abort")


def trace_coverage(events: Iterable[dict]) -> Coverage:
    """The trace bins of one run, from its events (``Event.as_dict`` form, by cycle).

    A squash in cycle *t* acts on the state at the start of *t* (docs/microarchitecture.md,
    "One cycle"), so each squashed tag's stage is the one its events up to *t - 1* put
    it in; the order of events inside a cycle does not matter, and an RTL trace in
    canonical order counts as the model's does.
    """
    coverage = Coverage()
    events = list(events)
    stage_of: dict[int, str] = {}          # tag -> stage, at the end of the cycles seen
    for _, cycle_events in groupby(events, key=lambda e: e["cycle"]):
        cycle_events = list(cycle_events)
        for event in cycle_events:
            _count_event(coverage, event)
        _count_squashes(coverage, cycle_events, stage_of)
        _advance_stages(cycle_events, stage_of)
    if _processes_interleave(events):
        coverage.hit("run.processes_interleave")
    return coverage


def _count_event(coverage: Coverage, event: dict):
    coverage.hit(f"event.{event['event']}")
    if event["event"] == "branch":
        outcome = "taken" if event["taken"] else "not_taken"
        speculated = ".speculated" if event["spec_id"] is not None else ""
        coverage.hit(f"branch.{event['kind']}.{outcome}{speculated}")


def _count_squashes(coverage: Coverage, cycle_events: list[dict], stage_of: dict[int, str]):
    """Each squash of the cycle: the stages its removed tasks were in (aborts: running).

    A speculation ID belongs to one process, so a squash's aborts are its process's.
    """
    for squash in (e for e in cycle_events if e["event"] == "squash"):
        stages = {stage_of[tag] for tag in squash["tags"]}
        if any(e["event"] == "abort" and e["pid"] == squash["pid"] for e in cycle_events):
            stages.add("running")
        for stage in stages:
            coverage.hit(f"squash.{stage}")
        if stages == set(SQUASH_STAGES):
            coverage.hit("squash.all_stages")


def _advance_stages(cycle_events: list[dict], stage_of: dict[int, str]):
    for event in cycle_events:
        kind = event["event"]
        if kind in _STAGE_AFTER:
            stage_of[event["tag"]] = _STAGE_AFTER[kind]
        elif kind in _LEAVES:
            del stage_of[event["tag"]]
        elif kind == "squash":
            for tag in event["tags"]:
                del stage_of[tag]


def _processes_interleave(events: list[dict]) -> bool:
    """Some process decodes tasks both before and after another process does."""
    turns = [pid for pid, _ in groupby(e["pid"] for e in events if e["event"] == "decode")]
    return len(turns) >= 3


# ---- model bins -------------------------------------------------------------------------

class StateCoverage:
    """Counts the model bins of one run; pass :meth:`observe` as ``HTSModel(observer=...)``."""

    def __init__(self):
        self.coverage = Coverage()
        self._held: set[tuple[str, int]] = set()     # conditions of the last observed cycle

    def observe(self, view: CycleView):
        held = set(_conditions(view))
        for name, _ in held - self._held:
            self.coverage.hit(name)
        self._held = held
        decoded = view.decoded
        if decoded and decoded.opcode == Opcode.LBEG and decoded.speculative and not decoded.discarding:
            self.coverage.hit("speculation.loop")
        for corner in view.searches:
            self.coverage.hit(f"search.{corner}")
        for corner in view.wakeups:
            self.coverage.hit(f"wakeup.{corner}")
        for corner in view.lists:
            self.coverage.hit(f"lists.{corner}")


def _conditions(view: CycleView) -> Iterator[tuple[str, int]]:
    """(bin, which structure or process) of every state condition holding in the cycle."""
    start = view.start
    if start.tracker == start.tracker_capacity:
        yield "full.tracker", 0
    if start.tlb == start.tlb_capacity or start.tm_used == start.tm_capacity:
        yield "full.tlb", 0
    for pid, reason in view.stalls.items():
        if reason in STALL_REASONS:
            yield f"stall.{reason}", pid
    if view.copying and any(reason in _TLB_STALLS for reason in view.stalls.values()):
        yield "copyback.stalls_decode", 0


def model_coverage(trace: Trace, state: StateCoverage) -> Coverage:
    """Every bin of one model run: its trace's, and the state bins ``state`` observed."""
    return trace_coverage(event.as_dict() for event in trace.events).merge(state.coverage)
