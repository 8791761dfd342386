"""Task graphs: the conventions and their errors, GraphML, programs <-> graphs, the generators."""

import collections

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from hts.assembler import assemble
from hts.base.errors import HTSError
from hts.models.graphs import (
    GraphError, TaskGraph, build_graph, case_study, cholesky, cnn_training, count_dags, dependences, erdos_renyi,
    gnn_chain, graph_program, layer_by_layer, lu, program_graph, read_graphml, topcuoglu, uniform_dag,
    write_graphml,
)
from hts.models.graphs.to_program import greedy_layout, layout_edges
from hts.models.memory import initial_memory
from hts.models.report import compare_rows, compare_runs

SMALL = settings(max_examples=20)


def graph_with(**node):
    raw = nx.DiGraph()
    raw.add_node("x", **node)
    return raw


# ---- conventions -------------------------------------------------------------------------

@pytest.mark.parametrize("attributes, expected", [
    ({"kind": "a"}, "task 'x': no 'cost', the cycles on each accelerator class"),
    ({"kind": "a", "cost": 5}, "task 'x': 'cost' must map accelerator classes to cycles, got 5"),
    ({"cost": {"a": 1}}, "task 'x': no 'kind'"),
    ({"kind": "a", "cost": {"a": 0}}, "task 'x': cost on 'a' must be an integer >= 1, got 0"),
    ({"kind": "a", "cost": {"a": 1.5}}, "task 'x': cost on 'a' must be an integer >= 1, got 1.5"),
    ({"kind": "", "cost": {"a": 1}}, "task 'x': 'kind' must be a non-empty string"),
])
def test_bad_task_is_named(attributes, expected):
    with pytest.raises(GraphError, match="^g.graphml: " + expected.replace("(", r"\(")):
        TaskGraph(graph_with(**attributes), "g.graphml")


def test_bad_edge_and_cycle_are_named():
    raw = nx.DiGraph()
    raw.add_node("u", kind="a", cost={"a": 1})
    raw.add_node("v", kind="a", cost={"a": 1})
    raw.add_edge("u", "v", comm=-1)
    raw.add_edge("v", "u")
    with pytest.raises(GraphError) as caught:
        TaskGraph(raw, "g")
    assert "edge 'u' -> 'v': 'comm' must be an integer >= 0, got -1" in str(caught.value)
    assert "cycle: 'u' -> 'v' -> 'u'" in str(caught.value) or "cycle: 'v' -> 'u' -> 'v'" in str(caught.value)


def test_empty_graph_and_unknown_edge_ends_are_errors():
    with pytest.raises(GraphError, match="no tasks"):
        TaskGraph(nx.DiGraph(), "empty")
    with pytest.raises(GraphError, match="names no task 'w'"):
        build_graph("g", [("u", "a", {"a": 1})], [("u", "w", 0)])


def test_graph_is_frozen_and_ordered_topologically():
    graph = case_study()
    with pytest.raises(nx.NetworkXError):
        graph.graph.add_node("extra")
    position = {task: i for i, task in enumerate(graph.tasks)}
    assert all(position[u] < position[v] for u, v in graph.edges)
    assert graph.classes == ("a", "b", "c") and graph.comm("v1", "v2") == 0


# ---- GraphML -----------------------------------------------------------------------------

def same_graph(a: TaskGraph, b: TaskGraph) -> bool:
    return dict(a.graph.nodes(data=True)) == dict(b.graph.nodes(data=True)) and \
        {e: a.graph.edges[e] for e in a.edges} == {e: b.graph.edges[e] for e in b.edges}


@pytest.mark.parametrize("make", [case_study, topcuoglu, lambda: lu(3, comm=7),
                                  lambda: erdos_renyi(9, 0.4, 3, classes=("x", "y"), comm_range=(0, 20))])
def test_graphml_round_trip(tmp_path, make):
    graph = make()
    write_graphml(graph, tmp_path / "g.graphml")
    back = read_graphml(tmp_path / "g.graphml")
    assert same_graph(graph, back)
    assert back.tasks == graph.tasks


