"""Accelerator cores for HLS kernels: the ``ap_ctrl_hs`` block protocol behind the core interface.

:class:`ApCtrlCore` adapts a kernel to a shell; :class:`VectorAddKernel` computes
``hts.models.dsp.vector_add``. docs/hardware.md, "HLS kernels", maps a C signature.
"""

from amaranth.hdl import Cat, Module, Mux, ResetInserter, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig
from hts.models.dsp import DEFAULT_LEN, INT32_MAX, INT32_MIN, LEN, SCALE

from .interfaces import WORD_BITS, core_signature, dma_signature, task_layout, word_address_width
from .primitives import held

__all__ = ["ap_ctrl_hs_signature", "ApCtrlCore", "VectorAddKernel", "vector_add_core"]

# Reads a kernel may have in flight when its task is aborted: the core drops their late
# answers. A fixed-latency memory keeps at most its latency plus one outstanding.
MAX_READS_IN_FLIGHT = 255


def _block_shift(config: SystemConfig) -> int:
    return config.memory.block_words.bit_length() - 1


def words_width(config: SystemConfig) -> int:
    return config.widths.region_blocks + _block_shift(config)


def ap_ctrl_hs_signature(config: SystemConfig) -> wiring.Signature:
    """An HLS kernel's ports, as seen from the kernel (Vitis HLS ``ap_ctrl_hs``): block control,
    the ``ap_none`` arguments (regions in words, ``meta``) and a ``mem`` master.
    """
    address, words = word_address_width(config), words_width(config)
    return wiring.Signature({
        "ap_rst": In(1),
        "ap_start": In(1),
        "ap_done": Out(1),
        "ap_idle": Out(1),
        "ap_ready": Out(1),
        "in_addr": In(address),
        "in_words": In(words),
        "out_addr": In(address),
        "out_words": In(words),
        "meta": In(task_layout(config)["metadata"].shape),
        "mem": Out(dma_signature(config)),
    })


class ApCtrlCore(wiring.Component):
    """A core running an ``ap_ctrl_hs`` kernel.

    ``ap_start`` rises the cycle after ``start``, held until ``ap_ready``; the arguments are
    held for the run. ``release`` drives ``ap_rst`` (a port: it reaches HLS Verilog), masks
    that cycle's requests and drops the late answers of reads in flight. Writes into the
    output region go to the base ``writes`` gives in their cycle.

    Parameters
    ----------
    config : SystemConfig
    kernel : wiring.Component
        The kernel (:func:`ap_ctrl_hs_signature`), a submodule.

    Attributes
    ----------
    start, task, record, writes, release, done, writeback, dma
        :func:`~hts.hdl.interfaces.core_signature`; ``done`` and ``writeback`` held until release.
    """

    def __init__(self, config: SystemConfig, kernel: wiring.Component):
        self._config, self._kernel = config, kernel
        super().__init__(core_signature(config))

    def elaborate(self, platform):
        m = Module()
        shift = _block_shift(self._config)
        m.submodules.kernel = kernel = self._kernel

        running, launched, finished, wrote = Signal(), Signal(), Signal(), Signal()
        out_addr = Signal(word_address_width(self._config))
        with m.If(self.start):
            m.d.sync += [running.eq(1), out_addr.eq(self.writes.base << shift)]
        with m.If(kernel.ap_start & kernel.ap_ready):
            m.d.sync += launched.eq(1)
        with m.If(kernel.ap_done):
            m.d.sync += finished.eq(1)
        with m.If(self.dma.write):
            m.d.sync += wrote.eq(1)
        with m.If(self.release):
            m.d.sync += [running.eq(0), launched.eq(0), finished.eq(0), wrote.eq(0)]

        # ``task`` and ``record`` hold the arguments for a cycle; ``ap_none`` needs them kept.
        for name, value in (("in_addr", self.task.reads.base << shift), ("in_words", self.task.reads.blocks << shift),
                            ("meta", self.record.metadata)):
            m.d.comb += getattr(kernel, name).eq(held(m, self.start, value, f"kept_{name}"))
        m.d.comb += [
            kernel.ap_rst.eq(self.release),
            kernel.ap_start.eq(running & ~launched),
            kernel.out_addr.eq(out_addr),
            kernel.out_words.eq(self.writes.blocks << shift),
            self.done.eq(kernel.ap_done | finished),
            self.writeback.eq(self.dma.write | wrote),
        ]
        self._memory(m, kernel, shift)
        return m

    def _memory(self, m: Module, kernel, shift: int):
        """The kernel's master port: requests masked at release, output writes moved, stale answers dropped."""
        master, port = kernel.mem, self.dma
        output = (master.addr >= kernel.out_addr) & (master.addr - kernel.out_addr < kernel.out_words)
        moved = master.addr - kernel.out_addr + (self.writes.base << shift)
        in_flight, to_drop = Signal(range(MAX_READS_IN_FLIGHT + 1)), Signal(range(MAX_READS_IN_FLIGHT + 1))
        m.d.comb += [
            port.read.eq(master.read & ~self.release),
            port.write.eq(master.write & ~self.release),
            port.addr.eq(Mux(master.write & output, moved, master.addr)),
            port.wdata.eq(master.wdata),
            master.ready.eq(port.ready),
            master.rdata.eq(port.rdata),
            master.rvalid.eq(port.rvalid & (to_drop == 0)),
        ]
        m.d.sync += in_flight.eq(in_flight + (port.read & port.ready) - port.rvalid)
        with m.If(self.release):
            # Every read still in flight belongs to the run being abandoned.
            m.d.sync += to_drop.eq(in_flight - port.rvalid)
        with m.Elif(port.rvalid & (to_drop != 0)):
            m.d.sync += to_drop.eq(to_drop - 1)


