"""DYPE's pipeline DP against brute force, and MTrain's mapping steps, each step's invariant."""

import re

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from hts.models.devices.dype import DYPE_GNN_DEVICES, DeviceSpec
from hts.models.graphs import cnn_training
from hts.models.schedulers.mtrain import (
    Placement, balance_remap, balanced_accelerator, dram_aware_mapping, dram_peaks, fits, locality_remap,
    mtrain_mapping, timeline,
)
from hts.models.schedulers.pipeline import (
    Kernel, Stage, all_pipelines, best_pipeline, dype_candidates, dype_schedule, evaluate, select,
)

# --- DYPE: the pipeline model by hand ------------------------------------------------

def test_three_fpgas_then_two_gpus_by_hand():
    """A GCN layer as 3F2G (Table V): SpMM on the FPGAs, GEMM on the GPUs."""
    kernels = (Kernel("spmm", {"fpga": 0.03, "gpu": 0.02}, output_bytes=0.5e9), Kernel("gemm", {"gpu": 0.01}))
    pipeline = evaluate(kernels, DYPE_GNN_DEVICES, [Stage(0, 1, "fpga", 3), Stage(1, 2, "gpu", 2)])
    transfer = 0.5e9 / (3 * 15.76e9)               # the FPGAs' links are the narrower side
    spmm, gemm = 0.03 / 3 + transfer, 0.01 / 2 + transfer
    assert str(pipeline) == "3F2G"
    assert pipeline.stage_seconds == pytest.approx((spmm, gemm))
    assert pipeline.period == pytest.approx(spmm) and pipeline.throughput == pytest.approx(1 / spmm)
    # Static power all period long, dynamic power while busy (Table II: 55/19.5 W, 300/45 W).
    assert pipeline.energy == pytest.approx(3 * (19.5 * spmm + 55 * spmm) + 2 * (45 * spmm + 300 * gemm))
    assert evaluate(kernels, DYPE_GNN_DEVICES, [Stage(0, 2, "fpga", 1)]) is None    # no GEMM on the FPGA


def test_brute_force_enumerates_every_pipeline():
    # Two kernels, one FPGA, one GPU: F, G, then F|G and G|F (F|F would need two FPGAs).
    devices = {"fpga": DeviceSpec("F", 1, 1.0, 1, 1), "gpu": DeviceSpec("G", 1, 1.0, 1, 1)}
    kernels = (Kernel("a", {"fpga": 1, "gpu": 1}), Kernel("b", {"fpga": 1, "gpu": 1}))
    assert sorted(str(p) for p in all_pipelines(kernels, devices)) == ["1F", "1F1G", "1G", "1G1F"]


def test_balanced_keeps_seventy_percent_of_the_best_throughput():
    kernels = (Kernel("spmm", {"fpga": 0.03, "gpu": 0.02}, 1e8), Kernel("gemm", {"gpu": 0.01, "fpga": 0.05}))
    pipelines = list(all_pipelines(kernels, DYPE_GNN_DEVICES))
    fastest = select(pipelines, "throughput")
    balanced = select(pipelines, "balanced")
    assert balanced.throughput >= 0.7 * fastest.throughput
    assert balanced.energy <= fastest.energy
    assert select(pipelines, "energy").energy <= balanced.energy


# --- DYPE: the DP against brute force -------------------------------------------------

def systems(transfers: bool, static: bool):
    """Small chains (1-4 kernels) on up to 3 FPGAs and 2 GPUs, with random costs."""
    seconds = st.dictionaries(st.sampled_from(["fpga", "gpu"]), st.integers(1, 20), min_size=1)
    size = st.integers(0, 8) if transfers else st.just(0)
    kernels = st.lists(st.tuples(seconds, size), min_size=1, max_size=4).map(
        lambda chain: tuple(Kernel(f"k{i}", s, b) for i, (s, b) in enumerate(chain)))
    power = st.integers(0, 10)

    def device(name, most):
        return st.builds(DeviceSpec, st.just(name), st.integers(1, most), st.integers(1, 4), power,
                         power if static else st.just(0))
    return st.tuples(kernels, st.fixed_dictionaries({"fpga": device("fpga", 3), "gpu": device("gpu", 2)}))


def feasible(kernels, devices) -> bool:
    """Whether any pipeline fits; when none does, the DP must not invent one either."""
    if any(all_pipelines(kernels, devices)):
        return True
    assert dype_candidates(kernels, devices) == []
    with pytest.raises(ValueError, match="no feasible pipeline"):
        dype_schedule(kernels, devices, "throughput")
    return False


