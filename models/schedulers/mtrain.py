"""MTrain-Mapping: greedy placement of a CNN training workflow on heterogeneous FPGA
accelerators, after Tang et al., *MTrain: Enable Efficient CNN Training on Heterogeneous
FPGA-based Edge Servers* (seed 001, §V, Algorithm 2).

The input is the multi-branch training workflow ``G*_model`` that MTrain-Converting makes
(§IV): forward, backward and weight-update operations, the batch-independent ones split
along the batch into one sub-operation per branch. It is a :class:`networkx.DiGraph` in
the task-graph convention of :mod:`hts.models.graphs` (pass ``TaskGraph.graph``), where
each accelerator is its own class:

- node ``cost``: accelerator name -> cycles of the operation there (``Lat_Comp``, from
  the accelerator's performance model); only those accelerators may run it;
- edge ``comm``: cycles to move the producer's output to a consumer on another accelerator
  (``Lat_Comm``: data size over the P2P bandwidth, §III-A); 0 when absent;
- node ``branch`` (optional): the batch slice of a split sub-operation; fused batch-wise
  operations such as batch normalisation have none;
- node ``weights`` (optional, bytes): held in the accelerator's DRAM for the whole run;
- node ``memory`` (optional, bytes): the output (activation, loss), held in the DRAM of the
  accelerator that produced it until its last consumer finishes (§V-B: activations and
  losses are kept until the weight update that needs them is done).

An operation runs for its compute cycles plus the transfers from predecessors placed on
other accelerators (§III-C: "the latency for each sub-operation is the sum of Lat_Comp and
Lat_Comm"). Each accelerator runs its operations one at a time, in the order the mapping
placed them; ``Lat`` is the resulting makespan.

The three steps, each keeping the DRAM budget of every accelerator:

1. :func:`dram_aware_mapping` (§V-B): repeatedly take the unplaced operations whose
   predecessors are all placed, try every assignment of them to accelerators, drop those
   that overflow a DRAM budget, keep the one of least ``ΔLat``, which the paper defines as
   "the sum of the computation cost ... and the data communication costs between two
   dependent sub-operations that are located on different accelerators" (ties: the
   shorter ``Lat``, then the first tried). Being a sum, it ignores parallelism: without
   DRAM limits everything lands on the fastest accelerator, as in Figure 7(b), and the
   next step spreads the work.
2. :func:`balance_remap` (§V-C): in the "well-balanced" mapping branch ``b`` belongs on
   accelerator ``b`` (modulo their number); move operations there one at a time, keeping a
   move only if ``Lat`` drops, until no move helps.
3. :func:`locality_remap` (§V-D): move an operation to the accelerator of one of its
   predecessors or successors, keeping a move only if ``Lat`` drops, until none helps.
"""

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import networkx as nx

__all__ = [
    "MAX_ASSIGNMENTS", "Placement", "Timeline", "timeline", "dram_peaks", "fits", "dram_aware_mapping",
    "balanced_accelerator", "balance_remap", "locality_remap", "mtrain_mapping",
]

# dram_aware_mapping tries |accelerators| ** |ready operations| assignments per step.
MAX_ASSIGNMENTS = 100_000


@dataclass(frozen=True)
class Placement:
    """Which accelerator runs each placed operation, and in which order they were placed."""
    order: tuple[str, ...]
    accelerator: Mapping[str, str]

    def moved(self, operation: str, accelerator: str) -> "Placement":
        return Placement(self.order, MappingProxyType({**self.accelerator, operation: accelerator}))


@dataclass(frozen=True)
class Timeline:
    start: Mapping[str, int]
    finish: Mapping[str, int]
    busy: int               # compute and transfer cycles summed over all operations

    @property
    def latency(self) -> int:
        return max(self.finish.values(), default=0)


def timeline(graph: nx.DiGraph, placement: Placement) -> Timeline:
    """Start and finish of every placed operation, each accelerator taking them in placement order."""
    start, finish, free, busy = {}, {}, {}, 0
    for operation in placement.order:
        here = placement.accelerator[operation]
        transfers = sum(graph.edges[p, operation].get("comm", 0) for p in graph.predecessors(operation)
                        if placement.accelerator[p] != here)
        duration = graph.nodes[operation]["cost"][here] + transfers
        ready = max((finish[p] for p in graph.predecessors(operation)), default=0)
        start[operation] = max(ready, free.get(here, 0))
        finish[operation] = free[here] = start[operation] + duration
        busy += duration
    return Timeline(MappingProxyType(start), MappingProxyType(finish), busy)


def dram_peaks(graph: nx.DiGraph, placement: Placement, times: Timeline) -> dict[str, int]:
    """Highest DRAM use of each accelerator over the run, in bytes.

    An output is held from the start of its producer until its last consumer finishes; one
    with a consumer not placed yet is still held at the end.
    """
    resident: dict[str, int] = {}
    events: dict[str, list[tuple[float, int]]] = {}
    for operation in placement.order:
        here = placement.accelerator[operation]
        resident[here] = resident.get(here, 0) + graph.nodes[operation].get("weights", 0)
        size = graph.nodes[operation].get("memory", 0)
        consumers = list(graph.successors(operation))
        if any(c not in times.finish for c in consumers):
            release = float("inf")
        else:
            release = max((times.finish[c] for c in consumers), default=times.finish[operation])
        events.setdefault(here, []).extend([(times.start[operation], size), (release, -size)])
    peaks = {}
    for here in resident:
        # At equal times a release comes first (negative sizes sort first): held intervals are half-open.
        running = peak = 0
        for _, change in sorted(events[here]):
            running += change
            peak = max(peak, running)
        peaks[here] = resident[here] + peak
    return peaks


