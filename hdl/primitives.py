"""Hardware idioms the RTL blocks share, each written once.

The generic ones (select, encoders, the lowest set bits, tag sets, counts, age matrices,
record RAM) are tested once, in tests/hdl/test_primitives.py. The rest work on values of the layouts of
``hts.hdl.interfaces`` (look-up by tag, region overlap, retarget, whole task) or keep a
record without reset (:func:`record_register`); the tests of the blocks using them
cover them.

A set of bits is a ``Value`` or a list of 1-bit values. An age matrix ``older`` has one
row per slot: ``older[i]`` bit ``j`` is set when slot ``j`` is older than slot ``i``
(never bit ``i`` itself), so row ``i`` holds the slots older than ``i`` and column ``i``
the slots younger. Only the bits between valid slots mean anything, so a pick ANDs a
row with its chosen slots, which are valid, before using it.
"""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, MemoryData, Module, Mux, Signal, Value
from amaranth.lib import data
from amaranth.lib.memory import Memory

from .mutation import mutable

__all__ = ["wire", "select", "encode", "lowest_set", "lowest_ones", "index_set", "popcount", "fewer_than", "oldest",
           "youngest", "update_age_matrix", "entry_of", "mux_tree", "entry_at", "record_register", "held",
           "record_ram", "region_end", "overlaps", "retargeted_ranges", "whole_task"]


def wire(m: Module, value, name: str) -> Signal:
    """``value`` as a named signal, so that every user shares one copy of its logic."""
    signal = Signal(Value.cast(value).shape(), name=name)
    m.d.comb += signal.eq(value)
    return signal


def select(one_hot, values) -> Value:
    """The value whose bit is set in ``one_hot`` (at most one is), 0 if none.

    An AND-OR rather than a chain of multiplexers: the bits are exclusive, so no priority
    is needed.
    """
    return reduce(operator.or_, (Mux(bit, Value.cast(value), 0) for bit, value in zip(one_hot, values)), Const(0))


def encode(one_hot) -> Value:
    """The index of the bit set in ``one_hot`` (at most one is), 0 if none."""
    return select(one_hot, range(len(one_hot)))


def lowest_set(bits) -> Value:
    """The index of the lowest set bit of ``bits``, 0 if none (a priority encoder)."""
    index = Const(0)
    for position in reversed(range(len(bits))):
        index = Mux(bits[position], position, index)
    return index


def lowest_ones(bits, how_many: int = 1) -> Value:
    """The ``how_many`` lowest set bits of ``bits`` (all of them if fewer are set).

    One bit is ``bits & -bits``: the subtraction is a carry chain, which the FPGA's
    carry logic runs in a fraction of a LUT level, where a priority chain of LUTs takes a
    level per few bits (docs/hardware.md, "Timing").
    """
    bits = Cat(bits)
    if how_many == 1:
        return (bits & -bits)[:len(bits)]
    return Cat(*(bits[i] & fewer_than(bits[:i], how_many) for i in range(len(bits))))


def index_set(chosen, indices, width: int) -> Value:
    """``width`` bits with bit ``indices[i]`` set for each ``chosen[i]`` set, e.g. the tags of chosen tasks."""
    return select(chosen, (1 << index for index in indices))[:width]


def popcount(bits):
    """How many of ``bits`` are set (an adder chain); the integer 0 for no bits at all."""
    return sum(bits, start=0)


def fewer_than(bits: Value, limit: int) -> Value:
    """Whether fewer than ``limit`` bits of ``bits`` are set (no adder for a limit of 1)."""
    return ~bits.any() if limit == 1 else popcount(bits) < limit


def oldest(chosen, older, how_many: int = 1) -> list[Value]:
    """One bit per slot: it is in ``chosen`` and fewer than ``how_many`` older slots are,
    i.e. the ``how_many`` oldest of ``chosen`` (by default the oldest alone)."""
    chosen = Cat(chosen)
    return [chosen[i] & fewer_than(chosen & older[i], how_many) for i in range(len(chosen))]


def youngest(chosen, older) -> list[Value]:
    """One bit per slot: it is in ``chosen`` and no younger slot is."""
    chosen = Cat(chosen)
    return [chosen[i] & ~(chosen & Cat(row[i] for row in older)).any() for i in range(len(chosen))]