@settings(max_examples=200)
@given(systems(transfers=False, static=True))
def test_dp_is_exact_for_throughput_when_transfers_are_free(system):
    """The period is then the largest of independent stage times: a bottleneck path, which a
    DP over (kernels, devices used) solves exactly."""
    kernels, devices = system
    if feasible(kernels, devices):
        assert dype_schedule(kernels, devices, "throughput").period == \
            pytest.approx(best_pipeline(kernels, devices, "throughput").period)


@settings(max_examples=200)
@given(systems(transfers=False, static=False))
def test_dp_is_exact_for_energy_when_transfers_are_free_and_static_power_zero(system):
    """Energy is then dynamic power times compute, summed over stages: additive."""
    kernels, devices = system
    if feasible(kernels, devices):
        assert dype_schedule(kernels, devices, "energy").energy == \
            pytest.approx(best_pipeline(kernels, devices, "energy").energy)


@settings(max_examples=200)
@given(systems(transfers=True, static=True))
def test_dp_tables_hold_real_pipelines_never_better_than_the_optimum(system):
    kernels, devices = system
    if not feasible(kernels, devices):
        return
    candidates = dype_candidates(kernels, devices)
    for candidate in candidates:
        assert evaluate(kernels, devices, candidate.stages) == candidate
        assert [s.start for s in candidate.stages] == [0] + [s.stop for s in candidate.stages[:-1]]
        assert candidate.stages[-1].stop == len(kernels)
    assert select(candidates, "throughput").period >= best_pipeline(kernels, devices, "throughput").period - 1e-9
    assert select(candidates, "energy").energy >= best_pipeline(kernels, devices, "energy").energy - 1e-9


def cx_system(devices, kernels):
    return tuple(Kernel(f"k{i}", s, b) for i, (s, b) in enumerate(kernels)), \
        {name: DeviceSpec(name, *spec) for name, spec in devices.items()}


# Where Algorithm 1 misses the optimum. Devices: name -> (count, link bytes/s, dynamic W,
# static W); kernels: (seconds per device type, output bytes).
COUNTEREXAMPLES = {
    # With transfers: dp_perf keeps 2G for k0-k1 (period 1.5 against 2 for 1G1G) and with
    # it both tables, but only 1G1G has the slack to absorb the 1 s transfer to the FPGAs
    # (2G: 1.5 + 1 = 2.5; 1G1G: 1 + 1 = 2).
    "throughput, with transfers": (
        {"gpu": (2, 2.0, 0, 1), "fpga": (2, 1.0, 0, 0)},
        [({"gpu": 2}, 0), ({"gpu": 1}, 2), ({"fpga": 1}, 0)],
        "throughput", ("2G2F", 2.5), ("1G1G2F", 2.0)),
    # Free transfers, static power on the FPGA only: for k0-k1 on two GPUs, 1G1G (period 17)
    # and 2G (period 14.5) both cost 29 J, dp_eng keeps the first found (1G1G), and the
    # FPGA added next pays static power for the longer period.
    "energy, static power": (
        {"fpga": (1, 1.0, 10, 5), "gpu": (2, 1.0, 1, 0)},
        [({"fpga": 7, "gpu": 12}, 0), ({"fpga": 6, "gpu": 17}, 0), ({"fpga": 3}, 0)],
        "energy", ("1G1G1F", 144.0), ("2G1F", 131.5)),
    # No static power, but transfers: the stage added last makes the one before it
    # transfer (and burn dynamic power), which dp_eng could not see when it chose.
    "energy, with transfers": (
        {"fpga": (2, 1.0, 4, 0), "gpu": (1, 2.0, 5, 0)},
        [({"fpga": 4, "gpu": 6}, 0), ({"fpga": 4, "gpu": 9}, 1), ({"fpga": 7, "gpu": 4}, 4)],
        "energy", ("2F", 60.0), ("2F1G", 58.5)),
    # Free transfers: the tables hold, per device count, only the fastest and the most
    # frugal pipeline; the balanced optimum (period 13 within 11 / 0.7) is neither.
    "balanced, free transfers": (
        {"fpga": (1, 1.0, 2, 1), "gpu": (1, 2.0, 6, 2)},
        [({"fpga": 5, "gpu": 4}, 0), ({"fpga": 8, "gpu": 7}, 0), ({"fpga": 9, "gpu": 8}, 0)],
        "balanced", ("1G1F", 117.0), ("1F1G", 113.0)),
}


