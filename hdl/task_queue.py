"""Task queue and fetch of one process: program memory, fetch PC, a head register and a FIFO.

RTL of ``hts.models.task_queue``; see docs/microarchitecture.md ("One cycle", step 9) for
its timing. The program memory is a block RAM with a synchronous read port, holding
each word with its pc-relative target (``program_word_layout``). Its address is the
fetch PC register, so a word fetched in one cycle is at the port's output in the next:
the model's word in flight. It joins the ring behind the head at the end of that cycle.
The head register loads only from the ring's front, so what decode reads a cycle ahead
of the head (``behind``) is a ring entry, never the block RAM's output.
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
    """Whether ``word`` cannot execute whatever state it meets (``before_start``: its
    pc-relative target is below 0): an unassigned accelerator ID, an operand register
    past ``hts.gprs``, a jump or branch target before the first instruction. Decode's
    ``illegal`` adds what depends on its state (the pid, the loop stack). Which fields
    name registers, and which is a PC offset, is the ISA's ``operand_roles``."""
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
    """``entry.target`` and ``entry.malformed`` of ``word`` at ``pc``."""
    target = pc + word.c.as_signed()
    program_words = config.hts.program_words
    return [entry.target.eq(Mux(target > program_words, program_words, target)),
            entry.malformed.eq(malformed(config, word, target[-1]))]


def _next_index(index, count: int):
    """``index + 1`` around a ring of ``count`` slots (any count, not only powers of two)."""
    return Mux(index == count - 1, 0, index + 1)


class TaskQueue(wiring.Component):
    """Program memory of ``hts.program_words`` words and a queue of ``hts.queue_depth``.

    CPU side (the process is idle: nothing is decoded from it meanwhile):

    - ``load_en``, ``load_addr``, ``load_data`` (in): write one program word per cycle;
      the read port is transparent to this write port, so a load needs no settling time;
    - ``program_len`` (in, held by the CPU): number of valid words; fetch stops there;
    - ``start`` (in): fetch PC := 0 and the queue empties at the edge, like a redirect to
      0 (no fetch in that cycle); the model's cycle 0 is the cycle after ``start``.

    Decode side (on the state registered at the start of the cycle):

    - ``head_valid``, ``head_pc``, ``head_word``, ``head_target``, ``head_malformed``
      (out, registered): the oldest instruction, its pc-relative target and whether it
      is :func:`malformed` (``queue_entry_layout``), in the head register;
    - ``behind_valid``, ``behind_word`` (out, the ring's front, read without a clock):
      the instruction the head register takes at the edge if it is popped or empty,
      and whether there is one;
    - ``behind_registers`` (out, registered): the GPR indices of ``behind_word``'s A, B
      and C (``read_ahead_layout``), with which decode reads the next head's registers a
      cycle ahead. A copy of the ring's front kept in flip-flops, so that the read does
      not wait for the ring's;
    - ``exhausted`` (out): no head, nothing queued or in flight and fetch PC >=
      ``program_len``.

    Updates (land at the clock edge):

    - ``pop`` (in, from decode): drop the head; only while ``head_valid`` (asserted);
    - ``redirect``, ``redirect_pc`` (in, from decode on a jump or loop back, or from the
      branch unit on a taken branch): empty the queue, including what this cycle would
      have fetched (none is), and move the fetch PC; fetch resumes next cycle. ``pop``
      and ``redirect`` may come together (decode pops the jump it executes). A target
      past the end of the program needs only be >= ``program_len``: the driver
      saturates targets that do not fit ``redirect_pc``.

    Fetch, for the top level and the trace:

    - ``fetched`` (out): this cycle reads the word at ``fetch_pc`` into flight (head,
      ring and the word in flight left room at the start of the cycle, ``fetch_pc`` <
      ``program_len``, and no redirect);
    - ``fetch_pc`` (out): the fetch PC register.
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

        # The ring, in distributed RAM: written at the tail from the block RAM's output,
        # read at the front without a clock. The head is a register of its own, so that
        # decode starts from a flip-flop. Meaningful only where valid or counted: no reset
        # (record_register, hdl/primitives.py). ``in_flight``: the block RAM's output holds
        # a word fetched last cycle. A one-word queue still gets two slots: a one-slot ring
        # is a register loaded from the block RAM's output, which Yosys folds into the
        # block RAM's output register, and decode's look-ahead would start from there.
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
        # The read port's output is program[fetch_pc] of the cycle before (memory and port
        # output both start at 0): the word in flight when one was fetched. A fetch PC of
        # program_words wraps the address, but nothing is fetched from there.
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
        """``behind_registers`` at the next edge: the arriving word's if it lands at the
        front then (into an empty ring, or behind a front that leaves), else the next
        front's from a second ring of the indices alone, read at ``front`` + 1. Only
        ``loading`` (the pop) waits for decode, and it only enables the register.
        A flush needs nothing: the ring is empty until the next arrival, which loads."""
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
