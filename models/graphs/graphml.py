"""Task graphs in GraphML files (the format seed 004's RESCH framework exchanges graphs in).

GraphML attributes are scalars, so a task's ``cost`` mapping is kept as one integer
attribute per accelerator class, ``cost_<class>``; ``kind`` and the edges' ``comm`` are
stored as they are, and the graph's ``name`` as a graph attribute.
"""

import io
from pathlib import Path
from xml.etree.ElementTree import ParseError

import networkx as nx

from hts.base.errors import Location, display_path
from hts.base.errors import shown as shown_value
from hts.base.files import GRAPH_BYTES, read_bytes
from hts.base.output import atomic_path

from .taskgraph import GraphError, TaskGraph

__all__ = ["read_graphml", "write_graphml", "COST_PREFIX"]

COST_PREFIX = "cost_"


def write_graphml(graph: TaskGraph, path: str | Path):
    """Write ``graph`` to ``path`` whole, or leave nothing behind."""
    flat = nx.DiGraph(name=graph.name)
    for task, attributes in graph.graph.nodes(data=True):
        scalars = {key: value for key, value in attributes.items() if key != "cost"}
        scalars.update({f"{COST_PREFIX}{accel_class}": cycles for accel_class, cycles in attributes["cost"].items()})
        flat.add_node(task, **scalars)
    flat.add_edges_from(graph.graph.edges(data=True))
    with atomic_path(path) as tmp:
        nx.write_graphml(flat, tmp)


def _integral(value):
    """GraphML from other tools may store integers as doubles (``100.0``); keep them whole."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _task_attributes(attributes: dict) -> dict:
    cost = {key[len(COST_PREFIX):]: _integral(value) for key, value in attributes.items()
            if key.startswith(COST_PREFIX)}
    others = {key: _integral(value) for key, value in attributes.items() if not key.startswith(COST_PREFIX)}
    return {**others, "cost": cost}


def read_graphml(path: str | Path) -> TaskGraph:
    """The task graph in a GraphML file; errors name the file."""
    shown = display_path(path)
    data = read_bytes(path, GRAPH_BYTES, "task graph")
    try:
        raw = nx.read_graphml(io.BytesIO(data))
    except (ParseError, nx.NetworkXError, ValueError, KeyError) as err:
        raise GraphError(f"not a valid GraphML file: {shown_value(str(err), 200)}", Location(shown)) from None
    if not raw.is_directed() or raw.is_multigraph():
        raise GraphError("a task graph must be a directed graph without parallel edges "
                         "(edgedefault=\"directed\")", Location(shown))
    graph = nx.DiGraph(name=raw.graph.get("name", Path(path).stem))
    for task, attributes in raw.nodes(data=True):
        graph.add_node(task, **_task_attributes(attributes))
    for producer, consumer, attributes in raw.edges(data=True):
        graph.add_edge(producer, consumer, **{key: _integral(value) for key, value in attributes.items()})
    return TaskGraph(graph, shown)
