"""Accelerator status register: one busy bit per accelerator instance (``hts.models.asr``).

Instances are numbered flat, class-major (:func:`hts.hdl.interfaces.flat_instance`), so
ordering flat indices orders by (class, instance), as the CDB's tickets need.
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

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    free_instance, has_free : Out, per class
        The lowest free instance (numbered within the class), and whether there is one.
    occupy : In, per class
        From the dispatch arbiter: the instance a task goes to, busy from the edge.
    release, busy : In, Out, per flat instance
        Instances freed at the edge (broadcast, aborted); the busy bits.
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
