"""Task-graph generators: the random and structured families of seed 004 (section 6.1.1),
the batch-split CNN training graphs of seed 001 and the GNN kernel chains of seed 000.

Random generators take a ``seed`` and give the same graph for the same arguments. Their
tasks get a kind drawn uniformly from ``kinds`` and a cost drawn uniformly from
``cost_range`` cycles. By default a task runs only on the accelerator class named by its
kind (seed 004's typed PEs, section 6.3.3). With ``classes``, every task runs on every
one of those classes, at its own random cost on each (a heterogeneous system as in
Topcuoglu et al.). Edge costs are drawn from ``comm_range``, which defaults to none
(seed 004, section 6.4.2.1: "communication cost is not set").
"""

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from itertools import accumulate

import networkx as nx

from .from_program import dependences, task_name
from .taskgraph import TaskGraph, build_graph

__all__ = [
    "DEFAULT_KINDS", "DEFAULT_COST_RANGE", "layer_by_layer", "erdos_renyi", "uniform_dag", "count_dags",
    "lu", "cholesky", "cnn_training", "gnn_chain", "BATCH_WISE_LAYERS",
]

DEFAULT_KINDS = ("a", "b", "c")
# Mean 100, the uniform task cost of seed 004's evaluation (section 6.4.2.1), with spread.
DEFAULT_COST_RANGE = (50, 150)


def _random_graph(label: str, count: int, edges: Iterable[tuple[int, int]], rng: random.Random,
                  kinds: Sequence[str], cost_range: tuple[int, int], comm_range: tuple[int, int],
                  classes: Sequence[str] | None) -> TaskGraph:
    tasks = []
    for index in range(count):
        kind = rng.choice(kinds)
        runs_on = classes or (kind,)
        tasks.append((task_name(index), kind, {c: rng.randint(*cost_range) for c in runs_on}))
    links = [(task_name(u), task_name(v), rng.randint(*comm_range)) for u, v in sorted(edges)]
    return build_graph(label, tasks, links)


def layer_by_layer(tasks: int, layers: int, probability: float, seed: int, kinds: Sequence[str] = DEFAULT_KINDS,
                   cost_range: tuple[int, int] = DEFAULT_COST_RANGE, comm_range: tuple[int, int] = (0, 0),
                   classes: Sequence[str] | None = None) -> TaskGraph:
    """Tasks split into ``layers`` non-empty layers at random; each pair of tasks in
    consecutive layers is joined with ``probability`` (a layer may end up unconnected)."""
    if not 1 <= layers <= tasks:
        raise ValueError(f"layers must be between 1 and the number of tasks ({tasks}), got {layers}")
    rng = random.Random(seed)
    cuts = [0, *sorted(rng.sample(range(1, tasks), layers - 1)), tasks]
    bands = [range(lo, hi) for lo, hi in zip(cuts, cuts[1:])]
    edges = [(u, v) for upper, lower in zip(bands, bands[1:]) for u in upper for v in lower
             if rng.random() < probability]
    label = f"layer_by_layer(tasks={tasks}, layers={layers}, p={probability}, seed={seed})"
    return _random_graph(label, tasks, edges, rng, kinds, cost_range, comm_range, classes)


def erdos_renyi(tasks: int, probability: float, seed: int, kinds: Sequence[str] = DEFAULT_KINDS,
                cost_range: tuple[int, int] = DEFAULT_COST_RANGE, comm_range: tuple[int, int] = (0, 0),
                classes: Sequence[str] | None = None) -> TaskGraph:
    """Each pair ``i < j`` joined ``i -> j`` with ``probability``: acyclic by construction."""
    rng = random.Random(seed)
    undirected = nx.gnp_random_graph(tasks, probability, seed=rng.randrange(2**32))
    edges = [(min(u, v), max(u, v)) for u, v in undirected.edges]
    label = f"erdos_renyi(tasks={tasks}, p={probability}, seed={seed})"
    return _random_graph(label, tasks, edges, rng, kinds, cost_range, comm_range, classes)


@cache
def _dags_with_sources(nodes: int, sources: int) -> int:
    """Labelled DAGs on ``nodes`` nodes of which exactly ``sources`` have no incoming edge.

    Kuipers and Moffa's recurrence: remove the sources; each of the ``s`` sources of the
    rest has a non-empty set of parents among them, every other node any set.
    """
    if sources == nodes:
        return 1
    rest = nodes - sources
    return math.comb(nodes, sources) * sum(
        (2**sources - 1) ** s * 2 ** (sources * (rest - s)) * _dags_with_sources(rest, s) for s in range(1, rest + 1))


def count_dags(nodes: int) -> int:
    """Labelled DAGs on ``nodes`` nodes (1, 3, 25, 543, ... for 1, 2, 3, 4 nodes)."""
    return sum(_dags_with_sources(nodes, k) for k in range(1, nodes + 1))


def _weighted_choice(rng: random.Random, weights: Sequence[int]) -> int:
    """An index drawn with probability proportional to its (arbitrarily large) integer weight."""
    pick = rng.randrange(sum(weights))
    for index, weight in enumerate(weights):
        if pick < weight:
            return index
        pick -= weight
    raise AssertionError("weights changed while drawing")


