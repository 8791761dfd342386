"""Logic levels of a synthesized ECP5 netlist, endpoint by endpoint, charged to the blocks.

A placement-independent complement to nextpnr's Fmax: for every register input (a
flip-flop's D, enable and reset, a block RAM's or a distributed RAM's write pins), the
most LUT levels on a path to it from a register output or a block RAM's read data. A
LUT4 is one level; a PFUMX or L6MUX21 behind LUT4s is none (they widen a LUT within its
slice); a carry cell is one level from its LUT inputs and none along the chain; a
distributed RAM read and a multiplier are one each. On the LFE5U-85F-6 a level costs
some 1.6 ns with its routing (docs/results.md, "The whole scheduler"), so the levels in
front of an endpoint bound the clock it can make before any placement is tried.

An endpoint is charged to the innermost block instance whose name prefixes its cell's
(Yosys keeps hierarchical names when it flattens, and records every instance as a
``$scopeinfo`` cell), numbered instances together: in ``hts synth``'s harness, whose
instance of the block is ``block``, ``block.shell4.busy`` is the ``shell``'s, a cell
of ``block`` itself the block's, and the harness's own port registers ``ports``.
"""

import re
from collections import Counter, defaultdict

import networkx as nx

__all__ = ["logic_levels"]

# Per cell type: (input pins, output pins, levels) of each combinational arc group.
_ARCS = {
    "LUT4": [(("A", "B", "C", "D"), ("Z",), 1)],
    "PFUMX": [(("ALUT", "BLUT", "C0"), ("Z",), 0)],
    "L6MUX21": [(("D0", "D1", "SD"), ("Z",), 0)],
    "CCU2C": [(("A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1"), ("S0", "S1", "COUT"), 1),
              (("CIN",), ("S0", "S1", "COUT"), 0)],
    "TRELLIS_DPR16X4": [(("RAD",), ("DO",), 1)],
    "MULT18X18D": [(None, None, 1)],     # every input to every output (no internal registers used)
}
# Cells whose inputs are sampled at the clock: their input pins end paths, their outputs start them.
_SEQUENTIAL = {"TRELLIS_FF": ("DI", "CE", "LSR"), "TRELLIS_DPR16X4": ("DI", "WAD", "WRE"),
               "DP16KD": ("AD", "DI", "CE", "OCE", "WE", "CS", "RST")}


def _pins(cell: dict, names, direction: str) -> list:
    """The net bits on the pins of ``cell`` whose names start with one of ``names`` (every
    pin of ``direction`` if ``names`` is None); constants left out."""
    return [bit for pin, bits in cell["connections"].items()
            if cell["port_directions"].get(pin) == direction
            and (names is None or pin.startswith(tuple(names)))
            for bit in bits if isinstance(bit, int)]


def _arrivals(cells: dict) -> tuple[dict, dict]:
    """The most levels from a register to each net bit, over the combinational cells, and
    the arc each net bit's longest path arrives by: ``{net: (source net, cell name)}``."""
    graph = nx.DiGraph()
    for name, cell in cells.items():
        for inputs, outputs, levels in _ARCS.get(cell["type"], []):
            for source in _pins(cell, inputs, "input"):
                for sink in _pins(cell, outputs, "output"):
                    if not graph.has_edge(source, sink) or graph.edges[source, sink]["levels"] < levels:
                        graph.add_edge(source, sink, levels=levels, cell=name)
    arrival, via = {}, {}
    for net in nx.topological_sort(graph):
        arrival[net] = 0
        for source in graph.predecessors(net):
            if net not in via or arrival[source] + graph.edges[source, net]["levels"] > arrival[net]:
                arrival[net] = arrival[source] + graph.edges[source, net]["levels"]
                via[net] = (source, graph.edges[source, net]["cell"])
    return arrival, via


def _launching_block(net, via: dict, drivers: dict, scopes: list[str], block: str) -> str:
    """The block of the register the longest path to ``net`` starts from."""
    while net in via:
        net = via[net][0]
    return _block_of(drivers[net], scopes, block) if net in drivers else "(no register)"


def _path(net, via: dict, drivers: dict) -> list[str]:
    """The cells of the longest path to ``net``: its register, then each cell once."""
    cells = []
    while net in via:
        net, cell = via[net]
        if not cells or cells[-1] != cell:
            cells.append(cell)
    return [drivers.get(net, "(no register)"), *reversed(cells)]


def _block_of(cell_name: str, scopes: list[str], block: str) -> str:
    """The innermost scope prefixing ``cell_name``, without its instance number."""
    inner = max((scope for scope in scopes if cell_name.startswith(scope + ".")), key=len, default=None)
    if inner is None:
        return "ports"
    parts = inner.split(".")
    return re.fullmatch(r"(.*?)\d*", parts[1]).group(1) if len(parts) > 1 else block


def logic_levels(netlist: dict, module: str, block: str) -> dict:
    """Endpoints of the harness ``module`` of ``block`` in a Yosys JSON ``netlist`` by their
    logic levels: the whole histogram (``{levels: endpoints}``), per block its endpoints'
    histogram, per block its deepest endpoint's path (the cells from its register to the
    endpoint's, like nextpnr's critical path, each cell once), and the ``routes`` of the
    endpoints within a level of the deepest: how many run from which block's register to
    which block's, most first (``{"from_levels": n, "routes": {"tlb → tracker": k}}``),
    the cycles a clock above today's must cut."""
    cells = netlist["modules"][module]["cells"]
    scopes = [name for name, cell in cells.items() if cell["type"] == "$scopeinfo"]
    drivers = {bit: name for name, cell in cells.items() if cell["type"] in _SEQUENTIAL
               for bit in _pins(cell, None, "output")}
    arrival, via = _arrivals(cells)
    histogram, by_block, deepest, endpoints = Counter(), defaultdict(Counter), {}, []
    for name, cell in cells.items():
        if cell["type"] not in _SEQUENTIAL:
            continue
        owner = _block_of(name, scopes, block)
        for bit in _pins(cell, _SEQUENTIAL[cell["type"]], "input"):
            levels = arrival.get(bit, 0)
            histogram[levels] += 1
            by_block[owner][levels] += 1
            endpoints.append((levels, bit, owner))
            if owner not in deepest or levels > deepest[owner][0]:
                deepest[owner] = (levels, bit, name)
    from_levels = max(max(histogram, default=0) - 1, 0)
    routes = Counter(f"{_launching_block(bit, via, drivers, scopes, block)} → {owner}"
                     for levels, bit, owner in endpoints if levels >= from_levels)
    return {"histogram": dict(sorted(histogram.items())),
            "by_block": {owner: dict(sorted(levels.items())) for owner, levels in sorted(by_block.items())},
            "deepest": {owner: [*_path(bit, via, drivers), name] for owner, (_, bit, name) in sorted(deepest.items())},
            "deep_routes": {"from_levels": from_levels, "routes": dict(routes.most_common())}}
