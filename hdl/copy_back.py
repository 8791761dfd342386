"""Copy-back engine: sends resolved TLB entries home, by retarget or by copy.

RTL of ``CopyBackEngine`` (``models/copy_back.py``), exact with an always-ready memory
(docs/microarchitecture.md, "TLB, retarget and copy-back").
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for
from hts.base.errors import ConfigError, Location

from .interfaces import (beats_per_block, copyback_trace_layout, dma_signature, instance_numbering,
                         largest_copy_beats, region_layout, retarget_layout, retarget_trace_layout, tlb_entry_layout,
                         word_address_width)
from .primitives import index_set

__all__ = ["CopyBackEngine", "shell_view_layout"]


def shell_view_layout(config: SystemConfig) -> data.StructLayout:
    """What the engine reads of one accelerator shell and of the task delivered to it."""
    tag = config.widths.tag
    return data.StructLayout({
        "busy": 1,                 # the shell's ``busy``
        "writeback_started": 1,    # the shell's ``writeback_started``
        "tag": tag,                # the shell's ``current.tag``
        "delivered": 1,            # the dispatch arbiter delivers a task this cycle (``deliver.valid``)
        "delivered_tag": tag,      # its tag (``deliver.payload.tag``)
    })


class CopyBackEngine(wiring.Component):
    """Retargets and copies TLB entries home; one copy at a time.

    Parameters
    ----------
    config : SystemConfig
        ``copyback_words_per_cycle`` must divide ``block_words``.
    read_ahead : int
        Beats read and not yet written, at most.

    Attributes
    ----------
    copy_valid, copy_index, copy_entry, retarget_valid, retarget_index, retarget_entry : In
        From the TLB: the oldest copyable entry; the entry to retarget now.
    retargetable_tags, remove : Out
        To the TLB: producers not yet writing back; slots retargeted or copied this cycle.
    wanted, queued_tags, shells : In
        A copy is wanted; the queued tags; each shell's state and delivered task.
    retarget, retarget_tm, retarget_home, retarget_producer, shell_retarget : Out
        The retarget, to the tracker, enqueue stage, branch unit and the producer's shell.
    tm_port, home_port : Out(dma_signature)
        Reads of the TM copy; writes home.
    trace_copyback, trace_retarget, copying : Out, Out, Signal
        The events of the cycle; a copy is in progress.
    """

    def __init__(self, config: SystemConfig, read_ahead: int = 2):
        hts = config.hts
        if config.memory.block_words % hts.copyback_words_per_cycle:
            # A region would end inside a beat, and the memory port has no word enables.
            raise ConfigError("hts.copyback_words_per_cycle",
                              f"the copy-back engine needs it to divide memory.block_words "
                              f"({config.memory.block_words}), got {hts.copyback_words_per_cycle}",
                              Location(config.source))
        self._config = config
        self._read_ahead = read_ahead
        entry, region, tags = tlb_entry_layout(config), region_layout(config), hts.tracker_entries
        instances = len(instance_numbering(config))
        super().__init__({
            "copy_valid": In(1),
            "copy_index": In(bits_for(hts.tlb_entries)),
            "copy_entry": In(entry),
            "retarget_valid": In(1),
            "retarget_index": In(bits_for(hts.tlb_entries)),
            "retarget_entry": In(entry),
            "retargetable_tags": Out(tags),
            "remove": Out(hts.tlb_entries),
            "wanted": In(1),
            "queued_tags": In(tags),
            "shells": In(data.ArrayLayout(shell_view_layout(config), instances)),
            "retarget": Out(1),
            "retarget_tm": Out(region),
            "retarget_home": Out(region),
            "retarget_producer": Out(config.widths.tag),
            "shell_retarget": Out(data.ArrayLayout(retarget_layout(config), instances)),
            "tm_port": Out(dma_signature(config)),
            "home_port": Out(dma_signature(config)),
            "trace_copyback": Out(copyback_trace_layout(config)),
            "trace_retarget": Out(retarget_trace_layout(config)),
        })
        self.copying = Signal()

    def elaborate(self, platform):
        m = Module()
        self._retarget(m)
        slot, finishing = self._copy(m)
        m.d.comb += self.remove.eq(index_set([finishing, self.retarget_valid], [slot, self.retarget_index],
                                             len(self.remove)))
        return m

    def _retarget(self, m: Module):
        entry = self.retarget_entry
        m.d.comb += [
            self.retarget.eq(self.retarget_valid),
            self.retarget_tm.base.eq(entry.tm_base),
            self.retarget_tm.blocks.eq(entry.home.blocks),
            self.retarget_home.eq(entry.home),
            self.retarget_producer.eq(entry.producer),
            self.trace_retarget.valid.eq(self.retarget_valid),
            self.trace_retarget.pid.eq(entry.pid),
            self.trace_retarget.tag.eq(entry.producer),
            self.trace_retarget.home.eq(entry.home),
            self.trace_retarget.tm.eq(entry.tm_base),
        ]
        for shell, retarget in zip(self.shells, self.shell_retarget):
            holds_producer = (shell.busy & (shell.tag == entry.producer)
                              | shell.delivered & (shell.delivered_tag == entry.producer))
            m.d.comb += [retarget.valid.eq(self.retarget_valid & holds_producer),
                         retarget.base.eq(entry.home.base)]
        still_computing = [shell.busy & ~shell.writeback_started for shell in self.shells]
        computing_tags = index_set(still_computing, (shell.tag for shell in self.shells), len(self.retargetable_tags))
        m.d.comb += self.retargetable_tags.eq(self.queued_tags | computing_tags)

    def _copy(self, m: Module):
        config = self._config
        per_beat = config.hts.copyback_words_per_cycle
        block_shift = config.memory.block_words.bit_length() - 1
        beats_shape = range(largest_copy_beats(config) + 1)
        address_shape = word_address_width(config)
        entry = self.copy_entry

        slot = Signal.like(self.copy_index)                # the copied entry's TLB slot
        read_address = Signal(address_shape)
        write_address = Signal(address_shape)
        reads_left = Signal(beats_shape)
        writes_left = Signal(beats_shape)
        in_flight = Signal(range(self._read_ahead + 1))    # reads accepted, not yet answered
        m.submodules.buffer = buffer = SyncFIFO(width=len(self.tm_port.rdata), depth=self._read_ahead)

        starting = Signal()
        m.d.comb += starting.eq(~self.copying & self.wanted & self.copy_valid)
        # The model's transfer_cycles: whole beats, as the beat divides the block, and
        # never 0, as a TLB entry maps at least one block.
        cycles = Signal(beats_shape)
        m.d.comb += [
            cycles.eq(entry.home.blocks << (beats_per_block(config).bit_length() - 1)),
            self.trace_copyback.valid.eq(starting),
            self.trace_copyback.pid.eq(entry.pid),
            self.trace_copyback.home.eq(entry.home),
            self.trace_copyback.tm.eq(entry.tm_base),
            self.trace_copyback.cycles.eq(cycles),
        ]

        # Reads: from the start cycle on, while beats are left and the buffer has room for
        # every answer still to come.
        next_read = Signal(address_shape)
        to_read = Signal(beats_shape)
        with m.If(starting):
            m.d.comb += [next_read.eq(entry.tm_base << block_shift), to_read.eq(cycles)]
        with m.Else():
            m.d.comb += [next_read.eq(read_address), to_read.eq(reads_left)]
        tm = self.tm_port
        m.d.comb += [
            tm.addr.eq(next_read),
            tm.read.eq((starting | self.copying) & (to_read != 0) & (in_flight + buffer.level < self._read_ahead)),
        ]
        read = Signal()                                     # a beat is requested from TM
        m.d.comb += read.eq(tm.read & tm.ready)
        m.d.sync += [
            read_address.eq(next_read + Mux(read, per_beat, 0)),
            reads_left.eq(to_read - read),
            in_flight.eq(in_flight + read - tm.rvalid),
        ]

        # Writes: the oldest buffered beat, else the answer arriving now (which waits in the
        # buffer if the home port holds it off).
        home = self.home_port
        m.d.comb += [
            home.addr.eq(write_address),
            home.write.eq(buffer.r_rdy | tm.rvalid),
            home.wdata.eq(Mux(buffer.r_rdy, buffer.r_data, tm.rdata)),
        ]
        written = Signal()                                  # a beat is written home
        m.d.comb += written.eq(home.write & home.ready)
        m.d.comb += [
            buffer.r_en.eq(written),
            buffer.w_data.eq(tm.rdata),
            buffer.w_en.eq(tm.rvalid & ~(written & ~buffer.r_rdy)),
        ]
        last_write = Signal()
        m.d.comb += last_write.eq(self.copying & written & (writes_left == 1))
        with m.If(starting):
            m.d.sync += [self.copying.eq(1), slot.eq(self.copy_index),
                         write_address.eq(entry.home.base << block_shift), writes_left.eq(cycles)]
        with m.Else():
            m.d.sync += [write_address.eq(write_address + Mux(written, per_beat, 0)),
                         writes_left.eq(writes_left - written)]
            with m.If(last_write):
                m.d.sync += self.copying.eq(0)
        return slot, last_write
