"""Accelerator shells for HLS kernels: the ``ap_ctrl_hs`` block protocol behind the core interface.

A Vitis HLS kernel built with ``#pragma HLS INTERFACE ap_ctrl_hs port=return`` is started
by ``ap_start`` and reports ``ap_done``/``ap_idle``/``ap_ready``; its scalar arguments
are plain ``ap_none`` input ports. :func:`ap_ctrl_hs_signature` is that kernel interface
with the arguments a task gives: its input and output regions as word addresses and word
counts, its metadata, and a memory master (the shell's
:func:`~hts.hdl.interfaces.dma_signature`). :class:`ApCtrlCore` adapts such a kernel to
:func:`~hts.hdl.interfaces.core_signature`, so that it sits in an
:class:`~hts.hdl.accelerator.AcceleratorShell` like any core, and :class:`VectorAddKernel`
is a kernel behind that handshake computing ``hts.models.dsp.vector_add`` bit for bit.
docs/hardware.md ("HLS kernels") maps a C signature onto the ports.
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
    """Bits of a region's size in words."""
    return config.widths.region_blocks + _block_shift(config)


def ap_ctrl_hs_signature(config: SystemConfig) -> wiring.Signature:
    """An HLS kernel's ports, as seen from the kernel (Vitis HLS ``ap_ctrl_hs`` block protocol).

    Block control:

    - ``ap_rst`` (in): synchronous reset, active high, on top of the clock domain's own
      (as the ``ap_rst`` port of HLS-generated Verilog): the kernel is idle the next cycle;
    - ``ap_start`` (in): start a run; held by the caller until ``ap_ready``;
    - ``ap_ready`` (out): the kernel has taken its arguments; ``ap_start`` is sampled
      again in the next cycle (a high ``ap_start`` then starts another run);
    - ``ap_done`` (out): one cycle, the run is over (its memory writes accepted);
    - ``ap_idle`` (out): no run in progress.

    Scalar arguments (``ap_none``: no handshake; the caller holds them from ``ap_start``
    until ``ap_done``): ``in_addr`` and ``in_words``, the input region as a word address
    and a word count; ``out_addr`` and ``out_words``, the output region; ``meta``, the
    task's metadata field.

    ``mem`` (out): the kernel's memory master, :func:`~hts.hdl.interfaces.dma_signature`.
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
    """A core (:func:`~hts.hdl.interfaces.core_signature`) running an ``ap_ctrl_hs`` kernel.

    Ports (all of :func:`~hts.hdl.interfaces.core_signature`; driven by the shell unless
    marked out):

    - ``start`` (in): the kernel's ``ap_start`` rises the cycle after (registered
      ``running``) and stays high (registered ``launched`` low) until ``ap_ready``. A
      kernel may read its arguments from its ``ap_start`` cycle on;
    - ``task``, ``record`` (in, meaningful in the start cycle): the kernel's scalars
      ``in_addr``/``in_words`` from its input region (blocks shifted to words) and its
      ``meta`` from the task's metadata, registered for the run;
    - ``writes`` (in): ``out_words`` from its size; ``out_addr`` is the output base of the
      start cycle, registered: it stays put when the shell retargets the task;
    - ``release`` (in): drives the kernel's ``ap_rst`` (combinational), so the kernel is
      idle from the next cycle, and masks its memory requests in that cycle. A task aborted
      mid-run thus leaves nothing behind but the writes already accepted (into its
      output region, in the TM when speculative) and reads in flight, whose answers the
      core drops (registered counters of reads in flight and of answers to drop);
    - ``done`` (out): the kernel's ``ap_done`` (combinational), then held (registered)
      until ``release``;
    - ``writeback`` (out): the kernel requests a memory write (combinational), then held
      (registered) until ``release``. From that cycle the shell refuses retargets;
    - ``dma`` (out): the kernel's ``mem`` passed through, but writes into the output
      region the kernel was given are moved to the output base of ``writes`` as it
      stands in that cycle (combinational): a retarget that landed before the first write takes
      effect even though the kernel saw the old base.

    The kernel is a submodule; ``kernel`` is its :func:`ap_ctrl_hs_signature` component.
    For the cycle model's retarget rule, a kernel's writes must be the last
    ``ceil(out_words / words per beat)`` cycles before ``ap_done``, one per cycle
    (``hts.models.hts``, "retargetable while running"), as :class:`VectorAddKernel` does.
    The ``ap_rst`` port, rather than a :class:`ResetInserter` around the kernel, is what
    makes a kernel abandonable: it reaches into HLS-generated Verilog (an ``Instance``),
    which a reset inserted around it would not.
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

        # The input arguments stay as given for the whole run (``task`` and ``record``
        # hold them for a cycle): the adapter keeps them, as ``ap_none`` arguments must be.
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
        """The kernel's master port: requests masked at release, output writes retargeted,
        answers to an aborted run's reads dropped."""
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
    """``value`` clipped to int32."""
    return Mux(value > INT32_MAX, INT32_MAX, Mux(value < INT32_MIN, INT32_MIN, value))[:WORD_BITS]


