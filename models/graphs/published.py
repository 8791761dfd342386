"""Task graphs published with known schedules, for checking the schedulers against.

- :func:`case_study`: the six-task graph of seed 004's chapter 3 case study (Listing 3.2,
  Figure 3.12), whose optimal schedules take 410 ms with partial reconfiguration and
  510 ms without (Figure 3.13).
- :func:`topcuoglu`: the ten-task example of Topcuoglu, Hariri and Wu, "Performance-
  effective and low-complexity task scheduling for heterogeneous computing", IEEE TPDS
  13(3), 2002, Figure 2: three processors, on which HEFT's schedule takes 80.
"""

from .taskgraph import TaskGraph, build_graph

__all__ = ["case_study", "topcuoglu", "CASE_STUDY_COST"]

# Seed 004, section 3.7.1: "all tasks have an execution time of 100 ms on all PEs".
CASE_STUDY_COST = 100
# Listing 3.2: the predecessors of tasks 1..6. (Table 3.8 lists other predecessors for
# tasks 3 and 6; only the listing's graph gives the published 410 and 510.)
_CASE_STUDY_PREDECESSORS = {1: [], 2: [1], 3: [1], 4: [1, 2], 5: [3], 6: [4, 5]}
# Table 3.8: megabytes each task receives. The case study ignores bandwidth, so they are
# kept as the edges' ``megabytes`` and cost no time.
_CASE_STUDY_MEGABYTES = {1: 41, 2: 22, 3: 75, 4: 102, 5: 59, 6: 0}


def case_study() -> TaskGraph:
    """Seed 004's case-study graph G_c, tasks ``v1``..``v6``.

    PE p_n runs tasks v_{2n+1} and v_{2n+2} (Listing 3.3), so the tasks come in three
    kinds ``a``, ``b``, ``c``, each running only on the PE of that class.
    """
    kinds = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    tasks = [(f"v{task}", kind, {kind: CASE_STUDY_COST}) for task, kind in kinds.items()]
    edges = [(f"v{producer}", f"v{task}", 0) for task, producers in _CASE_STUDY_PREDECESSORS.items()
             for producer in producers]
    graph = build_graph("case_study (seed 004, Figure 3.12)", tasks, edges).graph.copy()
    for producer, consumer in graph.edges:
        graph.edges[producer, consumer]["megabytes"] = _CASE_STUDY_MEGABYTES[int(consumer[1:])]
    return TaskGraph(graph, graph.graph["name"])


# Topcuoglu et al. 2002, Figure 2(b): cycles of tasks n1..n10 on processors P1, P2, P3.
_TOPCUOGLU_COSTS = {
    1: (14, 16, 9), 2: (13, 19, 18), 3: (11, 13, 19), 4: (13, 8, 17), 5: (12, 13, 10),
    6: (13, 16, 9), 7: (7, 15, 11), 8: (5, 11, 14), 9: (18, 12, 20), 10: (21, 7, 16),
}
# Figure 2(a): edges with their communication costs.
_TOPCUOGLU_EDGES = {
    (1, 2): 18, (1, 3): 12, (1, 4): 9, (1, 5): 11, (1, 6): 14, (2, 8): 19, (2, 9): 16, (3, 7): 23,
    (4, 8): 27, (4, 9): 23, (5, 9): 13, (6, 8): 15, (7, 10): 17, (8, 10): 11, (9, 10): 13,
}
TOPCUOGLU_PROCESSORS = ("p1", "p2", "p3")


def topcuoglu() -> TaskGraph:
    """The HEFT paper's example, tasks ``n1``..``n10`` on accelerator classes ``p1``..``p3``."""
    tasks = [(f"n{task}", "task", dict(zip(TOPCUOGLU_PROCESSORS, costs))) for task, costs in _TOPCUOGLU_COSTS.items()]
    edges = [(f"n{u}", f"n{v}", comm) for (u, v), comm in _TOPCUOGLU_EDGES.items()]
    return build_graph("topcuoglu (HEFT paper, Figure 2)", tasks, edges)
