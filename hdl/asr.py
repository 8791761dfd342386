"""Accelerator status register: one busy bit per accelerator instance.

RTL of ``hts.models.asr``; see docs/microarchitecture.md for its timing. An instance is
busy from the cycle a task is dispatched to it until its completion is broadcast on the
CDB or it is aborted; both land at the end of the cycle, so an instance freed in cycle
*t* is offered again in cycle *t + 1*. The running task itself is held by the
instance's accelerator shell (``hts.hdl.accelerator``), not here.

Instances are numbered flat, class-major: the ``count`` instances of class 0 first, then
those of class 1, and so on (:func:`hts.hdl.interfaces.flat_instance`). Every
per-instance bit vector of the design (``release`` here, ``finished``/``abort``/``grant``
of the CDB) uses this order, so ordering flat indices is ordering by (class, instance),
as the CDB's tickets need.
"""

from amaranth.hdl import Cat, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import flat_instance, instance_numbering, occupy_layout
from .mutation import mutable
from .primitives import lowest_set

__all__ = ["AcceleratorStatus"]


class AcceleratorStatus(wiring.Component):
    """Busy bits of every instance, with a lowest-free-instance search per class.

    Look-ups (combinational, on the busy bits registered at the start of the cycle):

    - ``free_instance`` (out, to the dispatch arbiter): per class, the lowest free
      instance (within the class, not flat); meaningful when ``has_free`` is set;
    - ``has_free`` (out, to the dispatch arbiter): per class, whether any instance is free.

    Updates (registered, land at the clock edge):

    - ``occupy`` (in, from the dispatch arbiter): per class, ``valid`` and the
      ``instance`` (within the class) a task is dispatched to; it must be free;
    - ``release`` (in, from the CDB's broadcast and the squash's aborts): one bit per flat
      instance to free. An instance is never occupied and released in one cycle: only
      free instances are occupied, and only busy ones released.

    State read by other blocks:

    - ``busy`` (out): one bit per flat instance.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        classes = len(config.accelerators)
        super().__init__({
            "free_instance": Out(data.ArrayLayout(config.widths.instance, classes)),
            "has_free": Out(classes),
            "occupy": In(data.ArrayLayout(occupy_layout(config), classes)),
            "release": In(len(instance_numbering(config))),
            "busy": Out(len(instance_numbering(config))),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        occupied = []
        for class_index, acc in enumerate(config.accelerators):
            first = flat_instance(config, class_index, 0)
            busy = self.busy[first:first + acc.count]
            m.d.comb += [self.has_free[class_index].eq(~busy.all()),
                         self.free_instance[class_index].eq(mutable("asr_highest_free", lowest_set(~busy),
                                                                  acc.count - 1 - lowest_set(~busy[::-1])))]
            request = self.occupy[class_index]
            occupied += [request.valid & (request.instance == instance) for instance in range(acc.count)]
        m.d.sync += self.busy.eq(self.busy & ~mutable("asr_release_lost", self.release, 0) | Cat(*occupied))
        return m
