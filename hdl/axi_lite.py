"""AXI4-Lite (AMBA, ARM IHI 0022): the bus signature and a subordinate giving register strobes."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["axi_lite_signature", "AxiLiteSubordinate", "OKAY", "SLVERR", "DATA_BITS"]

DATA_BITS = 32
OKAY, SLVERR = 0b00, 0b10


def axi_lite_signature(addr_width: int) -> wiring.Signature:
    """An AXI4-Lite port with 32-bit data, as seen from the manager (the CPU)."""
    return wiring.Signature({
        "awvalid": Out(1), "awready": In(1), "awaddr": Out(addr_width), "awprot": Out(3),
        "wvalid": Out(1), "wready": In(1), "wdata": Out(DATA_BITS), "wstrb": Out(DATA_BITS // 8),
        "bvalid": In(1), "bready": Out(1), "bresp": In(2),
        "arvalid": Out(1), "arready": In(1), "araddr": Out(addr_width), "arprot": Out(3),
        "rvalid": In(1), "rready": Out(1), "rdata": In(DATA_BITS), "rresp": In(2),
    })


class AxiLiteSubordinate(wiring.Component):
    """AXI4-Lite subordinate with register strobes on the other side; one access of each kind open.

    Parameters
    ----------
    addr_width : int

    Attributes
    ----------
    bus : In(axi_lite_signature)
        The AXI4-Lite port; ready and response signals are registered.
    write, write_addr, write_data, write_strb, write_error : Out, Out, Out, Out, In
        One cycle, once address and data are held: a write; ``SLVERR`` changes nothing.
    read, read_addr, read_data, read_error : Out, Out, In, In
        One cycle, with the address handshake: a read, answered the cycle after.
    """

    def __init__(self, addr_width: int):
        super().__init__({
            "bus": In(axi_lite_signature(addr_width)),
            "write": Out(1), "write_addr": Out(addr_width), "write_data": Out(DATA_BITS),
            "write_strb": Out(DATA_BITS // 8), "write_error": In(1),
            "read": Out(1), "read_addr": Out(addr_width), "read_data": In(DATA_BITS), "read_error": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        have_addr, have_data = Signal(), Signal()
        # Ready while nothing is held: a held address or data waits for its partner.
        m.d.comb += [bus.awready.eq(~have_addr), bus.wready.eq(~have_data)]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [have_addr.eq(1), self.write_addr.eq(bus.awaddr)]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [have_data.eq(1), self.write_data.eq(bus.wdata), self.write_strb.eq(bus.wstrb)]

        m.d.comb += self.write.eq(have_addr & have_data & ~bus.bvalid)
        with m.If(self.write):
            m.d.sync += [have_addr.eq(0), have_data.eq(0), bus.bvalid.eq(1),
                         bus.bresp.eq(self.write_error * SLVERR)]
        with m.Elif(bus.bready):
            m.d.sync += bus.bvalid.eq(0)

        m.d.comb += [bus.arready.eq(~bus.rvalid), self.read.eq(bus.arvalid & bus.arready),
                     self.read_addr.eq(bus.araddr)]
        with m.If(self.read):
            m.d.sync += [bus.rvalid.eq(1), bus.rdata.eq(self.read_data), bus.rresp.eq(self.read_error * SLVERR)]
        with m.Elif(bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        return m