def fits(graph: nx.DiGraph, placement: Placement, budgets: Mapping[str, int], times: Timeline) -> bool:
    return all(peak <= budgets[here] for here, peak in dram_peaks(graph, placement, times).items())


def _topological_order(graph: nx.DiGraph) -> list[str]:
    """Topological order; among ready operations the one added to the graph first."""
    index = {operation: position for position, operation in enumerate(graph.nodes)}
    return list(nx.lexicographical_topological_sort(graph, key=index.__getitem__))


def _check(graph: nx.DiGraph, budgets: Mapping[str, int]) -> None:
    if not budgets:
        raise ValueError("budgets must name at least one accelerator")
    for accelerator, budget in budgets.items():
        if budget < 0:
            raise ValueError(f"budgets[{accelerator!r}] must be >= 0, got {budget}")
    if not nx.is_directed_acyclic_graph(graph):
        raise ValueError("the training workflow must be a directed acyclic graph")
    for operation, attributes in graph.nodes(data=True):
        if not set(attributes.get("cost", {})) & set(budgets):
            raise ValueError(f"operation {operation!r}: its cost names none of the accelerators "
                             f"{', '.join(budgets)}")
        for key in ("weights", "memory", "branch"):
            value = attributes.get(key)
            if value is not None and value < 0:
                raise ValueError(f"operation {operation!r}: {key} must be >= 0, got {value}")


def _allowed(graph: nx.DiGraph, operation: str, budgets: Mapping[str, int]) -> list[str]:
    return [a for a in budgets if a in graph.nodes[operation]["cost"]]


def dram_aware_mapping(graph: nx.DiGraph, budgets: Mapping[str, int]) -> Placement:
    """Step 1: greedy placement, ready operations at a time, within the DRAM budgets."""
    _check(graph, budgets)
    placement = Placement((), MappingProxyType({}))
    remaining = _topological_order(graph)
    while remaining:
        ready = [op for op in remaining if all(p in placement.accelerator for p in graph.predecessors(op))]
        choices = [_allowed(graph, op, budgets) for op in ready]
        tries = 1
        for options in choices:
            tries *= len(options)
        if tries > MAX_ASSIGNMENTS:
            raise ValueError(f"{len(ready)} operations become ready together ({', '.join(ready[:5])}, ...): "
                             f"{tries} assignments exceed MAX_ASSIGNMENTS = {MAX_ASSIGNMENTS}")
        best, best_key = None, None
        for assignment in itertools.product(*choices):
            trial = Placement(placement.order + tuple(ready),
                              MappingProxyType({**placement.accelerator, **dict(zip(ready, assignment))}))
            times = timeline(graph, trial)
            # The busy time before this step is the same for every trial, so the least total
            # busy time is the least increase, ΔLat.
            if fits(graph, trial, budgets, times) and (best_key is None or (times.busy, times.latency) < best_key):
                best, best_key = trial, (times.busy, times.latency)
        if best is None:
            raise ValueError(f"no placement of {', '.join(ready)} fits the DRAM budgets "
                             f"({', '.join(f'{a}: {b}' for a, b in budgets.items())})")
        placement = best
        remaining = [op for op in remaining if op not in placement.accelerator]
    return placement


def _improve(graph: nx.DiGraph, budgets: Mapping[str, int], placement: Placement, targets) -> Placement:
    """Move operations to ``targets(placement, operation)`` while a single move shortens Lat."""
    latency = timeline(graph, placement).latency
    improved = True
    while improved:
        improved = False
        for operation in placement.order:
            for target in targets(placement, operation):
                if target == placement.accelerator[operation]:
                    continue
                trial = placement.moved(operation, target)
                times = timeline(graph, trial)
                if times.latency < latency and fits(graph, trial, budgets, times):
                    placement, latency, improved = trial, times.latency, True
    return placement


def balanced_accelerator(graph: nx.DiGraph, operation: str, budgets: Mapping[str, int]) -> str | None:
    """Where the well-balanced mapping puts ``operation``: branch b on accelerator b."""
    branch = graph.nodes[operation].get("branch")
    if branch is None:
        return None
    accelerator = list(budgets)[branch % len(budgets)]
    return accelerator if accelerator in graph.nodes[operation]["cost"] else None


def balance_remap(graph: nx.DiGraph, budgets: Mapping[str, int], placement: Placement) -> Placement:
    """Step 2: move split sub-operations to their branch's accelerator while that shortens Lat."""
    _check(graph, budgets)

    def targets(current, operation):
        balanced = balanced_accelerator(graph, operation, budgets)
        return [] if balanced is None else [balanced]

    return _improve(graph, budgets, placement, targets)


def locality_remap(graph: nx.DiGraph, budgets: Mapping[str, int], placement: Placement) -> Placement:
    """Step 3: move operations next to a predecessor or successor while that shortens Lat."""
    _check(graph, budgets)

    def targets(current, operation):
        neighbours = itertools.chain(graph.predecessors(operation), graph.successors(operation))
        return [a for a in dict.fromkeys(current.accelerator[n] for n in neighbours)
                if a in graph.nodes[operation]["cost"]]

    return _improve(graph, budgets, placement, targets)


def mtrain_mapping(graph: nx.DiGraph, budgets: Mapping[str, int]) -> dict[str, Placement]:
    """Algorithm 2: the placement after each step, by step name, in order."""
    initial = dram_aware_mapping(graph, budgets)
    balanced = balance_remap(graph, budgets, initial)
    return {"dram_aware": initial, "balance": balanced, "locality": locality_remap(graph, budgets, balanced)}
