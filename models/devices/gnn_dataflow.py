"""Dataflow configurations of a spatial GNN accelerator, after Puigdemont, Russo et al.,
*A Data-Driven Approach to Dataflow-Aware Online Scheduling for GNN Inference* (seed 003).

One GCN layer is an aggregation (SpMM of the adjacency with the V x F features) and a
combination (GEMM with the F x G weights), §2.1. An accelerator configuration is one of
the 3 inter-phase dataflows of §2.2 (Sequential ``seq``, Sequential Pipeline ``sp``,
Parallel Pipeline ``pp``) times one of the 8 tiling schemes of Table 2: 24 in all (§3.2),
on 512 PEs.

The paper obtains latencies from the STONNE-Omega simulator and learns a regressor of them;
neither is available here. :func:`dataflow_cycles` is an analytic surrogate built from the
paper's own cycle-estimate features (Table 1):

- aggregation, the CSR estimate S5 with whole steps: node ``v`` of degree ``N_v`` takes
  ``ceil(N_v / min(N_v, T_N)) * ceil(F / T_Fa)`` steps, ``T_Va`` nodes at a time;
- combination, the estimate S2 with whole steps:
  ``ceil(V / T_Vc) * ceil(F / T_Fc) * ceil(G / T_Gc)``.

The inter-phase dataflows are our reading of §2.2 and Figure 3, not numbers of the paper:
``seq`` runs the phases one after the other and writes the V x F intermediate matrix to
memory and reads it back; ``sp`` interleaves them tile by tile, keeping the intermediate
on chip but fetching the F x G weights again for every tile of ``T_Va`` rows; ``pp`` gives
each phase half of the PEs and runs them concurrently, so the slower phase sets the time.
Memory moves ``memory_words_per_cycle`` words per cycle (an assumption, default 32).
"""

import math
from dataclasses import dataclass

import networkx as nx

from hts.base.config import AcceleratorClass
from hts.isa import Word

from .units import require_positive

__all__ = [
    "DEFAULT_PES", "DEFAULT_MEMORY_WORDS_PER_CYCLE", "INTER_PHASE", "TILINGS", "CONFIGURATIONS",
    "GraphShape", "Tiling", "Dataflow", "resolve_tiling", "aggregation_cycles", "combination_cycles",
    "dataflow_cycles", "GNNDataflowTiming",
]

DEFAULT_PES = 512                     # §3.2: the accelerator of Garg et al., 512 PEs
DEFAULT_MEMORY_WORDS_PER_CYCLE = 32   # assumed; the paper gives no memory bandwidth
INTER_PHASE = ("seq", "sp", "pp")


def _table_2(pes: int, nodes: int, features: int) -> dict[str, tuple[int, int, int, int]]:
    """Table 2 of the paper: (T_Fa, T_N, T_Gc, T_Fc) of each tiling scheme, as printed."""
    f, half_f = features, features // 2
    return {
        "a": (min(pes, f), 1, 1, min(pes, f)),
        "b": (min(2, f), half_f, 1, min(2, f)),
        "c": (min(8, f), half_f, 1, min(8, f)),
        "d": (1, 1, 1, 1),
        "e": (min(18, f), half_f, 1, min(18, f)),
        "f": (1, min(18, nodes), 1, 1),
        "g": (min(18, f), 1, 1, min(85, f)),
        "h": (1, min(18, nodes), 1, min(85, f)),
    }


# The scheme names, read off the table itself so that the two cannot disagree.
TILINGS = tuple(_table_2(DEFAULT_PES, 1, 1))


def _check_degrees(degrees: tuple[int, ...]) -> None:
    if not degrees:
        raise ValueError("degrees must list at least one node")
    if min(degrees) < 0:
        raise ValueError(f"degrees must be >= 0, got {min(degrees)}")


@dataclass(frozen=True)
class GraphShape:
    """What the latency of one GCN layer depends on: degrees and feature widths."""
    degrees: tuple[int, ...]      # N_v of every node v; V is their count
    in_features: int              # F
    out_features: int             # G

    def __post_init__(self):
        _check_degrees(self.degrees)
        require_positive(in_features=self.in_features, out_features=self.out_features)

    @property
    def nodes(self) -> int:
        return len(self.degrees)

    @classmethod
    def of(cls, graph: nx.Graph, in_features: int, out_features: int) -> "GraphShape":
        return cls(tuple(degree for _, degree in graph.degree()), in_features, out_features)


@dataclass(frozen=True)
class Tiling:
    """Spatial tile sizes of both phases, resolved for one graph and PE count."""
    name: str
    t_va: int
    t_fa: int
    t_n: int
    t_vc: int
    t_gc: int
    t_fc: int