@pytest.mark.parametrize("case", COUNTEREXAMPLES)
def test_dp_counterexamples(case):
    devices, kernels, objective, (dp_name, dp_value), (best_name, best_value) = COUNTEREXAMPLES[case]
    kernels, devices = cx_system(devices, kernels)
    measure = "period" if objective == "throughput" else "energy"
    found, best = dype_schedule(kernels, devices, objective), best_pipeline(kernels, devices, objective)
    assert (str(found), getattr(found, measure)) == (dp_name, pytest.approx(dp_value))
    assert (str(best), getattr(best, measure)) == (best_name, pytest.approx(best_value))


@pytest.mark.parametrize("make, key", [
    (lambda: Kernel("spmm", {}), "at least one device type"),
    (lambda: Kernel("spmm", {"gpu": 0}), r"seconds\['gpu'\]"),
    (lambda: Kernel("spmm", {"gpu": 1}, -1), "output_bytes"),
    (lambda: dype_candidates([Kernel("k", {"tpu": 1})], DYPE_GNN_DEVICES), "no device type tpu"),
    (lambda: dype_schedule([Kernel("k", {"gpu": 1})], DYPE_GNN_DEVICES, "speed"), "objective must be one of"),
    (lambda: DeviceSpec("X", 0, 1.0, 1, 1), "count"),
    (lambda: evaluate([Kernel("k", {"gpu": 1})] * 2, DYPE_GNN_DEVICES, [Stage(1, 2, "gpu", 1)]),
     r"stage 0 covers kernels \[1, 2\); it must start at 0"),
    (lambda: evaluate([Kernel("k", {"gpu": 1})], DYPE_GNN_DEVICES, [Stage(0, 1, "gpu", 3)]),
     "use 3 gpu devices; the system has 2"),
])
def test_bad_pipeline_input_names_the_field(make, key):
    with pytest.raises(ValueError, match=key):
        make()


# --- MTrain mapping ------------------------------------------------------------------

FAST, SLOW = "acc1", "acc2"      # Acc1 has twice the PEs of Acc2 (Figure 6 of the paper)


def training_graph(layers: int, branches: int, comm: int = 1, memory: int = 0, weights: int = 0) -> nx.DiGraph:
    """A CNN training workflow as MTrain-Converting makes it (Figure 5).

    Forward conv sub-operations ``f{l}.{b}`` per branch, a fused batch-norm ``bn{l}`` per
    layer, backward ``b{l}.{b}`` and weight updates ``w{l}.{b}`` that need the forward
    input and the backward loss; the weight gradients of all branches meet in ``u{l}``.
    Costs: 4 cycles per sub-operation on Acc1, 8 on Acc2; batch-norm 1 and 2.
    """
    graph = nx.DiGraph()

    def op(name, cycles, branch=None):
        graph.add_node(name, cost={FAST: cycles, SLOW: 2 * cycles}, memory=memory, weights=weights,
                       **({} if branch is None else {"branch": branch}))

    for layer in range(layers):
        op(f"bn{layer}", 1)
        for b in range(branches):
            op(f"f{layer}.{b}", 4, b)
            if layer:
                graph.add_edge(f"bn{layer - 1}", f"f{layer}.{b}", comm=comm)
            graph.add_edge(f"f{layer}.{b}", f"bn{layer}", comm=comm)
    for layer in reversed(range(layers)):
        op(f"u{layer}", 1)
        for b in range(branches):
            op(f"b{layer}.{b}", 4, b)
            op(f"w{layer}.{b}", 4, b)
            source = f"bn{layers - 1}" if layer == layers - 1 else f"b{layer + 1}.{b}"
            graph.add_edge(source, f"b{layer}.{b}", comm=comm)
            graph.add_edge(f"b{layer}.{b}", f"w{layer}.{b}", comm=comm)
            graph.add_edge(f"f{layer}.{b}", f"w{layer}.{b}", comm=comm)
            graph.add_edge(f"w{layer}.{b}", f"u{layer}", comm=comm)
    return graph


def test_timeline_by_hand():
    graph = nx.DiGraph()
    graph.add_node("a", cost={FAST: 4, SLOW: 8})
    graph.add_node("b", cost={FAST: 3, SLOW: 6})
    graph.add_node("c", cost={FAST: 2, SLOW: 4})
    graph.add_edge("a", "c", comm=5)
    graph.add_edge("b", "c", comm=7)
    # a and c on Acc1, b on Acc2: c waits for b (6) and pays b's transfer (7) on top of its 2.
    times = timeline(graph, Placement(("a", "b", "c"), {"a": FAST, "b": SLOW, "c": FAST}))
    assert dict(times.start) == {"a": 0, "b": 0, "c": 6} and dict(times.finish) == {"a": 4, "b": 6, "c": 15}
    assert times.latency == 15 and times.busy == 4 + 6 + 9