def _layer_sizes(rng: random.Random, nodes: int) -> list[int]:
    """Sizes of the source layers of a uniformly drawn DAG, first layer first."""
    sizes = [1 + _weighted_choice(rng, [_dags_with_sources(nodes, k) for k in range(1, nodes + 1)])]
    remaining = nodes - sizes[0]
    while remaining:
        above = sizes[-1]
        weights = [(2**above - 1) ** s * 2 ** (above * (remaining - s)) * _dags_with_sources(remaining, s)
                   for s in range(1, remaining + 1)]
        sizes.append(1 + _weighted_choice(rng, weights))
        remaining -= sizes[-1]
    return sizes


def _some_of(rng: random.Random, items: Sequence[int]) -> list[int]:
    """A uniformly drawn non-empty subset."""
    while True:
        chosen = [item for item in items if rng.random() < 0.5]
        if chosen:
            return chosen


def uniform_dag(tasks: int, seed: int, kinds: Sequence[str] = DEFAULT_KINDS,
                cost_range: tuple[int, int] = DEFAULT_COST_RANGE, comm_range: tuple[int, int] = (0, 0),
                classes: Sequence[str] | None = None) -> TaskGraph:
    """A DAG drawn uniformly from all labelled DAGs on ``tasks`` nodes (Kuipers and Moffa's
    enumeration method, seed 004's third random family)."""
    rng = random.Random(seed)
    sizes = _layer_sizes(rng, tasks)
    bounds = [0, *accumulate(sizes)]
    layers = [list(range(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]
    edges = []
    for depth in range(1, len(layers)):
        earlier = [node for layer in layers[: depth - 1] for node in layer]
        for node in layers[depth]:
            edges += [(parent, node) for parent in _some_of(rng, layers[depth - 1])]
            edges += [(parent, node) for parent in earlier if rng.random() < 0.5]
    labels = list(range(tasks))
    rng.shuffle(labels)      # every labelling of the drawn shape is equally likely
    relabelled = [(labels[u], labels[v]) for u, v in edges]
    label = f"uniform_dag(tasks={tasks}, seed={seed})"
    return _random_graph(label, tasks, relabelled, rng, kinds, cost_range, comm_range, classes)


def _tile_graph(label: str, kernels: list[tuple[str, str, list[int], list[int]]], cost: int, comm: int) -> TaskGraph:
    """A graph of tile kernels ``(task, kind, tiles read, tiles written)`` in program order;
    edges from the tiles they share, as the memory tracker would find them."""
    found = dependences([(reads, writes) for _, _, reads, writes in kernels])
    tasks = [(task, kind, {kind: cost}) for task, kind, _, _ in kernels]
    edges = [(kernels[u][0], kernels[v][0], comm) for u, v in sorted(found)]
    return build_graph(label, tasks, edges)


def lu(tiles: int, cost: int = 100, comm: int = 0) -> TaskGraph:
    """Right-looking blocked LU factorisation (no pivoting) of ``tiles`` x ``tiles`` tiles.

    Four kernel kinds, as seed 004 describes: ``getrf`` factors a diagonal tile,
    ``trsm_u`` and ``trsm_l`` solve a tile of U's row and L's column, ``gemm`` updates the
    trailing matrix. Seed 004 measured one cost for every kind at a given tile size.
    """
    def tile(i, j):
        return i * tiles + j

    kernels = []
    for k in range(tiles):
        kernels.append((f"getrf_{k}", "getrf", [tile(k, k)], [tile(k, k)]))
        for j in range(k + 1, tiles):
            kernels.append((f"trsm_u_{k}_{j}", "trsm_u", [tile(k, k), tile(k, j)], [tile(k, j)]))
        for i in range(k + 1, tiles):
            kernels.append((f"trsm_l_{i}_{k}", "trsm_l", [tile(k, k), tile(i, k)], [tile(i, k)]))
        for i in range(k + 1, tiles):
            for j in range(k + 1, tiles):
                kernels.append((f"gemm_{i}_{j}_{k}", "gemm", [tile(i, k), tile(k, j), tile(i, j)], [tile(i, j)]))
    return _tile_graph(f"lu(tiles={tiles})", kernels, cost, comm)


def cholesky(tiles: int, cost: int = 100, comm: int = 0) -> TaskGraph:
    """Right-looking blocked Cholesky factorisation (lower) of ``tiles`` x ``tiles`` tiles:
    ``potrf``, ``trsm``, ``syrk`` and ``gemm`` kernels."""
    def tile(i, j):
        return i * tiles + j

    kernels = []
    for k in range(tiles):
        kernels.append((f"potrf_{k}", "potrf", [tile(k, k)], [tile(k, k)]))
        for i in range(k + 1, tiles):
            kernels.append((f"trsm_{i}_{k}", "trsm", [tile(k, k), tile(i, k)], [tile(i, k)]))
        for i in range(k + 1, tiles):
            kernels.append((f"syrk_{i}_{k}", "syrk", [tile(i, k), tile(i, i)], [tile(i, i)]))
            for j in range(k + 1, i):
                kernels.append((f"gemm_{i}_{j}_{k}", "gemm", [tile(i, k), tile(j, k), tile(i, j)], [tile(i, j)]))
    return _tile_graph(f"cholesky(tiles={tiles})", kernels, cost, comm)


# Layers whose statistics span the whole batch (seed 001: batch normalisation); the
# others work on each sample apart and are split along the batch.
BATCH_WISE_LAYERS = frozenset({"bn"})


def cnn_training(layers: Sequence[str], branches: int, costs: Mapping[str, Mapping[str, int]]) -> TaskGraph:
    """One training step of a CNN split along the batch into ``branches`` (seed 001, MTrain).

    ``layers`` lists the layer kinds in order, e.g. ``("conv", "bn", "fc")``. Each layer
    has a forward (``fp``) operation; each layer but the first a backward one (``bp``,
    the gradient at its input); each layer with weights (not batch-wise) a weight-gradient
    one (``wu``). Operations of per-sample layers are split into ``branches`` equal parts,
    one per branch; batch-wise layers stay whole and fuse the branches. ``costs`` gives,
    for ``"<layer>_<phase>"``, the cycles of the whole operation on each accelerator class;
    a split part costs its share, rounded up, and carries its batch slice as the node
    attribute ``branch`` (which MTrain's balance step reads). The 3-layer example of seed
    001 (conv, BN, FC; two branches) gives its 12 operations.
    """
    tasks, edges, branch_of = [], [], {}

    def operation(layer: int, phase: str, branch: int | None) -> str:
        suffix = "" if branch is None else f"_b{branch}"
        return f"{phase}{layer}_{layers[layer]}{suffix}"

    def add(layer: int, phase: str, parents: Callable[[int | None], list[str]]) -> list[str]:
        kind = f"{layers[layer]}_{phase}"
        whole = layers[layer] in BATCH_WISE_LAYERS
        if kind not in costs:
            raise ValueError(f"costs has no entry for {kind!r}")
        share = {c: -(-cycles // (1 if whole else branches)) for c, cycles in costs[kind].items()}
        created = []
        for branch in ([None] if whole else range(branches)):
            name = operation(layer, phase, branch)
            tasks.append((name, kind, share))
            edges.extend((parent, name, 0) for parent in parents(branch))
            if branch is not None:
                branch_of[name] = branch
            created.append(name)
        return created

    def on_branch(names: list[str], branch: int | None) -> list[str]:
        """The producers a consumer on ``branch`` needs: its own branch, or all when fusing."""
        if len(names) <= 1:
            return names
        return names if branch is None else [names[branch]]

    forward = []
    for layer in range(len(layers)):
        previous = forward[-1] if forward else []
        forward.append(add(layer, "fp", lambda branch, previous=previous: on_branch(previous, branch)))
    gradient = forward[-1]          # the loss, from the last forward output
    for layer in reversed(range(len(layers))):
        at_output = gradient
        if layers[layer] not in BATCH_WISE_LAYERS:
            activation = forward[layer - 1] if layer else []
            add(layer, "wu", lambda branch, a=activation, g=at_output: on_branch(a, branch) + on_branch(g, branch))
        if layer:
            gradient = add(layer, "bp", lambda branch, g=at_output: on_branch(g, branch))
    label = f"cnn_training(layers={'-'.join(layers)}, branches={branches})"
    graph = build_graph(label, tasks, edges).graph.copy()
    nx.set_node_attributes(graph, branch_of, "branch")
    return TaskGraph(graph, label)


def gnn_chain(model: str, costs: Mapping[str, Mapping[str, int]], layers: int = 2, mlp_depth: int = 2,
              inputs: int = 1) -> TaskGraph:
    """The kernel chain of a GNN inference (seed 000, DYPE), for ``inputs`` independent inputs.

    A GCN layer is an SpMM (aggregation over the sparse adjacency) then a GEMM (the
    weights); a GIN layer is an SpMM then ``mlp_depth`` GEMMs (its MLP). ``costs`` gives
    the cycles of ``"spmm"`` and ``"gemm"`` on each accelerator class (DYPE's point:
    SpMM suits the FPGA, GEMM the GPU).
    """
    if model not in ("gcn", "gin"):
        raise ValueError(f"model must be 'gcn' or 'gin', got {model!r}")
    gemms = 1 if model == "gcn" else mlp_depth
    kernels = [kernel for _ in range(layers) for kernel in ("spmm", *["gemm"] * gemms)]
    tasks, edges = [], []
    for graph_input in range(inputs):
        names = [f"{kernel}{position}_in{graph_input}" for position, kernel in enumerate(kernels)]
        tasks += [(name, kernel, costs[kernel]) for name, kernel in zip(names, kernels)]
        edges += [(u, v, 0) for u, v in zip(names, names[1:])]
    return build_graph(f"gnn_chain(model={model}, layers={layers}, inputs={inputs})", tasks, edges)