@pytest.mark.parametrize("text, expected", [
    ("<graphml><graph", "not a valid GraphML file"),
    ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="undirected">'
     '<node id="a"/></graph></graphml>', "must be a directed graph"),
    ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><key id="k" for="node" attr.name="kind" '
     'attr.type="string"/><graph edgedefault="directed"><node id="a"><data key="k">x</data></node>'
     '</graph></graphml>', "task 'a': no 'cost', the cycles on each accelerator class that can run it (in "
     "GraphML, attributes cost_<class>)"),
])
def test_graphml_errors_name_the_file(tmp_path, text, expected):
    path = tmp_path / "bad.graphml"
    path.write_text(text)
    with pytest.raises(GraphError) as caught:
        read_graphml(path)
    assert "bad.graphml: " in str(caught.value) and expected in str(caught.value)


def test_missing_graphml_is_an_error(tmp_path):
    with pytest.raises(HTSError, match="absent.graphml: cannot read"):
        read_graphml(tmp_path / "absent.graphml")
    (tmp_path / "folder.graphml").mkdir()
    with pytest.raises(HTSError, match="folder.graphml: cannot read: a directory, not a regular file"):
        read_graphml(tmp_path / "folder.graphml")


# ---- program -> graph --------------------------------------------------------------------

def test_dependences_find_raw_war_waw():
    accesses = [([], [1]), ([1], [2]), ([], [1]), ([2], [2])]       # write 1; 1->2; rewrite 1; 2->2
    assert dependences(accesses) == {(0, 1): {"raw"}, (1, 2): {"war"}, (0, 2): {"waw"}, (1, 3): {"raw", "waw"}}


def test_program_graph_has_the_tracker_dependences(default_config):
    text = ("real_fir 10 2 20 1 0 0 0 0\n"      # t0 reads 10-11, writes 20
            "iir 20 1 30 1 0 0 0 0\n"           # t1 reads 20 (RAW on t0)
            "vector_add 11 1 20 1 0 0 0 0\n"    # t2 writes 20 (WAW on t0, WAR on t1)
            "vector_max 40 1 41 1 0 0 0 0\n")   # t3 independent
    program = assemble(text, default_config, "p.s")
    graph = program_graph([program], default_config, initial_memory(default_config))
    assert graph.tasks == ("t0", "t1", "t2", "t3")
    assert graph.edges == {("t0", "t1"), ("t0", "t2"), ("t1", "t2")}
    assert graph.graph.edges["t0", "t2"]["dependence"] == "waw"
    assert graph.graph.edges["t1", "t2"]["dependence"] == "war"
    assert graph.cost("t1") == {"iir": 2450} and graph.kind("t3") == "vector_max"


def test_program_graph_unrolls_loops(default_config):
    from hts import benchmarks
    program = assemble(benchmarks.source("loop_dependency"), default_config, "loop_dependency.s")
    graph = program_graph([program], default_config, initial_memory(default_config))
    reference = compare_rows(compare_runs(default_config, [program]))
    assert len(graph) == reference[0]["tasks"]
    assert len({graph.graph.nodes[t]["pc"] for t in graph.tasks}) < len(graph)


# ---- graph -> program --------------------------------------------------------------------

GENERATED = st.one_of(
    st.builds(layer_by_layer, st.integers(2, 9), st.integers(1, 2), st.floats(0.1, 0.9), st.integers(0, 10**6)),
    st.builds(erdos_renyi, st.integers(1, 9), st.floats(0.1, 0.9), st.integers(0, 10**6)),
    st.builds(uniform_dag, st.integers(1, 8), st.integers(0, 10**6)),
)


@SMALL
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n))), st.floats(0.1, 0.9),
       st.integers(0, 10**6))