def requantise(total, scale):
    """``hts.models.dsp._requantise(total, scale)`` of one sum: ``total`` times
    ``2**-scale``, rounded half up and saturated to int32; ``scale`` is SCALE's signed field."""
    right = (scale[:-1] - 1)[:SCALE.width - 1]      # 0..30 when scale is 1..31
    # (x + 2**(k-1)) >> k == ((x >> (k-1)) + 1) >> 1: no variable-width constant to add.
    rounded = ((total >> right) + 1) >> 1
    left = (-scale)[:SCALE.width]   # 1..32 when scale is -1..-32
    widened = _saturate(total).as_signed() << left
    return Mux(scale > 0, rounded[:WORD_BITS], Mux(scale == 0, _saturate(total), _saturate(widened)))


class VectorAddKernel(wiring.Component):
    """``hts.models.dsp.vector_add`` behind :func:`ap_ctrl_hs_signature`, bit for bit.

    With ``L`` = LEN (0: 64), ``n`` = min(L, out_words) and ``W`` words a beat, it
    computes ``out[i] = requantise(in[i] + in[L + i], SCALE)`` for ``i < n`` and writes
    zeros for ``n <= i < out_words``; input words at or past ``in_words`` count as zero
    (the model's zero-padded frame). Three phases, one FSM (``IDLE``, ``READ``, ``PREP``,
    ``WRITE``), all state registered:

    1. ``READ``: one beat requested per cycle the memory is ready: first ``a`` (words
       ``[0, min(n, in_words))``), then ``b`` (words ``L + [0, n)`` below ``in_words``).
       No beat is requested wholly past the input region; the last ``b`` beat may reach
       up to ``W - 1`` words past it, which are masked. Answers land in a buffer of
       33-bit sums (``a``, then ``a + b`` read-modify-written), one entry per beat;
    2. once every answer is in, ``PREP`` reads the buffer's first entry;
    3. ``WRITE``: one beat of ``out`` per cycle, requantised on the way out
       (combinational), ``ap_done`` and ``ap_ready`` in the cycle after the last write.

    From ``ap_start`` (cycle 0) with an always-ready memory answering reads ``λ`` cycles
    after acceptance, ``ap_done`` rises in cycle ``R + λ + ceil(out_words / W) + 2``
    with ``R`` the beats read, or ``ceil(out_words / W) + 3`` if ``R = 0``:
    ``hts.models.timing.VectorAddCoreLatency``.

    Ports (:func:`ap_ctrl_hs_signature`; inputs driven by its caller, e.g. :class:`ApCtrlCore`):

    - ``ap_rst``, ``ap_start`` (in): sampled at the clock edge; ``ap_start`` only in ``IDLE``;
    - ``ap_idle`` (out): combinational, the FSM is in ``IDLE``;
    - ``ap_done``, ``ap_ready`` (out): combinational, together, for the one ``WRITE``
      cycle that finds no beat left;
    - ``in_addr``, ``in_words``, ``out_addr``, ``out_words``, ``meta`` (in): read
      throughout the run (``ap_none``), never latched;
    - ``mem`` (out): ``read``/``write`` and ``addr`` combinational from the registered
      state and the scalars; ``wdata`` combinational from the buffer's read port
      (registered) through :func:`requantise`; ``rdata``/``rvalid`` written to the
      buffer at the clock edge.
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
        """One output beat a cycle from the buffer (its entry read a cycle ahead), then done."""
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
    """The vector-add kernel in its core: what ``hts cosim --rtl-accelerator vector_add``
    puts in that class's shells, and ``hts synth --block hls_vector_add`` measures."""
    return ApCtrlCore(config, VectorAddKernel(config))