def update_age_matrix(m: Module, older, arriving, rows):
    """At the clock edge, the arriving slots take their place in the age matrix ``older``
    (or in any relation to older slots kept the same way).

    Slot ``i``, if ``arriving[i]``, gets row ``rows[i]``: the slots older than it (those
    staying, and any arrival ahead of it). Every other row drops the arriving slots: an
    entry staying is older than every arrival, and the bits of a slot freed earlier are
    stale anyway. The bits between slots that stay valid never change: their order is
    fixed when they arrive.
    """
    arriving = Cat(arriving)
    for slot, row in enumerate(rows):
        with m.If(arriving[slot]):
            m.d.sync += older[slot].eq(row)
        with m.Else():
            m.d.sync += older[slot].eq(older[slot] & ~arriving)


def entry_of(entries, tag):
    """``entries[tag]`` (an array view indexed by a signal) as an AND-OR multiplexer on the
    decoded index: a view of the element layout, or a plain value for plain elements.

    Indexing the view directly shifts the whole array by ``tag`` times the element
    width, which Yosys builds as a log-shifter over every bit of every element: the
    dispatch arbiter's look-up in the default's 16 tracker entries took 3,567 LUT4s that
    way and takes 667 as an AND-OR."""
    return entry_at(entries, [tag == index for index in range(len(entries))])


def mux_tree(entries, index) -> Value:
    """``entries[index]`` (an array view indexed by a signal) as a binary tree of 2:1
    multiplexers, one level per bit of ``index`` from the lowest; 0 past the last entry.

    For a register file's read ports, where it maps to fewer LUTs than :func:`entry_of`'s
    AND-OR on the decoded index, for as many levels (docs/hardware.md, "Timing")."""
    element = entries.shape().elem_shape
    padding = [Const(0, len(Value.cast(entries[0])))] * ((1 << len(index)) - len(entries))
    level = [Value.cast(entries[position]) for position in range(len(entries))] + padding
    for bit in index:
        level = [Mux(bit, high, low) for low, high in zip(level[0::2], level[1::2])]
    return element(level[0]) if isinstance(element, data.Layout) else level[0]


def entry_at(entries, one_hot):
    """The element of ``entries`` whose bit is set in ``one_hot`` (an AND-OR), as
    :func:`entry_of` gives it."""
    selected = select(one_hot, entries)
    element = entries.shape().elem_shape
    return element(selected) if isinstance(element, data.Layout) else selected


def record_register(m: Module, port, name: str) -> Signal:
    """A register without reset driving the output ``port``, for state that a valid bit
    guards; the block assigns it in ``sync`` instead of the port.

    Which registers have a reset. Only control state does: valid bits, pointers, counters,
    allocation masks. Task records, TLB and tracker entries, age and overlap matrices,
    snapshots, queue words and the CDB's ticket order mean something only while a valid bit
    (or a depth, or a head/tail pair) says so, and are written before that bit is set, so
    they carry no reset, as FPGA practice has it: on the default the reset net then reaches
    some 1,500 of the 12,800 flip-flops rather than nearly all of them, and the flip-flops
    without it pack with any neighbour. ``tests/hdl/test_rtl_hts.py`` resets the scheduler
    in the middle of runs and checks that the run after the reset matches the model, cycle
    for cycle.
    """
    register = Signal(port.shape(), name=name, reset_less=True)
    m.d.comb += port.eq(register)
    return register


def held(m: Module, given, value, name: str) -> Value:
    """``value`` in a cycle where ``given`` is high, and from the next cycle on the value of
    the last such cycle (a register without reset loaded then): an argument that arrives
    for one cycle and must stay put, as an ``ap_none`` argument must."""
    kept = Signal.like(value, name=name, reset_less=True)
    with m.If(given):
        m.d.sync += kept.eq(value)
    return Mux(given, value, kept)


