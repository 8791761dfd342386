"""Hardware idioms the RTL blocks share, each written once and tested once
(tests/hdl/test_primitives.py).

A set of bits is a ``Value`` or a list of 1-bit values. An age matrix ``older`` has one
row per slot: ``older[i]`` bit ``j`` is set when slot ``j`` is older than slot ``i``
(never bit ``i`` itself), so row ``i`` holds the slots older than ``i`` and column ``i``
the slots younger. Only the bits between valid slots mean anything, so a pick ANDs a
row with its chosen slots, which are valid, before using it.
"""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value

__all__ = ["wire", "select", "encode", "lowest_set", "index_set", "popcount", "fewer_than", "oldest", "youngest",
           "update_age_matrix"]


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