def test_graph_program_graph_round_trip(default_config, size, probability, seed):
    tasks, layers = size
    graph = layer_by_layer(tasks, layers, probability, seed)
    made = graph_program(graph, {c: 1 for c in graph.classes}, default_config)
    back = program_graph([made.program], made.config, initial_memory(made.config), made.timing)
    renamed = {f"t{index}": task for index, task in enumerate(made.task_of_pc)}
    edges = {(renamed[u], renamed[v]) for u, v in back.edges}
    assert edges == graph.edges | made.extra_dependences
    assert all(back.cost(t) == {made.accel_class[renamed[t]]: graph.min_cost(renamed[t])} for t in back.tasks)


@SMALL
@given(GENERATED)
def test_graph_program_keeps_every_edge_and_runs(default_config, graph):
    made = graph_program(graph, {c: 2 for c in graph.classes}, default_config)
    assert graph.edges <= layout_edges(graph, greedy_layout(graph))
    runs = compare_runs(made.config, [made.program], timing=made.timing)
    assert runs["hts"].tasks == len(graph)
    assert runs["sequential"].cycles == sum(graph.min_cost(t) for t in graph.tasks)
    assert all(row["memory_matches_sequential"] for row in compare_rows(runs))


@pytest.mark.parametrize("make", [case_study, topcuoglu, lambda: lu(3), lambda: layer_by_layer(10, 3, 0.5, 14)])
def test_published_and_structured_graphs_run_exactly(default_config, make):
    graph = make()
    assert not graph_program(graph, {c: 1 for c in graph.classes}, default_config).extra_dependences


def test_added_dependences_are_reported_and_real(default_config):
    """In program order, s reads from p to r, so q's block falls in its range: the greedy
    layout orders q before s, which the graph leaves free. The search places the blocks
    so that it does not; given no time to search, the program keeps and reports it."""
    wide = build_graph("w", [(n, "a", {"a": 5}) for n in "pqrs"], [("p", "s", 0), ("r", "s", 0)])
    assert layout_edges(wide, greedy_layout(wide)) == {("p", "s"), ("q", "s"), ("r", "s")}
    assert not graph_program(wide, {"a": 1}, default_config).extra_dependences
    hurried = graph_program(wide, {"a": 1}, default_config, layout_time_limit=0.0)
    assert hurried.extra_dependences == {("q", "s")}
    back = program_graph([hurried.program], hurried.config, initial_memory(hurried.config), hurried.timing)
    assert len(back.edges) == 3


def test_large_graphs_keep_the_greedy_layout(default_config, monkeypatch):
    from hts.models.graphs import to_program
    wide = build_graph("w", [(n, "a", {"a": 5}) for n in "pqrs"], [("p", "s", 0), ("r", "s", 0)])
    monkeypatch.setattr(to_program, "MAX_SEARCH_TASKS", 3)
    assert graph_program(wide, {"a": 1}, default_config).extra_dependences == {("q", "s")}


def test_graph_program_errors_name_what_is_wrong(default_config):
    graph = build_graph("g", [("u", "gemm", {"gpu": 5})])
    with pytest.raises(GraphError, match="task 'u' runs on gpu, none of which the system has"):
        graph_program(graph, {"fpga": 1}, default_config)
    bad_name = build_graph("g", [("u", "k", {"Big": 5})])
    with pytest.raises(GraphError, match="^g: accelerator class 'Big' cannot run on the HTS model: 'Big' is not a "
                                         "keyname"):
        graph_program(bad_name, {"Big": 1}, default_config)
    reserved = build_graph("r.graphml", [("u", "k", {"a": 5}), ("v", "k", {"mov": 5})])
    with pytest.raises(GraphError, match="^r.graphml: accelerator class 'mov' .*reserved"):
        graph_program(reserved, {"a": 1, "mov": 1}, default_config)


# ---- generators --------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda seed: layer_by_layer(10, 3, 0.5, seed), lambda seed: erdos_renyi(10, 0.5, seed),
    lambda seed: uniform_dag(10, seed),
])
def test_random_generators_are_seeded(make):
    assert same_graph(make(1), make(1))
    assert not all(same_graph(make(1), make(seed)) for seed in range(2, 6))