def test_dram_peak_holds_outputs_until_the_last_consumer():
    graph = nx.DiGraph()
    for name, memory in (("a", 10), ("b", 20), ("c", 0)):
        graph.add_node(name, cost={FAST: 1}, memory=memory, weights=1)
    graph.add_edges_from([("a", "b"), ("a", "c"), ("b", "c")])
    placement = Placement(("a", "b", "c"), {"a": FAST, "b": FAST, "c": FAST})
    times = timeline(graph, placement)
    # a's 10 bytes live until c finishes, b's 20 from b's start: 30 + 3 bytes of weights.
    assert dram_peaks(graph, placement, times) == {FAST: 33}
    assert fits(graph, placement, {FAST: 33}, times) and not fits(graph, placement, {FAST: 32}, times)


def test_dram_aware_mapping_reproduces_figure_3():
    """Figure 3(c): both sub-operations of layer 1 would be cheapest on Acc2, whose DRAM
    cannot hold both; of the rest, splitting them costs least (ΔLat 4 + 5 against 10)."""
    graph = nx.DiGraph()
    graph.add_node("1.1", cost={"acc1": 5, "acc2": 4}, weights=60)
    graph.add_node("1.2", cost={"acc1": 5, "acc2": 4}, weights=60)
    placement = dram_aware_mapping(graph, {"acc1": 200, "acc2": 100})
    assert dict(placement.accelerator) == {"1.1": "acc1", "1.2": "acc2"}
    assert dict(dram_aware_mapping(graph, {"acc1": 200, "acc2": 200}).accelerator) == {"1.1": "acc2", "1.2": "acc2"}
    with pytest.raises(ValueError, match="no placement of 1.1, 1.2 fits the DRAM budgets"):
        dram_aware_mapping(graph, {"acc1": 59, "acc2": 59})


def is_topological(graph, order):
    position = {op: k for k, op in enumerate(order)}
    return set(order) == set(graph) and all(position[u] < position[v] for u, v in graph.edges)


def test_dram_budget_changes_the_greedy_mapping():
    graph = training_graph(layers=2, branches=2, comm=3, memory=5, weights=2)
    roomy = dram_aware_mapping(graph, {FAST: 10**6, SLOW: 10**6})
    assert is_topological(graph, roomy.order)
    peak = dram_peaks(graph, roomy, timeline(graph, roomy))[FAST]
    tight = {FAST: peak - 1, SLOW: 10**6}
    placement = dram_aware_mapping(graph, tight)
    assert is_topological(graph, placement.order)
    assert fits(graph, placement, tight, timeline(graph, placement))
    assert not fits(graph, roomy, tight, timeline(graph, roomy))


def four_sub_operations(slow_cycles: int) -> nx.DiGraph:
    """Figure 7(a): l1 -> l3 and l2 -> l4; l1, l2 split from one layer, l3, l4 from the next."""
    graph = nx.DiGraph()
    for name, branch in (("l1", 0), ("l2", 1), ("l3", 0), ("l4", 1)):
        graph.add_node(name, cost={FAST: 4, SLOW: slow_cycles}, branch=branch)
    graph.add_edges_from([("l1", "l3"), ("l2", "l4")])
    return graph


ROOMY = {FAST: 10**6, SLOW: 10**6}


def test_balance_remap_reproduces_figure_7():
    graph = four_sub_operations(slow_cycles=9)
    # (b) Greedy: every sub-operation costs least on Acc1, so all go there: Lat 16.
    initial = dram_aware_mapping(graph, ROOMY)
    assert set(initial.accelerator.values()) == {FAST} and timeline(graph, initial).latency == 16
    # (c) Well balanced, branch b on Acc b: 18, worse.
    balanced_everywhere = Placement(initial.order, {op: balanced_accelerator(graph, op, ROOMY) for op in graph})
    assert dict(balanced_everywhere.accelerator) == {"l1": FAST, "l2": SLOW, "l3": FAST, "l4": SLOW}
    assert timeline(graph, balanced_everywhere).latency == 18
    # (d) Moving l2 alone: l2 on Acc2 until 9, l4 after it on Acc1: 13. Moving l4 as well: 18.
    remapped = balance_remap(graph, ROOMY, initial)
    assert dict(remapped.accelerator) == {"l1": FAST, "l2": SLOW, "l3": FAST, "l4": FAST}
    assert timeline(graph, remapped).latency == 13


