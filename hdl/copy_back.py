"""Copy-back engine: sends resolved TLB entries home, by retarget or by copy.

RTL of ``CopyBackEngine`` (``models/copy_back.py``); see
docs/microarchitecture.md, "One cycle", steps 4 and 9, and "Copy-back and retarget". The
TLB (``hts.hdl.tlb``) chooses the candidates; this engine sequences them, tells the rest
of the design about a retarget, and moves the data of a copy.

Each cycle, independently:

- **Retarget.** If the TLB offers a retarget candidate, it is retargeted: the ranges
  are rewritten and the entry removed at the clock edge.
- **Copy.** One copy is in progress at a time. A copy started in cycle *t* with
  ``cycles`` = ⌈blocks × ``block_words`` / ``copyback_words_per_cycle``⌉ (at least 1,
  the model's ``transfer_cycles``) finishes in cycle *t + cycles*, when its TLB entry is
  removed (at the edge ending that cycle). In a cycle without a copy in progress, if a
  copy is ``wanted`` and the TLB offers a candidate, it starts. The cycle in which a copy
  finishes starts none, so the next may start at *t + cycles + 1*, as in the model.

Data movement: beat ``k`` of a copy reads ``copyback_words_per_cycle`` words of the TM
copy on ``tm_port`` and writes them to the same offset of the home region on
``home_port``. Both ports speak :func:`hts.hdl.interfaces.dma_signature`; there are two
because that protocol moves one beat per cycle in one direction, and a copy reads and
writes one beat per cycle. Beat 0 is read in the start cycle, and a read response is
written home in the cycle it arrives, so with an **always-ready memory** (``ready``
always high, read data one cycle after the request) beat ``k`` is read in cycle *t + k*
and written in *t + k + 1*, and the last write falls in *t + cycles*: exactly the model's
timing. If the memory holds off a request or answers later, the copy finishes later; the
cycle-for-cycle contract with the model holds only with an always-ready memory. Nothing
else reads or writes the home region meanwhile (decode stalls on or remaps every access
to it while the entry lives), so writing it beat by beat is as good as the model's
single write at the end.

Two combinational paths serve that timing: the TLB's copy choice drives the first TM
read in the start cycle, and a read answer (``tm_port.rvalid``, ``rdata``) drives the
home write (``home_port.write``, ``wdata``) in the cycle it arrives. The memory system
must not make ``home_port.ready`` depend on ``tm_port``'s answer in the same cycle.

TLB entries stay in their slots until removed, so the engine keeps the copied entry's
slot (``copy_index`` at the start) and removes that slot when the copy ends. Nothing
else frees the slot meanwhile: a copied entry has an empty mask, so no squash drops it,
and its producer is done, so it is no retarget candidate.
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

    Choices of the TLB (in, combinational on its start-of-cycle state):

    - ``copy_valid``, ``copy_index``, ``copy_entry``: the oldest copyable entry and its
      slot;
    - ``retarget_valid``, ``retarget_index``, ``retarget_entry``: the oldest retargetable
      entry and its slot.

    To the TLB:

    - ``retargetable_tags`` (out): producers that may be retargeted next cycle (the TLB
      registers it per slot; the model's ``CopyBackStep.retargetable``): the tags in
      ``queued_tags``, and the ``current.tag`` of every busy shell whose
      ``writeback_started`` is low. For a running task the model's test is ``finishes - t
      > transfer_cycles(output blocks)``; a shell's ``writeback_started`` is its exact
      complement (``hts.hdl.accelerator.LatencyCore``), and it stays high from the
      finishing cycle until the grant, when the model has the task among the CDB
      tickets, not running;
    - ``remove`` (out): one bit per TLB slot, the entry retargeted this cycle and the
      entry whose copy finishes this cycle; they leave at the edge.

    From the top level:

    - ``wanted`` (in): a copy is wanted this cycle (a process stalled on the TLB,
      ``tlb_full`` or ``tlb_conflict``, in the previous cycle, or a process drained at the
      start of this cycle still has TLB entries);
    - ``queued_tags`` (in): the tags of the tasks in the window and the stations at the
      start of the cycle. Tasks squashed this cycle may be left in: their TLB entries have
      a non-zero mask, so none is a retarget candidate;
    - ``shells`` (in): per flat instance (``hts.hdl.asr`` numbering), what the shell
      shows and what the dispatch arbiter delivers to it this cycle
      (:func:`shell_view_layout`).

    Retarget, to everyone who holds ranges (out; they land at the edge):

    - ``retarget``, ``retarget_tm``, ``retarget_home``, ``retarget_producer``: for the
      memory tracker (the same-named ports there), which holds the ranges of every task
      in the window and the stations too; the branch unit moves a pending branch
      reading a block of ``retarget_tm`` to the same offset in ``retarget_home``;
    - ``shell_retarget`` (out, to each shell's ``retarget``): ``valid`` for the shell that
      holds the producer, or accepts it this cycle (a producer dispatched in the cycle of
      its retarget), and the new output ``base``. It is never refused: a held producer
      is retargetable only while its ``writeback_started`` is low.

    Memory (out, :func:`hts.hdl.interfaces.dma_signature`): ``tm_port`` reads the TM
    copy and never writes; ``home_port`` writes it home and never reads. At most
    ``read_ahead`` beats are read and not yet written (in flight or buffered); the
    default of 2 reads an always-ready memory every cycle.

    Trace (out): ``trace_copyback`` (a copy starts: ``pid``, ``home``, ``tm``, ``cycles``)
    and ``trace_retarget`` (``pid``, ``tag``, ``home``, ``tm``), each ``valid`` in the
    cycle of its event; in the model's order, the retarget first.

    State read by the tests: ``copying``, a copy is in progress (started in an earlier
    cycle, not yet finished).
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
        """The retarget broadcast, its routing to the shells, and who may still be retargeted."""
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
        """Start, data movement and finish of the copy in progress; returns its TLB slot and
        whether it finishes this cycle."""
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
