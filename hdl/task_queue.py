"""Task queue and fetch of one process: program memory, fetch PC, head register and a ring.

RTL of ``hts.models.task_queue`` (docs/microarchitecture.md, "Fetch: the task queue").
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for
from hts.isa import FIRST_RESERVED_ACCEL_ID, OPERAND_FIELDS, RESERVED_ACCEL_ID, Instruction, Opcode, Role, operand_roles

from .interfaces import fetch_pc_width, program_word_layout, queue_entry_layout, read_ahead_layout, read_ahead_registers
from .primitives import record_ram

__all__ = ["TaskQueue", "malformed"]


def malformed(config: SystemConfig, word, before_start: Value) -> Value:
    """Whether ``word`` cannot execute whatever state it meets: an unassigned accelerator ID,
    an operand register past ``hts.gprs``, a target below 0 (``before_start``).
    """
    is_op = {op: word.accel_id == accel_id for op, accel_id in RESERVED_ACCEL_ID.items()}
    is_op[Opcode.TASK] = word.accel_id < FIRST_RESERVED_ACCEL_ID
    known = Cat(*(word.accel_id == accelerator.id for accelerator in config.accelerators),
                *(is_op[op] for op in RESERVED_ACCEL_ID)).any()
    k = word.k.as_value()

    def has_role(op, field, role) -> Value:
        """Whether ``field`` has ``role`` for ``op`` under this word's K bits: a table over K."""
        table = sum(1 << value for value in range(1 << len(k)) if operand_roles(op, value)[field] is role)
        return Const(table, 1 << len(k)).bit_select(k, 1)

    gprs = config.hts.gprs
    bad_register = Cat(*(is_op[op] & has_role(op, field, Role.REGISTER) & (getattr(word, field) >= gprs)
                         for op in Opcode for field in OPERAND_FIELDS)).any()
    # The target (``before_start``) is pc + C: C is the offset where there is one.
    bad_target = Cat(*(is_op[op] & has_role(op, "c", Role.OFFSET) for op in Opcode)).any() & before_start
    return ~known | bad_register | bad_target


def _precomputed(config: SystemConfig, entry, pc, word):
    target = pc + word.c.as_signed()
    program_words = config.hts.program_words
    return [entry.target.eq(Mux(target > program_words, program_words, target)),
            entry.malformed.eq(malformed(config, word, target[-1]))]


def _next_index(index, count: int):
    return Mux(index == count - 1, 0, index + 1)