def test_layer_by_layer_joins_only_consecutive_layers():
    graph = layer_by_layer(12, 4, 1.0, 7)
    depth = {}
    for task in graph.tasks:
        depth[task] = max((depth[p] + 1 for p in graph.predecessors(task)), default=0)
    assert max(depth.values()) == 3
    assert all(depth[v] == depth[u] + 1 for u, v in graph.edges)
    with pytest.raises(ValueError):
        layer_by_layer(3, 4, 0.5, 0)


def test_erdos_renyi_edges_go_forward():
    graph = erdos_renyi(15, 0.3, 2)
    assert all(int(u[1:]) < int(v[1:]) for u, v in graph.edges)
    assert len(erdos_renyi(15, 0.0, 2).edges) == 0 and len(erdos_renyi(6, 1.0, 2).edges) == 15


def test_uniform_dag_counts_and_uniformity():
    assert [count_dags(n) for n in range(1, 6)] == [1, 3, 25, 543, 29281]   # OEIS A003024
    shapes = collections.Counter(frozenset(uniform_dag(3, seed).edges) for seed in range(2500))
    assert len(shapes) == 25
    assert all(50 <= count <= 160 for count in shapes.values())          # 100 expected each


def test_typed_and_heterogeneous_costs():
    typed = layer_by_layer(20, 4, 0.5, 1)
    assert all(list(typed.cost(t)) == [typed.kind(t)] and 50 <= typed.min_cost(t) <= 150 for t in typed.tasks)
    mixed = erdos_renyi(20, 0.5, 1, classes=("x", "y"))
    assert all(set(mixed.cost(t)) == {"x", "y"} for t in mixed.tasks)


def test_lu_and_cholesky_shapes():
    factor = lu(3)
    assert len(factor) == 14 and collections.Counter(map(factor.kind, factor.tasks)) == {
        "getrf": 3, "trsm_u": 3, "trsm_l": 3, "gemm": 5}
    assert nx.dag_longest_path(factor.graph)[0] == "getrf_0" and nx.dag_longest_path(factor.graph)[-1] == "getrf_2"
    chol = cholesky(4)
    assert collections.Counter(map(chol.kind, chol.tasks)) == {"potrf": 4, "trsm": 6, "syrk": 6, "gemm": 4}
    assert ("potrf_0", "trsm_1_0") in chol.edges and ("syrk_1_0", "potrf_1") in chol.edges


def test_cnn_training_matches_seed_001_example():
    costs = {k: {"fpga": 100} for k in ("conv_fp", "conv_wu", "bn_fp", "bn_bp", "fc_fp", "fc_bp", "fc_wu")}
    graph = cnn_training(("conv", "bn", "fc"), 2, costs)
    assert len(graph) == 12                                           # seed 001, Figure 5: l1..l12
    assert set(graph.predecessors("fp1_bn")) == {"fp0_conv_b0", "fp0_conv_b1"}      # BN fuses the branches
    assert set(graph.predecessors("bp1_bn")) == {"bp2_fc_b0", "bp2_fc_b1"}
    assert graph.cost("fp0_conv_b0") == {"fpga": 50} and graph.cost("fp1_bn") == {"fpga": 100}
    with pytest.raises(ValueError, match="conv_bp"):
        cnn_training(("fc", "conv"), 2, costs)


def test_gnn_chains():
    costs = {"spmm": {"fpga": 3, "gpu": 5}, "gemm": {"fpga": 4, "gpu": 1}}
    gcn, gin = gnn_chain("gcn", costs, inputs=2), gnn_chain("gin", costs, mlp_depth=2)
    assert len(gcn) == 8 and len(gcn.edges) == 6
    assert [gin.kind(t) for t in gin.tasks] == ["spmm", "gemm", "gemm", "spmm", "gemm", "gemm"]
    with pytest.raises(ValueError):
        gnn_chain("gat", costs)


def test_case_study_and_topcuoglu_graphs():
    study = case_study()
    assert study.graph.edges["v1", "v4"]["megabytes"] == 102 and len(study.edges) == 7
    classic = topcuoglu()
    assert classic.cost("n10") == {"p1": 21, "p2": 7, "p3": 16} and classic.comm("n4", "n8") == 27