@dataclass(frozen=True)
class Dataflow:
    """One of the 24 accelerator configurations: inter-phase dataflow and tiling scheme."""
    inter_phase: str
    tiling: str

    def __post_init__(self):
        if self.inter_phase not in INTER_PHASE:
            raise ValueError(f"inter_phase must be one of {', '.join(INTER_PHASE)}, got {self.inter_phase!r}")
        if self.tiling not in TILINGS:
            raise ValueError(f"tiling must be one of {', '.join(TILINGS)}, got {self.tiling!r}")

    def __str__(self):
        return f"{self.inter_phase}-{self.tiling}"


CONFIGURATIONS = tuple(Dataflow(inter, tiling) for inter in INTER_PHASE for tiling in TILINGS)


def resolve_tiling(name: str, shape: GraphShape, pes: int = DEFAULT_PES) -> Tiling:
    """Tile sizes of scheme ``name`` for ``shape``; ``T_Va`` and ``T_Vc`` fill the remaining PEs.

    Two corrections keep the printed table usable for every graph: a tile is at least 1
    (``floor(F/2)`` is 0 when F = 1), and when ``T_Fa * T_N`` exceeds the PEs (``e`` with
    F = 600 asks for 18 x 300) ``T_N`` is cut to what fits.
    """
    require_positive(pes=pes)
    if name not in TILINGS:
        raise ValueError(f"tiling must be one of {', '.join(TILINGS)}, got {name!r}")
    t_fa, t_n, t_gc, t_fc = (max(1, t) for t in _table_2(pes, shape.nodes, shape.in_features)[name])
    t_fa = min(t_fa, pes)
    t_n = min(t_n, max(1, pes // t_fa))
    t_va = min(shape.nodes, max(1, pes // (t_fa * t_n)))
    t_vc = min(shape.nodes, max(1, pes // (t_gc * t_fc)))
    return Tiling(name, t_va, t_fa, t_n, t_vc, t_gc, t_fc)


def aggregation_cycles(shape: GraphShape, tiling: Tiling) -> int:
    steps = sum(math.ceil(degree / min(degree, tiling.t_n)) for degree in shape.degrees if degree)
    return math.ceil(steps * math.ceil(shape.in_features / tiling.t_fa) / tiling.t_va)


def combination_cycles(shape: GraphShape, tiling: Tiling) -> int:
    return (math.ceil(shape.nodes / tiling.t_vc) * math.ceil(shape.in_features / tiling.t_fc)
            * math.ceil(shape.out_features / tiling.t_gc))


def dataflow_cycles(shape: GraphShape, dataflow: Dataflow, pes: int = DEFAULT_PES,
                    memory_words_per_cycle: int = DEFAULT_MEMORY_WORDS_PER_CYCLE) -> int:
    """Surrogate latency, in accelerator cycles, of one GCN layer of ``shape`` under ``dataflow``."""
    require_positive(memory_words_per_cycle=memory_words_per_cycle)
    if dataflow.inter_phase == "pp":
        half = resolve_tiling(dataflow.tiling, shape, max(1, pes // 2))
        return max(aggregation_cycles(shape, half), combination_cycles(shape, half))
    tiling = resolve_tiling(dataflow.tiling, shape, pes)
    compute = aggregation_cycles(shape, tiling) + combination_cycles(shape, tiling)
    if dataflow.inter_phase == "seq":
        traffic = 2 * shape.nodes * shape.in_features          # intermediate out and back in
    else:
        traffic = math.ceil(shape.nodes / tiling.t_va) * shape.in_features * shape.out_features
    return compute + math.ceil(traffic / memory_words_per_cycle)


class GNNDataflowTiming:
    """A GNN accelerator fixed to one ``dataflow``, with a graph's adjacency pre-loaded.

    A task reads the V x F feature matrix (its input region) and writes the V x G result
    (its output region), so F and G follow from the region sizes. The paper assumes a
    1 GHz accelerator (§4.2); the count is in accelerator cycles, which are scheduler cycles
    when both share a clock.
    """

    def __init__(self, degrees, dataflow: Dataflow, block_words: int, pes: int = DEFAULT_PES,
                 memory_words_per_cycle: int = DEFAULT_MEMORY_WORDS_PER_CYCLE):
        self.degrees = tuple(int(d) for d in degrees)
        _check_degrees(self.degrees)
        require_positive(block_words=block_words, pes=pes, memory_words_per_cycle=memory_words_per_cycle)
        self.dataflow, self.block_words = dataflow, block_words
        self.pes, self.memory_words_per_cycle = pes, memory_words_per_cycle

    def _features(self, blocks: int, region: str) -> int:
        features = blocks * self.block_words // len(self.degrees)
        if features < 1:
            raise ValueError(f"task {region} region of {blocks} blocks x {self.block_words} words holds "
                             f"less than one feature per node ({len(self.degrees)} nodes)")
        return features

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        shape = GraphShape(self.degrees, self._features(word.b, "input"), self._features(word.d, "output"))
        return max(1, dataflow_cycles(shape, self.dataflow, self.pes, self.memory_words_per_cycle))
