"""The scheduler as an SoC peripheral: ``HTS`` behind its AXI4-Lite control registers."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .accelerator import LatencyCore
from .axi_lite import axi_lite_signature
from .control import ADDR_BITS, AxiLiteControl
from .hts import HTS
from .interfaces import branch_read_signature, dma_signature, instance_numbering, trace_layout
from .primitives import popcount

__all__ = ["AxiHTS"]


class AxiHTS(wiring.Component):
    """:class:`hts.hdl.hts.HTS` with :class:`hts.hdl.control.AxiLiteControl` on its CPU port.

    Parameters
    ----------
    config : SystemConfig
    core : callable
        Builds each instance's core, as for ``HTS``.

    Attributes
    ----------
    s_axi, irq : In, Out
        The control registers (``hts.hdl.control.REGISTERS``) and their level interrupt.
    branch_read, copyback_tm, copyback_home, accel_dma, events
        The scheduler's memory and trace ports, passed through.
    scheduler, control : wiring.Component
        The wrapped ``HTS`` and the control block.
    """

    def __init__(self, config: SystemConfig, core=LatencyCore):
        super().__init__({
            "s_axi": In(axi_lite_signature(ADDR_BITS)),
            "irq": Out(1),
            "branch_read": Out(branch_read_signature(config)),
            "copyback_tm": Out(dma_signature(config)),
            "copyback_home": Out(dma_signature(config)),
            "accel_dma": Out(dma_signature(config)).array(len(instance_numbering(config))),
            "events": Out(trace_layout(config)),
        })
        self.scheduler = HTS(config, core=core)
        self.control = AxiLiteControl(config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.scheduler = scheduler = self.scheduler
        m.submodules.control = control = self.control
        wiring.connect(m, wiring.flipped(self.s_axi), control.bus)
        wiring.connect(m, control.cpu, scheduler.cpu)
        wiring.connect(m, wiring.flipped(self.branch_read), scheduler.branch_read)
        wiring.connect(m, wiring.flipped(self.copyback_tm), scheduler.copyback_tm)
        wiring.connect(m, wiring.flipped(self.copyback_home), scheduler.copyback_home)
        for outer, inner in zip(self.accel_dma, scheduler.accel_dma):
            wiring.connect(m, wiring.flipped(outer), inner)
        m.d.comb += [self.events.eq(scheduler.events), self.irq.eq(control.irq),
                     control.completed.eq(popcount(scheduler.cdb.grant))]
        return m