class TaskQueue(wiring.Component):
    """Program memory of ``hts.program_words`` words and a queue of ``hts.queue_depth``.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    load_en, load_addr, load_data, program_len : In
        From the CPU port, while the process is idle: program words; the length.
    start : In
        Fetch from 0 with an empty queue; the model's cycle 0 is the next.
    head_valid, head_pc, head_word, head_target, head_malformed : Out, registered
        The head, its pc-relative target and whether it is :func:`malformed`.
    behind_valid, behind_word, behind_registers : Out
        The ring's front, which the head takes when popped or empty; its A, B, C (registered).
    exhausted : Out
        Nothing held, queued or in flight, and the fetch PC past the program.
    pop, redirect, redirect_pc : In
        Drop the head; empty the queue and move the fetch PC.
    fetched, fetch_pc : Out
        A word is fetched this cycle; the fetch PC register.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        self._depth = config.hts.queue_depth
        self._program_words = config.hts.program_words
        widths = config.widths
        pc_end = fetch_pc_width(config)
        self._entry = queue_entry_layout(config)
        self._program_word = program_word_layout(config)
        super().__init__({
            "load_en": In(1),
            "load_addr": In(widths.pc),
            "load_data": In(Instruction),
            "program_len": In(pc_end),
            "start": In(1),
            "head_valid": Out(1),
            "head_pc": Out(widths.pc),
            "head_word": Out(Instruction),
            "head_target": Out(pc_end),
            "head_malformed": Out(1),
            "behind_valid": Out(1),
            "behind_word": Out(Instruction),
            "behind_registers": Out(read_ahead_layout(config)),
            "exhausted": Out(1),
            "pop": In(1),
            "redirect": In(1),
            "redirect_pc": In(pc_end),
            "fetched": Out(1),
            "fetch_pc": Out(pc_end),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth

        m.submodules.program = program = Memory(shape=self._program_word, depth=self._program_words, init=[])
        load = program.write_port()
        read = program.read_port(domain="sync", transparent_for=(load,))
        m.d.comb += [load.en.eq(self.load_en), load.addr.eq(self.load_addr), load.data.word.eq(self.load_data),
                     *_precomputed(self._config, load.data, self.load_addr, self.load_data)]

        # The ring, in distributed RAM, is written at the tail and read at the front without
        # a clock; the head is a register of its own. No reset: meaningful only where valid
        # or counted. ``in_flight``: the block RAM's output holds a word fetched last cycle.
        # A one-word queue gets two slots: Yosys folds a one-slot ring into the block RAM's
        # output register, and decode's look-ahead would start from there.
        slots = max(depth, 2)
        head_entry = Signal(self._entry, reset_less=True)
        front = Signal(bits_for(slots))
        tail = Signal(bits_for(slots))
        queued = Signal(bits_for(depth + 1))
        in_flight = Signal()
        in_flight_pc = Signal.like(self.head_pc)
        arriving = Signal(self._entry)
        m.d.comb += [arriving.pc.eq(in_flight_pc), arriving.word.eq(read.data.word),
                     arriving.target.eq(read.data.target), arriving.malformed.eq(read.data.malformed)]
        behind, = record_ram(m, "ring", self._entry, slots, tail, in_flight, arriving, [front])
        used = self.head_valid + queued + in_flight
        m.d.comb += [
            self.behind_valid.eq(queued != 0),
            self.behind_word.eq(behind.word),
            self.head_pc.eq(head_entry.pc),
            self.head_word.eq(head_entry.word),
            self.head_target.eq(head_entry.target),
            self.head_malformed.eq(head_entry.malformed),
            self.exhausted.eq((used == 0) & (self.fetch_pc >= self.program_len)),
        ]
        m.d.sync += Assert(~self.pop | self.head_valid, "pop from an empty task queue")

        flush = self.start | self.redirect
        m.d.comb += self.fetched.eq((used < depth) & (self.fetch_pc < self.program_len) & ~flush)

        with m.If(self.start):
            m.d.sync += self.fetch_pc.eq(0)
        with m.Elif(self.redirect):
            m.d.sync += self.fetch_pc.eq(self.redirect_pc)
        with m.Elif(self.fetched):
            m.d.sync += self.fetch_pc.eq(self.fetch_pc + 1)
        # The read port's output is program[fetch_pc] of the cycle before: the word in flight.
        # A fetch PC of program_words wraps the address, but nothing is fetched from there.
        m.d.comb += read.addr.eq(self.fetch_pc)
        m.d.sync += [in_flight.eq(self.fetched), in_flight_pc.eq(self.fetch_pc)]

        # The head register takes the ring's front when it is popped or empty.
        loading = (self.pop | ~self.head_valid) & self.behind_valid
        self._keep_behind_registers(m, front, tail, queued, in_flight, arriving, loading)
        with m.If(flush):
            m.d.sync += [self.head_valid.eq(0), front.eq(0), tail.eq(0), queued.eq(0)]
        with m.Else():
            with m.If(loading):
                m.d.sync += [head_entry.eq(behind), front.eq(_next_index(front, slots))]
            with m.If(in_flight):
                m.d.sync += tail.eq(_next_index(tail, slots))
            m.d.sync += [self.head_valid.eq(self.head_valid & ~self.pop | self.behind_valid),
                         queued.eq(queued - loading + in_flight)]
        return m

    def _keep_behind_registers(self, m: Module, front, tail, queued, in_flight, arriving, loading):
        """``behind_registers`` at the next edge: the arriving word's, or the next front's."""
        slots = max(self._depth, 2)
        arriving_registers = read_ahead_registers(self._config, arriving.word)
        following, = record_ram(m, "ring_registers", read_ahead_layout(self._config), slots,
                                tail, in_flight, arriving_registers, [_next_index(front, slots)])
        # An arrival lands at the next front behind at most one queued word: always with a
        # one-word queue, where the compare would be constant (Verilator's CMPCONST).
        lands_next = in_flight if self._depth == 1 else in_flight & (queued <= 1)
        with m.If(loading | in_flight & (queued == 0)):
            m.d.sync += self.behind_registers.eq(Mux(lands_next, arriving_registers, following))
        m.d.sync += Assert(~self.behind_valid | (self.behind_registers.as_value() ==
                                                 read_ahead_registers(self._config, self.behind_word)),
                           "the registers kept for the ring's front are stale")
