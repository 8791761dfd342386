"""Decode: one instruction of one process per cycle, picked round robin.

RTL of the model's ``Decode`` and of the per-process state of ``models/decode.py``;
it owns the speculation-ID pool (docs/microarchitecture.md, "Decode's cycle").
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
    """The head at the next edge if the head is popped or empty: the ring's front and its GPR indices."""
    return data.StructLayout({"valid": 1, "word": Instruction, "registers": read_ahead_layout(config)})


def take_queue(decode: "Decode", pid: int, queue) -> list:
    """Decode's inputs from process ``pid``'s task queue."""
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
    """``_leaving_layout`` of ``word``: a region leaves when ``base < window.base`` or ``base >
    end − blocks`` (no adder in series), a block when ``a < base`` or ``a ≥ end``.
    """
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
    """A ``mul`` between its two cycles: its process and its partial products."""
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

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    head, upcoming, exhausted : In, per process
        From the task queues: the head, the word behind it, queue and program exhausted.
    done, start, drained : In, In, Out, per process
        Not running; a start resets the process's state; nothing left to decode, or faulted.
    blocked, pending, restore : In, per process
        From the branch unit: an unspeculated branch, any branch; a misprediction's restore.
    pop, redirect, redirect_pc : Out, per process
        To the task queue: the head is consumed; a jump or loop back.
    confirm, freed_ids : In
        IDs cleared from every mask; IDs back to the pool.
    tracker_has_free, tracker_free_tag : In
        Room for a task besides the enqueue stage's; the lowest free tag.
    scan_busy : In
        A tracker search goes on next cycle: no task or memory branch decodes now.
    successors_full : In
        A successor list in flight has fewer than two free slots: no task decodes now.
    tracker_alloc, tracker_alloc_entry, enqueue : Out
        The task decoded: its tracker entry, and the task (``decoded_signature``) itself.
    tlb_lookahead : Out, per process
        To the TLB: the head at the next edge, whose relations to the homes it keeps.
    tlb_pid, tlb_read_region, tlb_write_region, tlb_branch_block, tlb_alloc_blocks, tlb_checks : Out
        To the TLB: the chosen head's look-up (regions and checks for simulation only).
    tlb_read_hit, tlb_read_copy, tlb_read_tm_base, tlb_write_hit, tlb_has_room, tlb_alloc_tm_base, tlb_branch_phys : In
        From the TLB: the look-up's answers, room and place for a new copy, a block's translation.
    tlb_alloc, tlb_alloc_entry : Out
        To the TLB: a speculative output's new entry.
    branch, stall, fault : Out
        The ``if`` decoded; per process why it decoded nothing; a committed-path fault.
    set_window : In
        From the CPU port: a process's window (reset: all of home memory).
    gprs, loops : list
        Each process's :class:`GPRBank` and :class:`LoopStack`.

    Data fields carry the chosen head every cycle; only valid and enable bits wait for the stall.
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
            "scan_busy": In(1),
            "tracker_has_free": In(1),
            "successors_full": In(1),
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
        # Per-process architectural state; public so that tests can read it back.
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
        # What the head does if it is not a task (or is skipped) decides only on that fault
        # and, for a memory branch, on the tracker's search: its effects need not wait for
        # the TLB look-up and a task's window bits.
        _, memory_branch = self._head_kind(chosen)
        control_stall = control_faulting | first_mul | memory_branch & self.scan_busy
        control_decoding = wire(m, chosen.valid & (chosen.skipping | ~control_stall), "control_decoding")
        writes = self._rename_output(m, home_writes, speculative_output)
        self._report_stall(m, reason, chosen, plan_stall, stalled, cause, state.faulted)

        # ---- executing the instruction --------------------------------------------------
        # What a task or a branch carries goes out whatever the stall decides; only the
        # valid and enable bits wait for it.
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
        """Per process, why the arbiter may not pick it (``Stall.NONE``: it may), and ``drained``."""
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
        """The first eligible process after the last picked (in a ``mul``'s second cycle, its own)."""
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
                m.d.comb += [r_a.eq(operands[pid][0]), r_b.eq(operands[pid][1]), r_c.eq(operands[pid][2]),
                             counter.eq(bank.read_value[COUNTER_PORT]),
                             top.eq(stack.top), stack_empty.eq(stack.empty),
                             stack_full.eq(stack.depth == hts.loop_depth)]
        return _Chosen(any_chosen, chosen, head, word, opcode, r_a, r_b, r_c, counter, top,
                       stack_empty, stack_full, mask, skipping)

    def _operands(self, m: Module, pid: int) -> tuple[list[Value], list[Value]]:
        """R[A], R[B], R[C] of process ``pid``'s head, in registers loaded a cycle ahead; returns them
        and the read ahead of the next head's (values, then a bit per operand written now).
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
        """The ``registers`` as the bank holds them now, then whether this cycle's write lands in each."""
        values, written = [], []
        for port, index in enumerate(registers):
            m.d.comb += bank.read_index[port].eq(index)
            values.append(bank.read_value[port])
            written.append(bank.write_en & (bank.write_index == index))
        return values + written

    def _look_ahead(self, m: Module, pid: int, window, now, ahead, leaving, stale):
        """The head at the next edge, compared a cycle ahead; ``stale`` if its base is written now."""
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
        reads_base, writes_base = self._base(word, operands[0], word.a), self._base(word, operands[2], word.c)
        m.d.comb += [query.read.base.eq(reads_base), query.read.blocks.eq(word.b),
                     query.write.base.eq(writes_base), query.write.blocks.eq(word.d), query.block.eq(word.a)]
        return reads_base, writes_base

    @staticmethod
    def _opcode(m: Module, accel_id) -> Signal:
        opcode = Signal(Opcode)
        # Not ``accel_id >= FIRST_RESERVED_ACCEL_ID``: Yosys makes a range compare a carry
        # chain, in front of every control decision.
        with m.If(accel_id[_RESERVED_ID_LOW_BITS:] == FIRST_RESERVED_ACCEL_ID >> _RESERVED_ID_LOW_BITS):
            with m.Switch(accel_id):
                for op, reserved_id in RESERVED_ACCEL_ID.items():
                    with m.Case(reserved_id):
                        m.d.comb += opcode.eq(op)
        return opcode

    def _task_regions(self, m: Module, chosen: _Chosen):
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
        processes = self._config.hts.processes
        whole = {"base": 0, "end": self._config.memory.blocks}
        windows = Signal(data.ArrayLayout(window_layout(self._config), processes), init=[whole] * processes)
        request = self.set_window
        with m.If(request.valid):
            m.d.sync += [windows[request.pid].base.eq(request.base),
                         windows[request.pid].end.eq(request.base + request.blocks)]
        return windows

    def _illegal(self, m: Module, chosen: _Chosen) -> Signal:
        """Whether the head cannot execute: ``malformed``, a foreign pid, or a loop stack it cannot run on."""
        opcode, word, top = chosen.opcode, chosen.word, chosen.top
        bad_control = Signal()
        with m.Switch(opcode):
            with m.Case(Opcode.LBEG):
                m.d.comb += bad_control.eq((word.a != 0) & chosen.stack_full)
            with m.Case(Opcode.LEND):
                m.d.comb += bad_control.eq(chosen.stack_empty | (top.counter != word.b))
        return wire(m, chosen.head.malformed | (word.pid != chosen.pid) | bad_control, "illegal")

    def _fault_cause(self, m: Module, chosen: _Chosen, leaving, window, illegal) -> tuple[Signal, Signal]:
        """Why the head would fault, from the kept window bits; and whether it faults as a non-task."""
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
        return (chosen.valid & (chosen.opcode == Opcode.TASK),
                chosen.valid & (chosen.opcode == Opcode.IF) & chosen.word.k.branch.memory)

    def _translate(self, m: Module, chosen: _Chosen, home_reads, home_writes):
        """The TLB look-up of the head: the read region (a TM copy, or home), and whether the output is speculative."""
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
        """Why the head stalls, whether it does, and whether it decodes."""
        plan_stall = Signal(Stall)
        fault_stall = Mux(chosen.mask != 0, Stall.SPECULATIVE_FAULT, Stall.FAULT)
        faulting = cause != FaultCause.NONE
        _, memory_branch = self._head_kind(chosen)
        waits_for_scan = memory_branch & self.scan_busy
        with m.If(chosen.opcode == Opcode.TASK):
            task_blocked = self._plan_task(m, chosen.word, plan_stall, faulting, fault_stall, speculative_output)
        with m.Elif(waits_for_scan):
            m.d.comb += plan_stall.eq(Stall.SCAN)
        with m.Elif(faulting):                              # anything else stalls only on a fault
            m.d.comb += plan_stall.eq(fault_stall)
        with m.Elif(first_mul):
            m.d.comb += plan_stall.eq(Stall.DECODER_BUSY)
        # Whether it stalls is an OR of the conditions; which reason, the priority above.
        blocked = Mux(chosen.opcode == Opcode.TASK, task_blocked, waits_for_scan | faulting | first_mul)
        stalled = wire(m, chosen.valid & ~chosen.skipping & blocked, "stalled")
        return plan_stall, stalled, chosen.valid & ~stalled

    def _plan_task(self, m: Module, word, plan_stall, faulting, fault_stall, speculative_output) -> Value:
        """Why the task at the head cannot decode, in the model's order; returns whether any reason holds."""
        reasons = [
            (self.scan_busy, Stall.SCAN),
            (~self.tracker_has_free, Stall.TRACKER_FULL),
            (self.successors_full, Stall.SUCCESSORS_FULL),
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
        writes = Signal.like(home_writes)
        m.d.comb += writes.eq(home_writes)
        with m.If(speculative_output):
            m.d.comb += writes.base.eq(self.tlb_alloc_tm_base)
        return writes

    def _report_stall(self, m: Module, reason, chosen: _Chosen, plan_stall, stalled, cause, faulted):
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
        """The head as a task: tracker entry, enqueue record and TLB entry, valid only with their allocations."""
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
        """The register the head writes and its value, to every bank; only ``write_en`` waits for the stall."""
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
        """A ``mul``'s first cycle: the partial products of its operands' 16-bit halves into registers."""
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
        new_id = Signal(bits_for(self._config.hts.spec_ids))
        m.d.comb += new_id.eq(lowest_set(free_ids))
        # Every cycle with a free ID, each process's GPRs and loop stack are copied into its
        # slot: a speculated if decoded now takes that ID, and the copy's enables do not
        # wait for the stall.
        for unit in (*self.gprs, *self.loops):
            m.d.comb += [unit.checkpoint_en.eq(free_ids.any()), unit.checkpoint_slot.eq(new_id)]
        return new_id

    def _decode_one(self, m: Module, chosen: _Chosen, decoding, control_decoding, speculative_output,
                    state: _State, new_id) -> _Effects:
        """The head decodes: it pops, then executes (or is counted while a loop is skipped).
        ``control_decoding`` enables everything but the pop and a task's allocations.
        """
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
        """``lbeg``: a zero-iteration loop is skipped to its ``lend``; any other pushes its frame."""
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
        """``lend``: the last iteration pops the frame; any other counts down and loops back."""
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
        """An ``if`` goes to the branch unit; a speculated one takes the lowest free ID."""
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