def record_ram(m: Module, name: str, shape, depth: int, write_addr, write_en, write_data, read_addrs, *,
               contents: MemoryData | None = None) -> list:
    """Records of ``shape`` written at ``write_addr`` at the clock edge (when ``write_en``)
    and read at each of ``read_addrs`` in the same cycle, without a clock: a memory with
    asynchronous read ports, which Yosys maps to distributed RAM (TRELLIS_DPR16X4 on
    ECP5). A read of the address being written gives the old record. One record is a
    register (a memory without address bits does not lint). No reset: the caller keeps
    the valid bits (:func:`record_register`). ``contents``, of that shape and depth (at
    least 2), holds the records where a testbench can read them back.
    """
    if contents is not None:
        assert (contents.shape, contents.depth) == (shape, depth) and depth > 1
    elif depth == 1:
        register = Signal(shape, name=name, reset_less=True)
        with m.If(write_en):
            m.d.sync += register.eq(write_data)
        return [register for _ in read_addrs]
    memory = Memory(contents) if contents is not None else Memory(shape=shape, depth=depth, init=[])
    m.submodules[name] = memory
    write = memory.write_port()
    m.d.comb += [write.addr.eq(write_addr), write.en.eq(write_en), write.data.eq(write_data)]
    records = []
    for address in read_addrs:
        read = memory.read_port(domain="comb")
        m.d.comb += read.addr.eq(address)
        records.append(read.data)
    return records


def region_end(region) -> Value:
    """The block after ``region``, one bit wider than its base so that a region reaching
    the top of the physical space does not wrap."""
    return region.base + region.blocks


def overlaps(a, b, *, a_end=None, b_end=None) -> Value:
    """Whether two regions share a block: two range comparators and two non-empty checks.

    An end held in a register (``a_end``, ``b_end``) saves the adder in front of its
    comparator.
    """
    a_end = region_end(a) if a_end is None else a_end
    b_end = region_end(b) if b_end is None else b_end
    before = _before()
    return (a.blocks != 0) & (b.blocks != 0) & before(a.base, b_end) & before(b.base, a_end)


def overlaps_late(a, b, *, b_end) -> Value:
    """:func:`overlaps` for an ``a`` whose base arrives late (a register file's read)
    while its block count is early (an immediate): ``b.base < a.base + a.blocks`` is
    compared as ``b.base − a.blocks < a.base`` (signed), whose subtraction waits for no
    late input, so the late base meets one comparator per bound and no adder."""
    before = _before()
    return (a.blocks != 0) & (b.blocks != 0) & before(a.base, b_end) & before(b.base - a.blocks, a.base)


def _before():
    """The strict ``<`` of both overlap tests (its mutant lets touching regions meet)."""
    return mutable("overlap_touching_ends", operator.lt, operator.le)


def retargeted_ranges(task, tag, retarget, reads_copy=None) -> tuple[Value, Value, Value]:
    """``task``'s reads and writes after this cycle's retarget, and whether one changed.

    ``retarget`` has the copy-back engine's ``retarget``, ``retarget_tm``,
    ``retarget_home`` and ``retarget_producer``, and the TLB's ``retarget_slot``. The
    producer (by ``tag``) writes home from now on, and a reader whose range is exactly
    the TM copy reads home (``_apply_retarget`` of ``models/hts.py``, which matches
    writes on the TM region: while the TLB entry lives, only its producer writes it).
    A task held is matched by comparing its reads with the copy. A task arriving from
    decode comes with ``reads_copy``, the TLB slot its reads were remapped through
    (``decoded_signature``): it reads the copy exactly when that slot is the one
    retargeted, which needs no compare behind decode's remap (the top level asserts that
    both agree).
    """
    reads_match = task.reads == retarget.retarget_tm if reads_copy is None else \
        (reads_copy & retarget.retarget_slot).any()
    reads = mutable("retarget_skips_readers", retarget.retarget & reads_match, 0)
    writes = retarget.retarget & (retarget.retarget_producer == tag)
    return (Mux(reads, retarget.retarget_home, task.reads), Mux(writes, retarget.retarget_home, task.writes),
            reads | writes)


def whole_task(task, *parts) -> list:
    """Assignments making the ``task_layout`` value ``task`` of ``parts`` whose fields make
    it up: a queued task and its tag's tracker entry, or a decoded task and its waits."""
    return [getattr(task, name).eq(getattr(part, name)) for part in parts for name, _ in part.shape()]
