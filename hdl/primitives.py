"""Hardware idioms the RTL blocks share, each written once (tested in tests/hdl/test_primitives.py).

An age matrix ``older`` has one row per slot: ``older[i]`` bit ``j`` is set when slot ``j``
is older than slot ``i``; only bits between valid slots mean anything.
"""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, MemoryData, Module, Mux, Signal, Value
from amaranth.lib import data
from amaranth.lib.memory import Memory

from .mutation import mutable

__all__ = ["wire", "select", "encode", "lowest_set", "lowest_ones", "index_set", "popcount", "fewer_than", "oldest",
           "youngest", "update_age_matrix", "entry_of", "mux_tree", "entry_at", "record_register", "held",
           "record_ram", "search_row", "region_end", "overlaps", "retargeted_ranges", "whole_task"]


def wire(m: Module, value, name: str) -> Signal:
    """``value`` as a named signal, so that every user shares one copy of its logic."""
    signal = Signal(Value.cast(value).shape(), name=name)
    m.d.comb += signal.eq(value)
    return signal


def select(one_hot, values) -> Value:
    """The value whose bit is set in ``one_hot`` (at most one is), 0 if none: an AND-OR, no priority chain."""
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
    """The ``how_many`` lowest set bits of ``bits``; one is ``bits & -bits``, a carry chain that
    is faster on the FPGA than a priority chain of LUTs.
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
    """One bit per slot: in ``chosen`` with fewer than ``how_many`` older slots in it."""
    chosen = Cat(chosen)
    return [chosen[i] & fewer_than(chosen & older[i], how_many) for i in range(len(chosen))]


def youngest(chosen, older) -> list[Value]:
    """One bit per slot: in ``chosen`` with no younger slot in it."""
    chosen = Cat(chosen)
    return [chosen[i] & ~(chosen & Cat(row[i] for row in older)).any() for i in range(len(chosen))]


def update_age_matrix(m: Module, older, arriving, rows):
    """At the edge, ``arriving[i]`` slots take row ``rows[i]`` of ``older``; every other row drops
    the arriving slots.
    """
    arriving = Cat(arriving)
    for slot, row in enumerate(rows):
        with m.If(arriving[slot]):
            m.d.sync += older[slot].eq(row)
        with m.Else():
            m.d.sync += older[slot].eq(older[slot] & ~arriving)


def entry_of(entries, tag):
    """``entries[tag]`` as an AND-OR on the decoded index (indexing by a signal makes a log-shifter)."""
    return entry_at(entries, [tag == index for index in range(len(entries))])


def mux_tree(entries, index) -> Value:
    """``entries[index]`` as a tree of 2:1 multiplexers, one level per index bit; 0 past the end."""
    element = entries.shape().elem_shape
    padding = [Const(0, len(Value.cast(entries[0])))] * ((1 << len(index)) - len(entries))
    level = [Value.cast(entries[position]) for position in range(len(entries))] + padding
    for bit in index:
        level = [Mux(bit, high, low) for low, high in zip(level[0::2], level[1::2])]
    return element(level[0]) if isinstance(element, data.Layout) else level[0]


def entry_at(entries, one_hot):
    """The element of ``entries`` whose bit is set in ``one_hot`` (an AND-OR), as :func:`entry_of` gives it."""
    selected = select(one_hot, entries)
    element = entries.shape().elem_shape
    return element(selected) if isinstance(element, data.Layout) else selected


def record_register(m: Module, port, name: str) -> Signal:
    """A register without reset driving the output ``port``, for state a valid bit guards and
    that is written before the bit is set; the block assigns it in ``sync``.
    """
    register = Signal(port.shape(), name=name, reset_less=True)
    m.d.comb += port.eq(register)
    return register


def held(m: Module, given, value, name: str) -> Value:
    """``value`` while ``given``, and after it the value of the last cycle it was: an ``ap_none`` argument."""
    kept = Signal.like(value, name=name, reset_less=True)
    with m.If(given):
        m.d.sync += kept.eq(value)
    return Mux(given, value, kept)


def record_ram(m: Module, name: str, shape, depth: int, write_addr, write_en, write_data, read_addrs, *,
               contents: MemoryData | None = None) -> list:
    """Records written at the edge and read at ``read_addrs`` without a clock (distributed RAM);
    one record is a register. ``contents`` lets a testbench read them back.
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


def search_row(m: Module, starting, rows: int, name: str) -> tuple[Value, Value]:
    """The row of tracker entries a search compares this cycle, and whether it is its last:
    row 0 in the cycle after ``starting`` (decode hands a search over), then one more each
    cycle. Constants when a search is one row.
    """
    if rows == 1:
        return Const(0), Const(1)
    row = Signal(range(rows), name=name)
    m.d.sync += row.eq(Mux(starting, 0, mutable("search_skips_a_row", row + 1, row + 2)))
    return row, row == rows - 1


def region_end(region) -> Value:
    """The block after ``region``, one bit wider than its base so that it does not wrap."""
    return region.base + region.blocks


def overlaps(a, b, *, a_end=None, b_end=None) -> Value:
    """Whether two regions share a block; an end held in a register (``a_end``, ``b_end``) saves its adder."""
    a_end = region_end(a) if a_end is None else a_end
    b_end = region_end(b) if b_end is None else b_end
    before = _before()
    return (a.blocks != 0) & (b.blocks != 0) & before(a.base, b_end) & before(b.base, a_end)


def overlaps_late(a, b, *, b_end) -> Value:
    """:func:`overlaps` for a late base and early block count: ``b.base < a.base + a.blocks``
    as ``b.base − a.blocks < a.base``, so the late base meets no adder.
    """
    before = _before()
    return (a.blocks != 0) & (b.blocks != 0) & before(a.base, b_end) & before(b.base - a.blocks, a.base)


def _before():
    return mutable("overlap_touching_ends", operator.lt, operator.le)


def retargeted_ranges(task, tag, retarget, reads_copy=None) -> tuple[Value, Value, Value]:
    """``task``'s reads and writes after this cycle's retarget, and whether one changed; an
    arriving task's reads are matched by ``reads_copy`` (its TLB slot), a held task's by compare.
    """
    reads_match = task.reads == retarget.retarget_tm if reads_copy is None else \
        (reads_copy & retarget.retarget_slot).any()
    reads = mutable("retarget_skips_readers", retarget.retarget & reads_match, 0)
    writes = retarget.retarget & (retarget.retarget_producer == tag)
    return (Mux(reads, retarget.retarget_home, task.reads), Mux(writes, retarget.retarget_home, task.writes),
            reads | writes)


def whole_task(task, *parts) -> list:
    """Assignments making the ``task_layout`` value ``task`` of ``parts`` whose fields make it up."""
    return [getattr(task, name).eq(getattr(part, name)) for part in parts for name, _ in part.shape()]
