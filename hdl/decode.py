"""Decode: one instruction of one process per cycle, picked round robin.

RTL of the model's ``Decode`` (with ``BranchUnit.decode``, which takes an ``if``) and
of the front-end state of ``models/decode.py``: per process a GPR bank, a loop stack, the
speculation mask and the skip depth of a zero-iteration loop. Control instructions
execute here; a task is planned against the TLB, takes a tag (its tracker entry) and, if
nothing stalls it, goes to the enqueue stage (``hdl/enqueue.py``), which searches the
tracker for its dependences the next cycle; an ``if`` goes to the branch unit (with a
memory branch's block translated by the TLB; the branch unit searches its writers).
The speculation-ID pool lives here too (decode is the only allocator).
"""

from typing import NamedTuple

from amaranth.hdl import Assert, Cat, Const, Module, Mux, ResetInserter, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for
from hts.isa import FIRST_RESERVED_ACCEL_ID, RESERVED_ACCEL_ID, REGISTER_BITS, FaultCause, Instruction, Opcode

from .gpr import COUNTER_PORT, OPERANDS, GPRBank
from .interfaces import (BranchKind, HeadSource, Stall, branch_layout, decoded_signature, fault_layout,
                         fetch_pc_width, loop_frame_layout, queue_entry_layout, read_ahead_layout,
                         read_ahead_registers, region_layout, restore_layout,
                         tlb_checks_layout, tlb_lookahead_layout, tlb_request_layout, tracker_entry_layout,
                         window_request_layout)
from .loop_stack import LoopStack
from .mutation import mutable
from .primitives import entry_of, lowest_set, wire

__all__ = ["Decode", "head_layout", "upcoming_layout", "window_layout", "take_queue"]

# The reserved IDs fill the top of the ID space, an aligned block: an ID is reserved when
# its bits above the block's low bits are the first reserved ID's.
_ID_SPACE = 1 << Instruction.as_shape().members["accel_id"]
_RESERVED_ID_LOW_BITS = (_ID_SPACE - FIRST_RESERVED_ACCEL_ID).bit_length() - 1
assert FIRST_RESERVED_ACCEL_ID + (1 << _RESERVED_ID_LOW_BITS) == _ID_SPACE


def head_layout(config: SystemConfig) -> data.StructLayout:
    """A task queue's head as decode sees it: whether there is one, and the entry."""
    return data.StructLayout({"valid": 1, **queue_entry_layout(config).members})


def upcoming_layout(config: SystemConfig) -> data.StructLayout:
    """What becomes a task queue's head at the next edge if the head is popped or empty:
    the front of the queue behind it, if there is one (``valid``), and the GPR indices
    its A, B and C name (``registers``, from flip-flops)."""
    return data.StructLayout({"valid": 1, "word": Instruction, "registers": read_ahead_layout(config)})


def take_queue(decode: "Decode", pid: int, queue) -> list:
    """Decode's inputs from process ``pid``'s task queue (``hts.hdl.task_queue``)."""
    head, upcoming = decode.head[pid], decode.upcoming[pid]
    return [head.valid.eq(queue.head_valid), head.pc.eq(queue.head_pc), head.word.eq(queue.head_word),
            head.target.eq(queue.head_target), head.malformed.eq(queue.head_malformed),
            upcoming.valid.eq(queue.behind_valid), upcoming.word.eq(queue.behind_word),
            upcoming.registers.eq(queue.behind_registers), decode.exhausted[pid].eq(queue.exhausted)]


def window_layout(config: SystemConfig) -> data.StructLayout:
    """A process's window of home memory, blocks ``[base, end)``."""
    width = config.widths.home_end
    return data.StructLayout({"base": width, "end": width})


def _leaving_layout() -> data.StructLayout:
    """Which of a head's accesses leave its process's window."""
    return data.StructLayout({"input": 1, "output": 1, "block": 1})


def _leaving(window, word, reads_base, writes_base) -> Value:
    """``_leaving_layout`` of ``word``, with the bases of its input and output regions.
    A region leaves the window when it is not empty and ``base < window.base`` or
    ``base + blocks > window.end``, compared as ``base > end − blocks``: no adder in series
    with the compare. A branch's one block: ``a < base`` or ``a ≥ end``. Bits of a base
    above the window's width only need an OR (the base is then past every window), which
    keeps the compares' carry chains that short."""
    width = len(window.end)

    def split(base):
        return base[width:].any(), base[:width]

    def outside(base, blocks):
        high, low = split(base)
        return (blocks != 0) & (high | (low < window.base) | (low > window.end - blocks))
    high, low = split(word.a)
    return Cat(outside(reads_base, word.b), outside(writes_base, word.d),
               high | (low < window.base) | (low >= window.end))


class _State(NamedTuple):
    """Decode's own registers, beside the GPR banks and loop stacks."""

    spec_mask: data.View    # per process: the unresolved speculations it decodes behind
    skip_depth: data.View   # per process: nesting depth in a zero-iteration loop being skipped (0: none)
    free_ids: Signal        # the speculation-ID pool
    faulted: Signal         # per process: it faulted
    stale: Signal           # per process: its head's kept relations miss this cycle's base register
    product: data.View      # a mul's partial products, registered in its first cycle (``_multiply``)


def _product_layout(config: SystemConfig) -> data.StructLayout:
    """A mul between its two cycles at the head: its process, and the partial products
    of its operands' 16-bit halves, registered behind the multipliers."""
    half = REGISTER_BITS // 2
    return data.StructLayout({"valid": 1, "pid": config.widths.pid,
                              "low": REGISTER_BITS, "cross_ab": half, "cross_ba": half})


class _Chosen(NamedTuple):
    """The process the round robin picked, and what decode reads of it this cycle."""

    valid: Signal           # some process was eligible
    pid: Signal
    head: data.View         # its queue head
    word: Instruction
    opcode: Value
    r_a: Signal             # R[A], R[B], R[C], read a cycle ahead (``_operands``)
    r_b: Signal
    r_c: Signal
    counter: Signal         # lend's counter register, named by the loop top
    top: data.View          # its loop stack's top frame
    stack_empty: Signal
    stack_full: Signal
    mask: Value             # its speculation mask
    skipping: Value         # inside a zero-iteration loop


