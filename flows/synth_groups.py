"""Groups of RTL blocks synthesized together, for paths that cross blocks.

``hts synth --block B`` registers every port of a block, so a path that runs through
several blocks (the dispatch cycle: ready lists → arbiter → shells) is cut at
each of them. A group here wires its blocks with the top level's own functions and makes
every port they leave open a port of the group, so its out-of-context Fmax covers that
path, without the rest of the scheduler and its hour of place and route.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Flow

from hts.base.config import SystemConfig
from hts.hdl.asr import AcceleratorStatus
from hts.hdl.dispatch import DispatchArbiter
from hts.hdl.hts import connect_dispatch
from hts.hdl.ready_lists import ReadyLists

__all__ = ["BlockGroup", "ListsAndDispatch"]


class BlockGroup(wiring.Component):
    """Named blocks, wired by ``connect``; every input it leaves undriven, and every
    output, becomes a port ``<block>_<port>``.

    ``driven``: per block, the inputs ``connect`` drives.
    """

    def __init__(self, blocks: dict, connect, driven: dict):
        self._blocks, self._connect = blocks, connect
        ports, self._routes = {}, []
        for name, block in blocks.items():
            for port, member in block.signature.members.items():
                if port in driven.get(name, ()):
                    continue
                outer = f"{name}_{port}"
                ports[outer] = member
                self._routes.append((block, port, outer))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        for name, block in self._blocks.items():
            m.submodules[name] = block
        self._connect(m)
        for block, port, outer in self._routes:
            member, inner, exported = block.signature.members[port], getattr(block, port), getattr(self, outer)
            if member.is_port:
                m.d.comb += inner.eq(exported) if member.flow == Flow.In else exported.eq(inner)
            else:
                for exported_one, inner_one in (zip(exported, inner) if member.dimensions else [(exported, inner)]):
                    wiring.connect(m, wiring.flipped(exported_one), inner_one)
        return m


class ListsAndDispatch(BlockGroup):
    """The ready lists, the dispatch arbiter and the ASR, wired by
    :func:`hts.hdl.hts.connect_dispatch`: the dispatch cycle, from the lists' registers to
    the grant at the shells' ports (and from the registered grant to the starting task the
    cycle after)."""

    def __init__(self, config: SystemConfig):
        lists, arbiter, asr = ReadyLists(config), DispatchArbiter(config), AcceleratorStatus(config)
        blocks = {"ready_lists": lists, "arbiter": arbiter, "asr": asr}
        driven = {"ready_lists": {"take"}, "arbiter": {"offer_valid", "offer_task", "has_free", "free_instance"},
                  "asr": {"occupy"}}
        super().__init__(blocks, lambda m: connect_dispatch(m, lists, arbiter, asr), driven)