def _saturate(value):
    return Mux(value > INT32_MAX, INT32_MAX, Mux(value < INT32_MIN, INT32_MIN, value))[:WORD_BITS]


def requantise(total, scale):
    """``hts.models.dsp._requantise`` of one sum: ``total`` × 2^−``scale``, rounded half up, saturated."""
    right = (scale[:-1] - 1)[:SCALE.width - 1]      # 0..30 when scale is 1..31
    # (x + 2**(k-1)) >> k == ((x >> (k-1)) + 1) >> 1: no variable-width constant to add.
    rounded = ((total >> right) + 1) >> 1
    left = (-scale)[:SCALE.width]   # 1..32 when scale is -1..-32
    widened = _saturate(total).as_signed() << left
    return Mux(scale > 0, rounded[:WORD_BITS], Mux(scale == 0, _saturate(total), _saturate(widened)))


class VectorAddKernel(wiring.Component):
    """``hts.models.dsp.vector_add`` behind :func:`ap_ctrl_hs_signature`, bit for bit.

    ``READ`` requests the beats of ``a`` then ``b`` into a buffer of 33-bit sums, ``WRITE``
    writes a requantised beat a cycle; ``ap_done`` follows the last write, ``R + λ +
    ceil(out_words / W) + 2`` cycles after ``ap_start`` (``hts.models.timing.VectorAddCoreLatency``).

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    ap_rst, ap_start, ap_done, ap_idle, ap_ready, in_addr, in_words, out_addr, out_words, meta, mem
        :func:`ap_ctrl_hs_signature`; the arguments are read throughout the run.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        self._lanes = config.hts.copyback_words_per_cycle
        super().__init__(ap_ctrl_hs_signature(config))

    def elaborate(self, platform):
        m = Module()
        lanes, lane_shift = self._lanes, self._lanes.bit_length() - 1    # W divides a block: a power of two
        entries = -(-((1 << LEN.width) - 1) // lanes)
        m.submodules.buffer = buffer = Memory(shape=data.ArrayLayout(signed(WORD_BITS + 1), lanes),
                                              depth=entries, init=[])
        store = buffer.write_port()
        load = buffer.read_port(transparent_for=(store,))

        length_field = self.meta[LEN.lsb:LEN.lsb + LEN.width]
        length = Mux(length_field == 0, DEFAULT_LEN, length_field)
        results = Mux(length < self.out_words, length, self.out_words)      # n
        a_beats, b_beats, answers = (Signal(range(2 * entries + 1)) for _ in range(3))
        out_beat = Signal(range((1 << words_width(self._config) - lane_shift) + 1))
        a_offset, b_offset = a_beats << lane_shift, b_beats << lane_shift
        more_a = (a_offset < results) & (a_offset < self.in_words)
        more_b = (b_offset < results) & (length + b_offset < self.in_words)
        answer_is_a = answers < a_beats
        mem = self.mem

        # Answers: an ``a`` beat is stored, a ``b`` beat added to its ``a`` (read a cycle
        # ahead: the entry of the next answer, as ``answers`` counts this one).
        b_lanes = self._masked_lanes(mem.rdata, length + ((answers - a_beats) << lane_shift), self.in_words)
        a_lanes = [mem.rdata[WORD_BITS * k:WORD_BITS * (k + 1)].as_signed() for k in range(lanes)]
        m.d.comb += [
            store.en.eq(mem.rvalid),
            store.addr.eq(Mux(answer_is_a, answers, answers - a_beats)),
            load.addr.eq(answers + mem.rvalid - a_beats),
        ]
        for k in range(lanes):
            m.d.comb += store.data[k].eq(Mux(answer_is_a, a_lanes[k], load.data[k] + b_lanes[k]))
        with m.If(mem.rvalid):
            m.d.sync += answers.eq(answers + 1)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.ap_idle.eq(1)
                with m.If(self.ap_start):
                    m.d.sync += [a_beats.eq(0), b_beats.eq(0), answers.eq(0)]
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += [
                    mem.read.eq(more_a | more_b),
                    mem.addr.eq(self.in_addr + Mux(more_a, a_offset, length + b_offset)),
                ]
                with m.If(mem.ready & more_a):
                    m.d.sync += a_beats.eq(a_beats + 1)
                with m.Elif(mem.ready & more_b):
                    m.d.sync += b_beats.eq(b_beats + 1)
                with m.If(~more_a & ~more_b & (answers + mem.rvalid == a_beats + b_beats)):
                    m.next = "PREP"
            with m.State("PREP"):
                m.d.comb += load.addr.eq(0)
                m.d.sync += out_beat.eq(0)
                m.next = "WRITE"
            with m.State("WRITE"):
                self._write(m, load, out_beat, lane_shift, results)
        return ResetInserter(self.ap_rst)(m)

    def _masked_lanes(self, beat, first_word, words):
        """The lanes of ``beat`` (words ``first_word + k``), zero from word ``words`` on."""
        return [Mux(first_word + k < words, beat[WORD_BITS * k:WORD_BITS * (k + 1)].as_signed(), 0)
                for k in range(self._lanes)]

    def _write(self, m: Module, load, out_beat, lane_shift: int, results):
        mem = self.mem
        offset = out_beat << lane_shift
        scale = self.meta[SCALE.lsb:SCALE.lsb + SCALE.width].as_signed()
        lanes = [Mux((offset + k < results) & (offset + k < self.in_words), requantise(load.data[k], scale), 0)
                 for k in range(self._lanes)]
        writing = offset < self.out_words
        m.d.comb += [
            mem.write.eq(writing),
            mem.addr.eq(self.out_addr + offset),
            mem.wdata.eq(Cat(*lanes)),
            load.addr.eq(out_beat + (writing & mem.ready)),
        ]
        with m.If(writing & mem.ready):
            m.d.sync += out_beat.eq(out_beat + 1)
        with m.If(~writing):
            m.d.comb += [self.ap_done.eq(1), self.ap_ready.eq(1)]
            m.next = "IDLE"


def vector_add_core(config: SystemConfig) -> ApCtrlCore:
    """The vector-add kernel in its core (``--rtl-accelerator vector_add``, ``--block hls_vector_add``)."""
    return ApCtrlCore(config, VectorAddKernel(config))