def test_locality_remap_by_hand():
    graph = nx.DiGraph()
    graph.add_node("a", cost={FAST: 4, SLOW: 20})
    graph.add_node("b", cost={FAST: 4, SLOW: 5})
    graph.add_edge("a", "b", comm=10)
    # a to b's Acc2 would take 20 + 5 = 25; b to a's Acc1 takes 4 + 4 = 8.
    apart = Placement(("a", "b"), {"a": FAST, "b": SLOW})
    assert timeline(graph, apart).latency == 4 + 10 + 5
    together = locality_remap(graph, ROOMY, apart)
    assert dict(together.accelerator) == {"a": FAST, "b": FAST} and timeline(graph, together).latency == 8


def neighbour_moves(graph, placement):
    for op in graph:
        for n in list(graph.predecessors(op)) + list(graph.successors(op)):
            target = placement.accelerator[n]
            if target != placement.accelerator[op]:
                yield placement.moved(op, target)


def balance_moves(graph, placement, budgets):
    for op in graph:
        target = balanced_accelerator(graph, op, budgets)
        if target not in (None, placement.accelerator[op]):
            yield placement.moved(op, target)


@pytest.mark.parametrize("layers, branches, comm, memory", [
    (1, 2, 0, 0), (2, 2, 2, 3), (2, 2, 9, 3), (1, 3, 1, 2), (2, 3, 5, 4), (3, 2, 1, 1),
])
def test_every_step_keeps_its_invariant(layers, branches, comm, memory):
    graph = training_graph(layers, branches, comm=comm, memory=memory, weights=1)
    budgets = {FAST: 12 * memory + 40, SLOW: 10 * memory + 40}
    steps = mtrain_mapping(graph, budgets)
    assert list(steps) == ["dram_aware", "balance", "locality"]
    latencies = []
    for placement in steps.values():
        times = timeline(graph, placement)
        assert is_topological(graph, placement.order) and fits(graph, placement, budgets, times)
        latencies.append(times.latency)
    assert latencies == sorted(latencies, reverse=True)          # no step makes Lat longer
    initial, balanced, final = steps.values()
    moved = [op for op in graph if balanced.accelerator[op] != initial.accelerator[op]]
    assert all(balanced.accelerator[op] == balanced_accelerator(graph, op, budgets) for op in moved)
    # Each re-mapping stops at a fixed point: no single move of its kind shortens Lat in budget.
    for step, moves in ((balanced, balance_moves(graph, balanced, budgets)), (final, neighbour_moves(graph, final))):
        latency = timeline(graph, step).latency
        for trial in moves:
            times = timeline(graph, trial)
            assert times.latency >= latency or not fits(graph, trial, budgets, times)


def test_mapping_of_the_generated_three_layer_example():
    """Seed 001's example (conv, BN, FC on two branches: 12 operations) from
    :func:`hts.models.graphs.cnn_training`, whose split parts carry the ``branch`` the
    balance step reads."""
    kinds = ("conv_fp", "conv_bp", "conv_wu", "bn_fp", "bn_bp", "fc_fp", "fc_bp", "fc_wu")
    costs = {kind: {FAST: 2, SLOW: 3} if kind.startswith("bn") else {FAST: 8, SLOW: 12} for kind in kinds}
    graph = cnn_training(("conv", "bn", "fc"), 2, costs).graph
    assert len(graph) == 12
    for operation in graph:
        split = re.search(r"_b(\d+)$", operation)
        assert graph.nodes[operation].get("branch") == (int(split.group(1)) if split else None)
    steps = mtrain_mapping(graph, ROOMY)
    initial, balanced, final = (timeline(graph, placement).latency for placement in steps.values())
    # Greedy: everything on Acc1, one after another: 10 split parts of 4 cycles, 2 BNs of 2.
    assert initial == 10 * 4 + 2 * 2
    assert final <= balanced < initial
    assert set(steps["locality"].accelerator.values()) == {FAST, SLOW}


@pytest.mark.parametrize("make, key", [
    (lambda: dram_aware_mapping(training_graph(1, 2), {}), "at least one accelerator"),
    (lambda: dram_aware_mapping(training_graph(1, 2), {FAST: -1}), r"budgets\['acc1'\]"),
    (lambda: dram_aware_mapping(training_graph(1, 2), {"acc9": 10}), "names none of the accelerators acc9"),
    (lambda: dram_aware_mapping(nx.DiGraph([("a", "b"), ("b", "a")]), {FAST: 1}), "acyclic"),
])
def test_bad_mapping_input_names_the_field(make, key):
    with pytest.raises(ValueError, match=key):
        make()
