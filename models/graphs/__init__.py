"""Task graphs: the DAG every reference scheduler reads, and its ways in and out.

- :mod:`.taskgraph`: the :class:`TaskGraph` conventions and their validator;
- :mod:`.from_program`: a task program -> its graph (RAW, WAR and WAW over block regions);
- :mod:`.to_program`: a graph -> a program, system and timing the HTS model runs;
- :mod:`.graphml`: GraphML files;
- :mod:`.generators`: seeded random and structured graphs of the companion papers;
- :mod:`.published`: graphs whose schedules the papers give.
"""

from .from_program import dependences, program_graph
from .generators import (
    cholesky, cnn_training, count_dags, erdos_renyi, gnn_chain, layer_by_layer, lu, uniform_dag,
)
from .graphml import read_graphml, write_graphml
from .published import case_study, topcuoglu
from .taskgraph import GraphError, TaskGraph, build_graph, graph_problems
from .to_program import GraphProgram, GraphTiming, graph_program

__all__ = [
    "TaskGraph", "GraphError", "graph_problems", "build_graph",
    "dependences", "program_graph", "GraphProgram", "GraphTiming", "graph_program",
    "read_graphml", "write_graphml",
    "layer_by_layer", "erdos_renyi", "uniform_dag", "count_dags", "lu", "cholesky", "cnn_training", "gnn_chain",
    "case_study", "topcuoglu",
]