class _Effects(NamedTuple):
    """What the decoded head leaves for the end of the cycle."""

    allocated_ids: Signal   # speculation IDs taken from the pool
    new_mask: Signal        # bits its process's mask gains
    next_skip: Signal       # its process's skip depth


class Decode(wiring.Component):
    """One instruction per cycle, from the first eligible process after the last picked.

    Per process (index = pid), from the task queues and the branch unit:

    - ``head`` (in): the queue head at the start of the cycle; ``exhausted`` (in): queue
      empty and fetch PC past the program; ``upcoming`` (in): the head next cycle if this
      one is popped or there is none, whose registers decode reads a cycle ahead (below);
    - ``done`` (in, from the top level): the process has ended, or has not been started;
    - ``start`` (in, from the CPU port): the process starts: at the edge its GPRs, loop
      stack, mask, skip depth and fault flag go back to their reset values;
    - ``drained`` (out, to the top level's retire logic and the copy-back engine's
      ``wanted``): queue exhausted, no pending branch, not skipping (start-of-cycle);
    - ``blocked`` (in, from the branch unit): an unspeculated branch was pending at the
      start of the cycle; ``pending`` (in): any branch was;
    - ``restore`` (in, from the branch unit): a branch of the process was mispredicted
      this cycle: no decode this cycle; at the edge GPRs and loop stack come back from
      checkpoint ``slot``, the mask becomes ``mask`` and any skip ends;
    - ``pop`` (out): the head was consumed; ``redirect``, ``redirect_pc`` (out): a jump
      or loop back (the top level merges the branch unit's redirects).

    Shared:

    - ``confirm`` (in): speculation IDs predicted right, cleared from every mask;
      ``freed_ids`` (in): IDs returning to the pool (confirmed, mispredicted, squashed);
    - ``window_has_room`` (in, from the top level): the window has a slot for this
      cycle's task besides the one the enqueue stage holds;
    - tracker: ``tracker_has_free``, ``tracker_free_tag`` (in); ``tracker_alloc``,
      ``tracker_alloc_entry`` (out);
    - TLB: ``tlb_lookahead`` (out, per process: the head at the next edge, whose
      relations to the homes the TLB keeps; ``_look_ahead``); ``tlb_pid``,
      ``tlb_checks``, ``tlb_read_region``, ``tlb_write_region``,
      ``tlb_branch_block``, ``tlb_alloc_blocks`` (out) -> ``tlb_read_hit``,
      ``tlb_read_copy``, ``tlb_read_tm_base``, ``tlb_write_hit``, ``tlb_has_room``,
      ``tlb_alloc_tm_base``, ``tlb_branch_phys`` (in); ``tlb_alloc``, ``tlb_alloc_entry``
      (out);
    - ``enqueue`` (out, :func:`hts.hdl.interfaces.decoded_signature`, to the enqueue stage
      and the trace's ``decode`` event): the task decoded, tag and tracker entry included;
    - ``branch`` (out, to the branch unit): an ``if`` decoded this cycle;
    - ``stall`` (out): per process, why it decoded nothing (``Stall.NONE`` if it did);
    - ``fault`` (out, :func:`hts.hdl.interfaces.fault_layout`, combinational): a process
      stops at the instruction at its head, on its committed path, because it touches
      memory outside its window (a task's region or a memory branch's block) or cannot
      execute at all (``FaultCause.ILLEGAL``, see ``_illegal``). It decodes
      nothing more and counts as drained. On a wrong path the same access stalls
      (``Stall.SPECULATIVE_FAULT``) until its branches resolve.
    - ``set_window`` (in, from the CPU port,
      :func:`hts.hdl.interfaces.window_request_layout`): a process's window, registered;
      reset: all of home memory.
    - ``tlb_pid`` (out, to the TLB): the process decoding, whose speculative copies alone
      its look-ups may use.

    ``enqueue``, ``branch``, ``tracker_alloc_entry``, ``tlb_alloc_entry`` and the GPR
    write's index and value carry the chosen head in every cycle; only their valid,
    alloc and write-enable bits say that it decoded, so no data path waits for the stall.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        hts, widths = config.hts, config.widths
        processes = hts.processes
        region = region_layout(config)
        pc_end = fetch_pc_width(config)
        super().__init__({
            "head": In(data.ArrayLayout(head_layout(config), processes)),
            "upcoming": In(data.ArrayLayout(upcoming_layout(config), processes)),
            "exhausted": In(processes),
            "done": In(processes),
            "start": In(processes),
            "drained": Out(processes),
            "blocked": In(processes),
            "pending": In(processes),
            "restore": In(data.ArrayLayout(restore_layout(config), processes)),
            "pop": Out(processes),
            "redirect": Out(processes),
            "redirect_pc": Out(data.ArrayLayout(pc_end, processes)),
            "confirm": In(hts.spec_ids),
            "freed_ids": In(hts.spec_ids),
            "window_has_room": In(1),
            "tracker_has_free": In(1),
            "tracker_free_tag": In(widths.tag),
            "tracker_alloc": Out(1),
            "tracker_alloc_entry": Out(tracker_entry_layout(config)),
            "tlb_read_region": Out(region),
            "tlb_write_region": Out(region),
            "tlb_branch_block": Out(widths.phys_block),
            "tlb_alloc_blocks": Out(widths.region_blocks),
            "tlb_read_hit": In(1),
            "tlb_read_copy": In(config.hts.tlb_entries),
            "tlb_read_tm_base": In(widths.phys_block),
            "tlb_write_hit": In(1),
            "tlb_has_room": In(1),
            "tlb_alloc_tm_base": In(widths.phys_block),
            "tlb_branch_phys": In(widths.phys_block),
            "tlb_alloc": Out(1),
            "tlb_alloc_entry": Out(tlb_request_layout(config)),
            "enqueue": Out(decoded_signature(config)),
            "branch": Out(branch_layout(config)),
            "stall": Out(data.ArrayLayout(Stall, processes)),
            "fault": Out(fault_layout(config)),
            "set_window": In(window_request_layout(config)),
            "tlb_pid": Out(widths.pid),
            "tlb_checks": Out(tlb_checks_layout()),
            "tlb_lookahead": Out(data.ArrayLayout(tlb_lookahead_layout(config), processes)),
        })
        # Per-process architectural state; public so that the CPU port can read it back.
        self.gprs = [GPRBank(config) for _ in range(processes)]
        self.loops = [LoopStack(config) for _ in range(processes)]

    def elaborate(self, platform):
        m = Module()
        state = self._state(m)
        windows = self._windows(m)
        processes = self._config.hts.processes
        operands = []
        # Per process: which of its head's accesses leave its window (``_look_ahead``).
        leaving = Signal(data.ArrayLayout(_leaving_layout(), processes), reset_less=True)
        for pid in range(processes):
            now, ahead = self._operands(m, pid)
            operands.append(now)
            self._look_ahead(m, pid, windows[pid], now, ahead, leaving[pid], state.stale)
        reason = self._why_not_decodable(m, state)
        pid, valid = self._round_robin(m, reason, state.product)
        chosen = self._read_chosen(m, pid, valid, operands, state)

        # ---- planning: regions, window and legality bits, TLB look-up, stall -------------
        home_reads, home_writes = self._task_regions(m, chosen)
        cause, control_faulting = self._fault_cause(m, chosen, entry_of(leaving, pid), windows[chosen.pid],
                                                    self._illegal(m, chosen))
        reads, speculative_output = self._translate(m, chosen, home_reads, home_writes)
        # A mul holds the decoder for a cycle at the head while its partial products go to registers.
        first_mul = wire(m, (chosen.opcode == Opcode.MUL) & ~chosen.skipping & ~state.product.valid, "first_mul")
        plan_stall, stalled, decoding = self._stall(m, chosen, cause, speculative_output, first_mul)
        # What the head does if it is not a task (or is skipped) decides only on that fault:
        # its effects need not wait for the TLB look-up and a task's window bits.
        control_decoding = wire(m, chosen.valid & (chosen.skipping | ~(control_faulting | first_mul)),
                                "control_decoding")
        writes = self._rename_output(m, home_writes, speculative_output)
        self._report_stall(m, reason, chosen, plan_stall, stalled, cause, state.faulted)

        # ---- executing the instruction --------------------------------------------------
        # What a task or a branch carries goes out whatever the stall decides; only the
        # valid and enable bits wait for it (docs/hardware.md, "Timing").
        self._task_fields(m, chosen, reads, writes, home_writes)
        self._branch_fields(m, chosen)
        self._gpr_write_fields(m, chosen, state.product)
        new_id = self._checkpoint(m, state.free_ids)
        effects = self._decode_one(m, chosen, decoding, control_decoding, speculative_output, state, new_id)
        self._multiply(m, chosen, state.product, chosen.valid & first_mul & ~control_faulting)
        self._end_of_cycle(m, chosen, control_decoding, state, effects)
        return m

    # ---- pieces of the cycle ----------------------------------------------------------------

    def _state(self, m: Module) -> _State:
        """Each process's GPR bank and loop stack as submodules, and decode's own registers."""
        hts = self._config.hts
        processes = hts.processes
        for pid in range(processes):
            # A started process begins from reset state, as the model's fresh context does.
            m.submodules[f"gpr{pid}"] = ResetInserter(self.start[pid])(self.gprs[pid])
            m.submodules[f"loops{pid}"] = ResetInserter(self.start[pid])(self.loops[pid])
        spec_mask = Signal(data.ArrayLayout(hts.spec_ids, processes))
        skip_depth = Signal(data.ArrayLayout(range(hts.loop_depth + 1), processes))
        free_ids = Signal(hts.spec_ids, init=(1 << hts.spec_ids) - 1)
        faulted = Signal(processes)
        stale = Signal(processes)
        product = Signal(_product_layout(self._config))
        return _State(spec_mask, skip_depth, free_ids, faulted, stale, product)

    def _why_not_decodable(self, m: Module, state: _State) -> list[Signal]:
        """Per process, why the arbiter may not pick it (``Stall.NONE``: it may), in the
        model's order; and ``drained``."""
        processes = self._config.hts.processes
        reason = [Signal(Stall, name=f"reason{pid}") for pid in range(processes)]
        for pid in range(processes):
            drained = self.drained[pid]
            m.d.comb += drained.eq(self.exhausted[pid] & ~self.pending[pid] & (state.skip_depth[pid] == 0)
                                   | state.faulted[pid])
            with m.If(self.done[pid]):
                m.d.comb += reason[pid].eq(Stall.DONE)
            with m.Elif(state.faulted[pid]):
                m.d.comb += reason[pid].eq(Stall.FAULT)
            with m.Elif(self.blocked[pid] | self.restore[pid].valid):
                m.d.comb += reason[pid].eq(Stall.BRANCH)
            with m.Elif(drained):
                m.d.comb += reason[pid].eq(Stall.DRAIN)
            with m.Elif(~self.head[pid].valid):
                m.d.comb += reason[pid].eq(Stall.FETCH)
            with m.Elif(state.stale[pid]):
                m.d.comb += reason[pid].eq(Stall.OPERANDS)
        return reason

    def _round_robin(self, m: Module, reason: list[Signal], product) -> tuple[Signal, Signal]:
        """The arbiter: the first eligible process after the last one picked, and whether
        there is one; in a mul's second cycle, its process if eligible. The pointer moves
        past the one picked whether or not it stalls."""
        processes = self._config.hts.processes
        pointer = Signal(self._config.widths.pid)
        reserved = Mux(product.valid, 1 << product.pid, (1 << processes) - 1)
        eligible = Cat(*(r == Stall.NONE for r in reason)) & reserved
        chosen = Signal(self._config.widths.pid)
        any_chosen = Signal()
        for offset in reversed(range(processes)):
            candidate = (pointer + offset) % processes if processes > 1 else Const(0)
            with m.If(eligible.bit_select(candidate, 1)):
                m.d.comb += [chosen.eq(candidate), any_chosen.eq(1)]
        with m.If(any_chosen):
            m.d.sync += pointer.eq(Mux(chosen == processes - 1, 0, chosen + 1))
        return chosen, any_chosen

    def _read_chosen(self, m: Module, chosen, any_chosen, operands, state: _State) -> _Chosen:
        """Process ``chosen``'s head with its operands, loop-stack top, mask and skip state,
        multiplexed from every process's."""
        config, hts = self._config, self._config.hts
        head = self.head[chosen]
        word = head.word
        r_a, r_b, r_c = (Signal(REGISTER_BITS, name=f"r_{n}") for n in "abc")
        counter = Signal(REGISTER_BITS)     # lend's counter register, named by the loop top
        top = Signal(loop_frame_layout(config))
        stack_empty, stack_full = Signal(), Signal()
        mask = state.spec_mask[chosen]
        skipping = state.skip_depth[chosen] != 0
        opcode = self._opcode(m, word.accel_id)
        for pid, (bank, stack) in enumerate(zip(self.gprs, self.loops)):
            with m.If(chosen == pid):
                # lend reads its counter register, named by the loop top, this cycle.
                m.d.comb += [r_a.eq(operands[pid][0]), r_b.eq(operands[pid][1]), r_c.eq(operands[pid][2]),
                             counter.eq(bank.read_value[COUNTER_PORT]),
                             top.eq(stack.top), stack_empty.eq(stack.empty),
                             stack_full.eq(stack.depth == hts.loop_depth)]
        return _Chosen(any_chosen, chosen, head, word, opcode, r_a, r_b, r_c, counter, top,
                       stack_empty, stack_full, mask, skipping)

    def _operands(self, m: Module, pid: int) -> tuple[list[Value], list[Value]]:
        """R[A], R[B], R[C] of process ``pid``'s queue head, read a cycle ahead into a register.

        Decode then starts from flip-flops instead of a register-file read. The registers
        of the next head are read with the indices of the word that becomes the head if
        this one is popped or missing (``upcoming``; the queue keeps them in flip-flops,
        so that the read starts from a register, not from the ring's read). Only decoding
        the process pops its head or writes its registers, so a head that stays keeps its
        operands; a restore (a squash) comes with a redirect, which empties the queue. A
        register written by the instruction decoded in the cycle of the read is not
        forwarded into the read (its value comes from an adder or the multiplier): each
        operand keeps a bit saying it names that register, and reads ``last_write``, the
        bank's last written value, instead.
        Simulation asserts that the operands equal a direct read of the head's registers
        (the bank's ``expect`` ports).

        Returned: the head's operands, and the read ahead of the next head (R[A], R[B],
        R[C] as the bank holds them now, and the three bits), for ``_look_ahead``.
        """
        bank, upcoming, head = self.gprs[pid], self.upcoming[pid], self.head[pid]
        operands = Signal(data.ArrayLayout(REGISTER_BITS, OPERANDS), name=f"operands{pid}", reset_less=True)
        written = Signal(OPERANDS, name=f"operands_written{pid}")
        last_write = Signal(REGISTER_BITS, name=f"last_write{pid}", reset_less=True)
        ahead = self._read_ahead(m, bank, upcoming.registers)
        values = [Mux(written[port], last_write, operands[port]) for port in range(OPERANDS)]
        with m.If(self.pop[pid] | ~head.valid):
            m.d.sync += Cat(operands, written).eq(Cat(*ahead))
        with m.If(bank.write_en):
            m.d.sync += last_write.eq(bank.write_value)
        m.d.comb += bank.read_index[COUNTER_PORT].eq(self.loops[pid].top.counter)
        m.d.comb += [bank.expect_en.eq(head.valid), bank.expect_value.eq(Cat(*values)),
                     bank.expect_index.eq(read_ahead_registers(self._config, head.word))]
        return values, ahead

    @staticmethod
    def _read_ahead(m: Module, bank, registers) -> list[Value]:
        """The ``registers`` (``read_ahead_layout``) as the bank holds them now, then one
        bit per operand: whether this cycle's write lands in its register (``_operands``)."""
        values, written = [], []
        for port, index in enumerate(registers):
            m.d.comb += bank.read_index[port].eq(index)
            values.append(bank.read_value[port])
            written.append(bank.write_en & (bank.write_index == index))
        return values + written

    def _look_ahead(self, m: Module, pid: int, window, now, ahead, leaving, stale):
        """The head of process ``pid`` at the next edge, compared a cycle ahead.

        The query of each word that can be the head then goes to the TLB, with which one
        it will be (``tlb_lookahead``): the head itself, with its operands ``now``, or the
        next head, with its read ahead ``ahead`` (``_operands``). Whether each of its
        regions leaves ``window`` is kept in ``leaving``. Decode's cycle then compares no
        range: the TLB's hits are its kept bits ANDed with ``valid``, the fault cause
        reads ``leaving`` (both asserted against a direct compare). A head that stays
        keeps its bits: windows change only while the process is idle.

        A register written at the edge (by the instruction popped now) is not forwarded
        into these compares. If the next head reads a region base from it, it is
        ``stale`` for a cycle (``Stall.OPERANDS``, the model's ``Decode.settle``): it
        cannot decode, and its own query, from its operands as they now are, takes the
        next head's comparators.
        """
        head, upcoming, lookahead = self.head[pid], self.upcoming[pid], self.tlb_lookahead[pid]
        stays = ~self.pop[pid] & head.valid
        m.d.comb += lookahead.take.eq(Mux(stays & ~stale[pid], HeadSource.STAY, HeadSource.NEXT))
        self._query(m, lookahead.stay, head.word, now)
        next_word = Signal(Instruction, name=f"next_word{pid}")
        m.d.comb += next_word.eq(Mux(stale[pid], head.word, upcoming.word))
        reads_base, writes_base = self._query(m, lookahead.next, next_word,
                                              [Mux(stale[pid], value, read) for value, read in zip(now, ahead)])
        with m.If(lookahead.take == HeadSource.NEXT):
            m.d.sync += leaving.eq(_leaving(window, next_word, reads_base, writes_base))
        written_a, written_c = ahead[3], ahead[5]
        reads_written_base = ((self._opcode(m, upcoming.word.accel_id) == Opcode.TASK)
                              & upcoming.word.k.task.indirect & (written_a | written_c))
        m.d.sync += stale[pid].eq(self.pop[pid] & upcoming.valid & reads_written_base)

    def _query(self, m: Module, query, word, operands) -> tuple[Value, Value]:
        """``query`` (``tlb_query_layout``) of ``word`` with R[A], R[B], R[C] ``operands``;
        returned: its input and output bases, whole."""
        reads_base, writes_base = self._base(word, operands[0], word.a), self._base(word, operands[2], word.c)
        m.d.comb += [query.read.base.eq(reads_base), query.read.blocks.eq(word.b),
                     query.write.base.eq(writes_base), query.write.blocks.eq(word.d), query.block.eq(word.a)]
        return reads_base, writes_base

    @staticmethod
    def _opcode(m: Module, accel_id) -> Signal:
        opcode = Signal(Opcode)
        # Not ``accel_id >= FIRST_RESERVED_ACCEL_ID``: Yosys makes a range compare a carry
        # chain, in front of every control decision (tiny's path, docs/hardware.md).
        with m.If(accel_id[_RESERVED_ID_LOW_BITS:] == FIRST_RESERVED_ACCEL_ID >> _RESERVED_ID_LOW_BITS):
            with m.Switch(accel_id):
                for op, reserved_id in RESERVED_ACCEL_ID.items():
                    with m.Case(reserved_id):
                        m.d.comb += opcode.eq(op)
        return opcode

    def _task_regions(self, m: Module, chosen: _Chosen):
        """Home regions of the task at the head (bases cut to the physical width: a region
        that does not fit its window faults before it reaches any structure)."""
        word, r_a, r_c = chosen.word, chosen.r_a, chosen.r_c
        region = region_layout(self._config)
        home_reads, home_writes = Signal(region, name="home_reads"), Signal(region, name="home_writes")
        m.d.comb += [home_reads.base.eq(self._base(word, r_a, word.a)), home_reads.blocks.eq(word.b),
                     home_writes.base.eq(self._base(word, r_c, word.c)), home_writes.blocks.eq(word.d)]
        return home_reads, home_writes

    @staticmethod
    def _base(word, register, field):
        """A task's region base, whole (32 bits when read from a GPR)."""
        return mutable("decode_indirect_ignored", Mux(word.k.task.indirect, register, field), field)

    def _windows(self, m: Module):
        """Every process's window, written by the CPU port (the end computed at the write)."""
        processes = self._config.hts.processes
        whole = {"base": 0, "end": self._config.memory.blocks}
        windows = Signal(data.ArrayLayout(window_layout(self._config), processes), init=[whole] * processes)
        request = self.set_window
        with m.If(request.valid):
            m.d.sync += [windows[request.pid].base.eq(request.base),
                         windows[request.pid].end.eq(request.base + request.blocks)]
        return windows

    def _illegal(self, m: Module, chosen: _Chosen) -> Signal:
        """Whether the head cannot execute: what the assembler refuses in a program, where
        hardware can see it (the CPU port takes any word).

        The head is ``malformed`` (``hts.hdl.task_queue.malformed``: an unassigned
        accelerator ID, an operand register past ``hts.gprs``, a jump or branch target
        before the first instruction; worked out when the word was loaded, so that no ID
        is compared in this cycle), or it meets a state it cannot run in: a pid field
        other than the process's; ``lbeg`` on a full loop stack; ``lend`` with no open
        loop, or naming another counter than the innermost loop's.
        """
        opcode, word, top = chosen.opcode, chosen.word, chosen.top
        bad_control = Signal()
        with m.Switch(opcode):
            with m.Case(Opcode.LBEG):
                m.d.comb += bad_control.eq((word.a != 0) & chosen.stack_full)
            with m.Case(Opcode.LEND):
                m.d.comb += bad_control.eq(chosen.stack_empty | (top.counter != word.b))
        return wire(m, chosen.head.malformed | (word.pid != chosen.pid) | bad_control, "illegal")

    def _fault_cause(self, m: Module, chosen: _Chosen, leaving, window, illegal) -> tuple[Signal, Signal]:
        """Why the head would fault: ``illegal``, or an access leaving its window (a task's
        input or output region, a memory branch's block: ``leaving``, kept for the head
        by ``_look_ahead``); ``FaultCause.NONE`` if neither. Also whether it faults if it
        is not a task, which needs no region compare."""
        opcode, word = chosen.opcode, chosen.word
        cause = Signal(FaultCause)
        branch_outside = wire(m, (opcode == Opcode.IF) & word.k.branch.memory & leaving.block, "branch_outside")
        with m.If(illegal):
            m.d.comb += cause.eq(FaultCause.ILLEGAL)
        with m.Elif(opcode == Opcode.TASK):
            with m.If(leaving.input):
                m.d.comb += cause.eq(FaultCause.INPUT)
            with m.Elif(leaving.output):
                m.d.comb += cause.eq(FaultCause.OUTPUT)
        with m.Elif(branch_outside):
            m.d.comb += cause.eq(FaultCause.BRANCH)
        direct = Signal(_leaving_layout())
        m.d.comb += direct.eq(_leaving(window, word, self._base(word, chosen.r_a, word.a),
                                       self._base(word, chosen.r_c, word.c)))
        task, memory_branch = self._head_kind(chosen)
        m.d.sync += Assert(~task | (leaving.input == direct.input) & (leaving.output == direct.output),
                           "the window bits kept for the head's regions are stale")
        m.d.sync += Assert(~memory_branch | (leaving.block == direct.block),
                           "the window bit kept for the head's block is stale")
        return cause, illegal | branch_outside

    @staticmethod
    def _head_kind(chosen: _Chosen) -> tuple[Value, Value]:
        """Whether the head is a task, and whether it is a memory branch: which of its kept
        relations mean something (the others come from fields it does not use)."""
        return (chosen.valid & (chosen.opcode == Opcode.TASK),
                chosen.valid & (chosen.opcode == Opcode.IF) & chosen.word.k.branch.memory)

    def _translate(self, m: Module, chosen: _Chosen, home_reads, home_writes):
        """The TLB look-up of the head's regions (in every cycle, for the chosen process, on
        the relations the TLB kept for it, ``_look_ahead``): the read region, taken from a
        TM copy that holds it exactly; and whether the output is speculative, so goes to a
        new TM copy (docs/microarchitecture.md, "Decode of a task under speculation")."""
        word = chosen.word
        reads = Signal.like(home_reads)
        speculative_output = (chosen.mask != 0) & (word.d != 0)
        task, memory_branch = self._head_kind(chosen)
        m.d.comb += [
            self.tlb_pid.eq(chosen.pid),
            self.tlb_checks.regions.eq(task),
            self.tlb_checks.block.eq(memory_branch),
            self.tlb_read_region.eq(home_reads),
            self.tlb_write_region.eq(home_writes),
            self.tlb_alloc_blocks.eq(word.d),
            reads.eq(home_reads),
        ]
        # The slot goes with the task: a retarget of it in this cycle finds the task by it.
        copy = Mux(word.b != 0, self.tlb_read_copy, 0)
        m.d.comb += self.enqueue.reads_copy.eq(copy)
        with m.If(copy.any()):
            m.d.comb += reads.base.eq(self.tlb_read_tm_base)
        return reads, speculative_output

    def _stall(self, m: Module, chosen: _Chosen, cause, speculative_output, first_mul):
        """Whether the chosen head stalls (``stalled``) and why (``plan_stall``); and
        whether it decodes: a task is planned, anything else stalls only on a fault, or
        in a mul's first cycle (``first_mul``)."""
        plan_stall = Signal(Stall)
        fault_stall = Mux(chosen.mask != 0, Stall.SPECULATIVE_FAULT, Stall.FAULT)
        faulting = cause != FaultCause.NONE
        with m.If(chosen.opcode == Opcode.TASK):
            task_blocked = self._plan_task(m, chosen.word, plan_stall, faulting, fault_stall, speculative_output)
        with m.Elif(faulting):                              # anything else stalls only on a fault
            m.d.comb += plan_stall.eq(fault_stall)
        with m.Elif(first_mul):
            m.d.comb += plan_stall.eq(Stall.DECODER_BUSY)
        # Whether it stalls is an OR of the conditions; which reason, the priority above.
        blocked = Mux(chosen.opcode == Opcode.TASK, task_blocked, faulting | first_mul)
        stalled = wire(m, chosen.valid & ~chosen.skipping & blocked, "stalled")
        return plan_stall, stalled, chosen.valid & ~stalled

    def _plan_task(self, m: Module, word, plan_stall, faulting, fault_stall, speculative_output) -> Value:
        """Why the task at the head cannot decode now, in the model's ``_plan_task`` order,
        into ``plan_stall``; returned: whether any reason holds."""
        reasons = [
            (~self.window_has_room, Stall.WINDOW_FULL),
            (~self.tracker_has_free, Stall.TRACKER_FULL),
            (faulting, fault_stall),
            ((word.b != 0) & self.tlb_read_hit & ~self.tlb_read_copy.any(), Stall.TLB_CONFLICT),
            (speculative_output & ~self.tlb_has_room, Stall.TLB_FULL),
            (~speculative_output & (word.d != 0) & self.tlb_write_hit, Stall.TLB_CONFLICT),
        ]
        for index, (condition, stall) in enumerate(reasons):
            with (m.If if index == 0 else m.Elif)(condition):
                m.d.comb += plan_stall.eq(stall)
        return Cat(*(condition for condition, _ in reasons)).any()

    def _rename_output(self, m: Module, home_writes, speculative_output) -> Signal:
        """The task's output region: its home, or a speculative output's new TM copy."""
        writes = Signal.like(home_writes)
        m.d.comb += writes.eq(home_writes)
        with m.If(speculative_output):
            m.d.comb += writes.base.eq(self.tlb_alloc_tm_base)
        return writes

    def _report_stall(self, m: Module, reason, chosen: _Chosen, plan_stall, stalled, cause, faulted):
        """Per process, why it decoded nothing (``stall``); a fault on the committed path
        (``fault``), after which the process decodes nothing more."""
        for pid in range(self._config.hts.processes):
            with m.If(reason[pid] != Stall.NONE):
                m.d.comb += self.stall[pid].eq(Mux(reason[pid] == Stall.DONE, Stall.NONE, reason[pid]))
            with m.Elif(~chosen.valid | (chosen.pid != pid)):
                m.d.comb += self.stall[pid].eq(Stall.DECODER_BUSY)
            with m.Elif(stalled):
                m.d.comb += self.stall[pid].eq(plan_stall)
        with m.If(stalled & (plan_stall == Stall.FAULT)):
            m.d.comb += [self.fault.valid.eq(1), self.fault.pid.eq(chosen.pid), self.fault.pc.eq(chosen.head.pc),
                         self.fault.cause.eq(cause)]
            m.d.sync += faulted.bit_select(chosen.pid, 1).eq(1)

    def _task_fields(self, m, chosen: _Chosen, reads, writes, home_writes):
        """The head as a task: its tracker entry, its record for the enqueue stage and its
        TLB entry, valid only with ``tracker_alloc``, ``enqueue.valid`` and ``tlb_alloc``."""
        config, word, mask = self._config, chosen.word, chosen.mask
        class_of = Signal(config.widths.accel_class)
        with m.Switch(word.accel_id):
            for index, accelerator in enumerate(config.accelerators):
                with m.Case(accelerator.id):
                    m.d.comb += class_of.eq(index)
        tag, entry, task = self.tracker_free_tag, self.tracker_alloc_entry, self.enqueue.task
        m.d.comb += [
            entry.pid.eq(chosen.pid),
            entry.reads.eq(reads),
            entry.writes.eq(writes),
            entry.pc.eq(chosen.head.pc),
            entry.task_id.eq(word.task_id),
            entry.metadata.eq(word.metadata),
            *(getattr(task, name).eq(getattr(entry, name)) for name, _ in entry.shape()),
            task.tag.eq(tag),
            task.accel_class.eq(class_of),
            task.mask.eq(mask),
            self.tlb_alloc_entry.pid.eq(chosen.pid),
            self.tlb_alloc_entry.home.eq(home_writes),
            self.tlb_alloc_entry.mask.eq(mask),
            self.tlb_alloc_entry.producer.eq(tag),
        ]

    def _branch_fields(self, m, chosen: _Chosen):
        """The head as an ``if`` for the branch unit, valid only with ``branch.valid``; a
        memory branch's block is translated by the TLB."""
        branch, head, word = self.branch, chosen.head, chosen.word
        m.d.comb += [
            self.tlb_branch_block.eq(word.a),
            branch.pid.eq(chosen.pid),
            branch.pc.eq(head.pc),
            branch.target.eq(head.target),
            branch.cond.eq(word.k.branch.cond),
            # A memory branch is MR until the branch unit searches its block's writers.
            branch.kind.eq(Mux(word.k.branch.memory, BranchKind.MR, BranchKind.RR)),
            branch.x.eq(chosen.r_a),
            branch.y.eq(chosen.r_b),
            branch.block.eq(self.tlb_branch_phys),
            branch.mask.eq(chosen.mask),
        ]

    def _gpr_write_fields(self, m, chosen: _Chosen, product):
        """The register the head writes and its value (a mul's from the partial products of
        its first cycle), to every bank; only the chosen bank's ``write_en``
        (``_write_gpr``) waits for the stall logic."""
        word, r_a, r_b, top = chosen.word, chosen.r_a, chosen.r_b, chosen.top
        index, value = Signal(self._config.widths.gpr_index), Signal(REGISTER_BITS)
        half = REGISTER_BITS // 2
        with m.Switch(chosen.opcode):
            with m.Case(Opcode.MOV):
                m.d.comb += [index.eq(word.c), value.eq(word.a)]
            with m.Case(Opcode.ADD):
                m.d.comb += [index.eq(word.c), value.eq(r_a + r_b)]
            with m.Case(Opcode.MUL):
                m.d.comb += [index.eq(word.c),
                             value.eq(product.low + Cat(Const(0, half), product.cross_ab + product.cross_ba))]
            with m.Case(Opcode.LBEG):
                m.d.comb += index.eq(word.b)
            with m.Case(Opcode.LEND):
                m.d.comb += [index.eq(top.counter), value.eq(chosen.counter + 1)]
        for bank in self.gprs:
            m.d.comb += [bank.write_index.eq(index), bank.write_value.eq(value)]

    def _multiply(self, m, chosen: _Chosen, product, starting):
        """``mul`` in two cycles at the head: the 16-bit halves of the chosen head's
        operands are multiplied into registers every cycle (``starting``: a mul's first
        cycle, which holds the decoder), and in the next cycle the arbiter picks its
        process again (``_round_robin``), which adds them up, writes the register and
        pops the mul like an ``add``. If a squash takes the head meanwhile, nothing decodes."""
        half = REGISTER_BITS // 2
        a, b = chosen.r_a, chosen.r_b
        m.d.sync += [
            product.valid.eq(starting),
            product.pid.eq(chosen.pid),
            product.low.eq(a[:half] * b[:half]),
            product.cross_ab.eq(a[:half] * b[half:]),
            product.cross_ba.eq(a[half:] * b[:half]),
        ]

    def _checkpoint(self, m: Module, free_ids) -> Signal:
        """The lowest free speculation ID, whose slot takes every process's checkpoint."""
        new_id = Signal(bits_for(self._config.hts.spec_ids))
        m.d.comb += new_id.eq(lowest_set(free_ids))
        # Every cycle with a free ID, each process's GPRs and loop stack are copied into its
        # slot: a speculated if decoded now takes that ID, so its checkpoint is there, and
        # the copy's enables (thousands of flip-flops) do not wait for the stall.
        for unit in (*self.gprs, *self.loops):
            m.d.comb += [unit.checkpoint_en.eq(free_ids.any()), unit.checkpoint_slot.eq(new_id)]
        return new_id

    def _decode_one(self, m: Module, chosen: _Chosen, decoding, control_decoding, speculative_output,
                    state: _State, new_id) -> _Effects:
        """The head decodes: it is popped, then executed, or, in a zero-iteration loop being
        skipped, only counted in the loop nesting. ``control_decoding`` equals ``decoding``
        unless the head is a task that is not skipped; it enables everything but the pop
        and a task's allocations."""
        hts = self._config.hts
        skip_depth = state.skip_depth
        allocated_ids = Signal(hts.spec_ids)
        new_mask = Signal(hts.spec_ids)
        next_skip = Signal.like(skip_depth[0])
        m.d.comb += next_skip.eq(skip_depth[chosen.pid])
        effects = _Effects(allocated_ids, new_mask, next_skip)

        m.d.comb += self.pop.bit_select(chosen.pid, 1).eq(decoding)
        with m.If(control_decoding):
            with m.If(chosen.skipping):
                with m.If(chosen.opcode == Opcode.LBEG):
                    m.d.comb += next_skip.eq(skip_depth[chosen.pid] + 1)
                with m.Elif(chosen.opcode == Opcode.LEND):
                    m.d.comb += next_skip.eq(skip_depth[chosen.pid] - 1)
            with m.Else():
                self._execute(m, chosen, decoding, speculative_output, state.free_ids, new_id, effects)
        return effects

    def _execute(self, m: Module, chosen: _Chosen, decoding, speculative_output, free_ids, new_id,
                 effects: _Effects):
        """The head executes: a task takes its tag, tracker entry, enqueue-stage slot and,
        for a speculative output, its TLB entry; a control instruction acts here; an ``if``
        goes to the branch unit."""
        pid, word = chosen.pid, chosen.word
        with m.Switch(chosen.opcode):
            with m.Case(Opcode.TASK):
                m.d.comb += [self.tracker_alloc.eq(decoding), self.enqueue.valid.eq(decoding),
                             self.tlb_alloc.eq(decoding & speculative_output)]
            with m.Case(Opcode.MOV):
                self._write_gpr(m, pid)
            with m.Case(Opcode.ADD):
                self._write_gpr(m, pid)
            with m.Case(Opcode.MUL):
                self._write_gpr(m, pid)
            with m.Case(Opcode.JUMP):
                self._redirect(m, pid, chosen.head.target)
            with m.Case(Opcode.LBEG):
                self._write_gpr(m, pid)
                self._begin_loop(m, chosen, effects.next_skip)
            with m.Case(Opcode.LEND):
                self._write_gpr(m, pid)
                self._end_loop(m, chosen)
            with m.Case(Opcode.IF):
                self._decode_branch(m, word, free_ids, new_id, effects.allocated_ids, effects.new_mask)

    def _begin_loop(self, m: Module, chosen: _Chosen, next_skip):
        """``lbeg``: a loop of zero iterations is skipped to its ``lend``; any other pushes
        its frame on the chosen process's loop stack."""
        word = chosen.word
        with m.If(word.a == 0):
            m.d.comb += next_skip.eq(1)
        with m.Else():
            for pid, stack in enumerate(self.loops):
                with m.If(chosen.pid == pid):
                    m.d.comb += [stack.push.eq(1),
                                 stack.frame.body_start.eq(chosen.head.pc + 1),
                                 stack.frame.counter.eq(word.b),
                                 stack.frame.remaining.eq(word.a - mutable("loop_count_off_by_one", 1, 0))]

    def _end_loop(self, m: Module, chosen: _Chosen):
        """``lend``: the last iteration pops the loop's frame; any other counts it down and
        loops back to the body."""
        top = chosen.top
        for pid, stack in enumerate(self.loops):
            with m.If(chosen.pid == pid):
                with m.If(top.remaining == 0):
                    m.d.comb += stack.pop.eq(1)
                with m.Else():
                    m.d.comb += [stack.replace.eq(1), stack.frame.eq(top),
                                 stack.frame.remaining.eq(top.remaining - 1)]
        with m.If(top.remaining != 0):
            self._redirect(m, chosen.pid, top.body_start)

    def _decode_branch(self, m, word, free_ids, new_id, allocated_ids, new_mask):
        """An ``if`` decodes: it goes to the branch unit; a speculated one takes the lowest
        free ID, whose slot holds its process's GPRs and loop stack from this cycle."""
        config = self._config
        branch = self.branch
        speculate = word.k.branch.memory & word.k.branch.speculate & (free_ids != 0) & config.hts.speculation
        m.d.comb += branch.valid.eq(1)
        with m.If(speculate):
            m.d.comb += [branch.speculated.eq(1), branch.spec_id.eq(new_id),
                         allocated_ids.eq(1 << new_id), new_mask.eq(1 << new_id)]

    def _write_gpr(self, m, pid):
        for index, bank in enumerate(self.gprs):
            with m.If(pid == index):
                m.d.comb += bank.write_en.eq(1)

    def _redirect(self, m, pid, pc):
        m.d.comb += [self.redirect.bit_select(pid, 1).eq(1)]
        for index in range(self._config.hts.processes):
            with m.If(pid == index):
                m.d.comb += self.redirect_pc[index].eq(pc)

    def _end_of_cycle(self, m: Module, chosen: _Chosen, control_decoding, state: _State, effects: _Effects):
        """The ID pool and each process's mask and skip depth at the edge: a start resets
        them, a restore brings them back, a decode applies its effects (a task changes
        neither, so a task's stall need not be waited for); confirmed IDs leave every mask."""
        spec_mask, skip_depth, faulted = state.spec_mask, state.skip_depth, state.faulted
        m.d.sync += state.free_ids.eq((state.free_ids & ~effects.allocated_ids) | self.freed_ids)
        for pid, (bank, stack) in enumerate(zip(self.gprs, self.loops)):
            restore = self.restore[pid]
            m.d.comb += bank.live.eq(~state.free_ids)
            with m.If(self.start[pid]):
                m.d.sync += [spec_mask[pid].eq(0), skip_depth[pid].eq(0), faulted.bit_select(pid, 1).eq(0)]
            with m.Elif(restore.valid):
                m.d.comb += [bank.restore_en.eq(1), bank.restore_slot.eq(restore.slot),
                             stack.restore_en.eq(1), stack.restore_slot.eq(restore.slot)]
                m.d.sync += [spec_mask[pid].eq(restore.mask & ~self.confirm), skip_depth[pid].eq(0)]
            with m.Elif(control_decoding & (chosen.pid == pid)):
                m.d.sync += [spec_mask[pid].eq((spec_mask[pid] | effects.new_mask) & ~self.confirm),
                             skip_depth[pid].eq(effects.next_skip)]
            with m.Else():
                m.d.sync += spec_mask[pid].eq(spec_mask[pid] & ~self.confirm)
