"""``hts.hdl.primitives`` in the Amaranth simulator against Python references.

Combinational idioms are driven with every input of a few small widths (every choice of
slots, for the age-matrix picks, over random valid age matrices); the age-matrix update
with random arrivals, the held value and the record RAM with random writes and reads, cycle by
cycle.
"""

import itertools
import random
from types import SimpleNamespace

import pytest
from amaranth.hdl import Cat, ClockDomain, Module, Signal, Value
from amaranth.lib import data
from amaranth.sim import Simulator
from rtl_sim import run, seeds

from hts.hdl.primitives import (encode, fewer_than, held, index_set, lowest_ones, lowest_set, mux_tree, oldest,
                                overlaps, overlaps_late, popcount, record_ram, select, update_age_matrix, wire,
                                youngest)

WIDTHS = range(1, 6)


def evaluate(output, inputs: list, cases, m: Module | None = None) -> list[int]:
    """The value ``output`` (a value of the signals ``inputs``, and of the module ``m``'s
    signals if given) settles to in each case, a tuple of input values."""
    if m is None:
        m = Module()
    result = Signal(Value.cast(output).shape())
    m.d.comb += result.eq(output)
    results = []

    async def bench(ctx):
        for case in cases:
            for signal, value in zip(inputs, case):
                ctx.set(signal, value)
            results.append(ctx.get(result))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return results


def bits_of(value: int, width: int) -> list[int]:
    return [value >> bit & 1 for bit in range(width)]


def or_all(values) -> int:
    result = 0
    for value in values:
        result |= value
    return result


def test_wire_is_a_named_signal_of_the_value():
    m = Module()
    a, b = Signal(3), Signal(4)
    named = wire(m, a + b, "total")
    assert named.name == "total" and named.shape() == (a + b).shape()
    cases = list(itertools.product(range(8), range(16)))
    assert evaluate(named, [a, b], cases, m) == [x + y for x, y in cases]


@pytest.mark.parametrize("width", WIDTHS)
def test_select_is_an_and_or_of_the_chosen_values(width):
    """One bit set gives its value, none gives 0; as an AND-OR, several give the OR of theirs."""
    rng = random.Random(width)
    one_hot = Signal(width)
    values = [Signal(4, name=f"value{index}") for index in range(width)]
    cases = [(bits, *(rng.randrange(16) for _ in values)) for bits in range(1 << width) for _ in range(3)]
    expected = [or_all(value for bit, value in zip(bits_of(bits, width), case) if bit) for bits, *case in cases]
    assert evaluate(select(one_hot, values), [one_hot, *values], cases) == expected


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8])
def test_mux_tree_reads_the_indexed_entry_and_zero_past_the_last(count):
    """Every index of the signal's width, entries of a plain and of a struct layout."""
    rng = random.Random(count)
    index = Signal(range(count + 1) if count & (count - 1) == 0 else range(count))
    plain_bits, record_bits = Signal(4 * count), Signal(5 * count)
    plain = data.ArrayLayout(4, count)(plain_bits)
    records = data.ArrayLayout(data.StructLayout({"low": 2, "high": 3}), count)(record_bits)
    cases = [(position, rng.randrange(1 << (4 * count)), rng.randrange(1 << (5 * count)))
             for position in range(1 << len(index)) for _ in range(3)]

    def entry(value, width, position):
        return value >> (width * position) & ((1 << width) - 1) if position < count else 0

    read_plain = evaluate(mux_tree(plain, index), [index, plain_bits, record_bits], cases)
    read_high = evaluate(mux_tree(records, index).high, [index, plain_bits, record_bits], cases)
    assert read_plain == [entry(value, 4, position) for position, value, _ in cases]
    assert read_high == [entry(value, 5, position) >> 2 for position, _, value in cases]


@pytest.mark.parametrize("width", WIDTHS)
def test_encode_gives_the_index_of_the_set_bit(width):
    one_hot = Signal(width)
    cases = [(bits,) for bits in range(1 << width)]
    results = evaluate(encode(one_hot), [one_hot], cases)
    for (bits,), result in zip(cases, results):
        # As an AND-OR, several bits set give the OR of their indices.
        assert result == or_all(index for index, bit in enumerate(bits_of(bits, width)) if bit), bin(bits)
    assert [results[1 << index] for index in range(width)] == list(range(width))


@pytest.mark.parametrize("width", WIDTHS)
def test_lowest_set_gives_the_lowest_index_and_0_for_none(width):
    bits = Signal(width)
    cases = [(value,) for value in range(1 << width)]
    expected = [next((index for index in range(width) if value >> index & 1), 0) for value, in cases]
    assert evaluate(lowest_set(bits), [bits], cases) == expected


@pytest.mark.parametrize("width", WIDTHS)
def test_lowest_ones_keeps_the_lowest_set_bits(width):
    bits = Signal(width)
    cases = [(value,) for value in range(1 << width)]
    for how_many in range(1, width + 2):
        expected = [sum(1 << index for index in [i for i in range(width) if value >> i & 1][:how_many])
                    for value, in cases]
        result = lowest_ones(bits, how_many)
        assert len(result) == width
        assert evaluate(result, [bits], cases) == expected, f"how_many {how_many}"


@pytest.mark.parametrize("width", [1, 3, 4])
def test_index_set_sets_the_bit_of_each_chosen_index(width):
    """Three indices of two bits: some land past ``width`` (3), where no bit is left for them."""
    chosen = Signal(3)
    indices = [Signal(2, name=f"index{k}") for k in range(3)]
    cases = list(itertools.product(range(8), *(range(4) for _ in indices)))
    expected = [or_all(1 << index for bit, index in zip(bits_of(bits, 3), case) if bit) & ((1 << width) - 1)
                for bits, *case in cases]
    result = index_set(chosen, indices, width)
    assert len(result) == width
    assert evaluate(result, [chosen, *indices], cases) == expected


@pytest.mark.parametrize("width", WIDTHS)
def test_popcount_is_the_number_of_set_bits(width):
    bits = Signal(width)
    cases = [(value,) for value in range(1 << width)]
    assert evaluate(popcount(bits), [bits], cases) == [value.bit_count() for value, in cases]
    assert popcount([]) == 0


@pytest.mark.parametrize("width", WIDTHS)
def test_fewer_than_compares_the_number_of_set_bits(width):
    bits = Signal(width)
    cases = [(value,) for value in range(1 << width)]
    for limit in range(1, width + 2):
        expected = [int(value.bit_count() < limit) for value, in cases]
        assert evaluate(fewer_than(bits, limit), [bits], cases) == expected, f"limit {limit}"


def test_overlaps_and_overlaps_late_say_whether_two_regions_share_a_block():
    """Every pair of regions of 3-bit bases and 2-bit block counts (ends past the base
    width included), against the blocks they cover."""
    a, b = (SimpleNamespace(base=Signal(3), blocks=Signal(2)) for _ in range(2))
    cases = list(itertools.product(range(8), range(4), range(8), range(4)))
    expected = [int(bool(set(range(base_a, base_a + blocks_a)) & set(range(base_b, base_b + blocks_b))))
                for base_a, blocks_a, base_b, blocks_b in cases]
    inputs = [a.base, a.blocks, b.base, b.blocks]
    assert evaluate(overlaps(a, b), inputs, cases) == expected
    assert evaluate(overlaps_late(a, b, b_end=b.base + b.blocks), inputs, cases) == expected


def random_age_matrix(rng: random.Random, width: int) -> tuple[int, list[int], list[int]]:
    """A set of valid slots, their order of arrival (oldest first), and the matrix rows:
    right between valid slots, random elsewhere (stale bits the users must mask)."""
    valid = [slot for slot in range(width) if rng.random() < 0.8]
    order = rng.sample(valid, len(valid))
    rows = []
    for slot in range(width):
        row = rng.randrange(1 << width)
        if slot in valid:
            for other in valid:
                is_older = order.index(other) < order.index(slot)
                row = row & ~(1 << other) | is_older << other
        rows.append(row)
    return sum(1 << slot for slot in valid), order, rows


def age_picks(pick, width: int, reference):
    """Every choice among the valid slots of random age matrices: ``pick``'s answer and
    ``reference(chosen slots, oldest first)``'s, as two lists of bit masks."""
    chosen = Signal(width)
    older = [Signal(width, name=f"older{slot}") for slot in range(width)]
    cases, expected = [], []
    for rng in seeds(8):
        valid, order, rows = random_age_matrix(rng, width)
        for subset in range(1 << width):
            if subset & ~valid == 0:
                cases.append((subset, *rows))
                expected.append(sum(1 << slot for slot in reference([slot for slot in order if subset >> slot & 1])))
    return evaluate(Cat(*pick(chosen, older)), [chosen, *older], cases), expected


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("how_many", [1, 2, 3])
def test_oldest_picks_the_first_arrivals_among_the_chosen(width, how_many):
    results, expected = age_picks(lambda chosen, older: oldest(chosen, older, how_many), width,
                                  lambda in_order: in_order[:how_many])
    assert results == expected


@pytest.mark.parametrize("width", WIDTHS)
def test_youngest_picks_the_last_arrival_among_the_chosen(width):
    results, expected = age_picks(youngest, width, lambda in_order: in_order[-1:])
    assert results == expected


@pytest.mark.parametrize("width", WIDTHS)
def test_update_age_matrix_writes_arriving_rows_and_clears_their_columns(width):
    m = Module()
    older = Signal(data.ArrayLayout(width, width))
    arriving = Signal(width)
    rows = [Signal(width, name=f"row{slot}") for slot in range(width)]
    update_age_matrix(m, older, arriving, rows)
    rng = random.Random(width)

    async def bench(ctx):
        for cycle in range(200):
            before = [ctx.get(older[slot]) for slot in range(width)]
            new_rows = [rng.randrange(1 << width) for _ in rows]
            arrivals = rng.randrange(1 << width)
            ctx.set(arriving, arrivals)
            for row, value in zip(rows, new_rows):
                ctx.set(row, value)
            await ctx.tick()
            after = [ctx.get(older[slot]) for slot in range(width)]
            expected = [new_rows[slot] if arrivals >> slot & 1 else before[slot] & ~arrivals
                        for slot in range(width)]
            assert after == expected, f"cycle {cycle}"

    run(m, bench)



def test_held_is_the_value_while_given_then_the_last_given_value():
    m = Module()
    given, value = Signal(), Signal(8)
    out = held(m, given, value, "kept")
    result = Signal(8)
    m.d.comb += result.eq(out)
    rng = random.Random(1)
    last = None

    async def bench(ctx):
        nonlocal last
        for cycle in range(200):
            now, word = rng.random() < 0.3, rng.getrandbits(8)
            ctx.set(given, now)
            ctx.set(value, word)
            if now:
                assert ctx.get(result) == word, f"cycle {cycle}"
                last = word
            elif last is not None:
                assert ctx.get(result) == last, f"cycle {cycle}"
            await ctx.tick()
        assert last is not None

    m.domains.sync = ClockDomain()
    run(m, bench)


@pytest.mark.parametrize("depth", [1, 2, 5, 16])
def test_record_ram_reads_what_was_last_written_at_each_address_in_the_same_cycle(depth):
    m = Module()
    address_bits = max(1, (depth - 1).bit_length())
    write_addr, write_en, write_data = Signal(address_bits), Signal(), Signal(data.StructLayout({"a": 3, "b": 9}))
    read_addrs = [Signal(address_bits, name=f"read{port}") for port in range(2)]
    records = record_ram(m, "ram", write_data.shape(), depth, write_addr, write_en, write_data, read_addrs)
    assert len(records) == len(read_addrs)
    rng = random.Random(depth)
    contents: dict[int, int] = {}

    async def bench(ctx):
        for cycle in range(300):
            written = rng.randrange(depth)
            value = {"a": rng.getrandbits(3), "b": rng.getrandbits(9)}
            enable = rng.random() < 0.6
            ctx.set(write_addr, written)
            ctx.set(write_en, enable)
            ctx.set(write_data, value)
            for port, address in enumerate(read_addrs):
                # Reads of the address written now are checked too: they give the old record.
                read = written if port == 0 else rng.randrange(depth)
                ctx.set(address, read)
                if read in contents:
                    got = ctx.get(records[port])
                    assert {"a": got.a, "b": got.b} == contents[read], f"cycle {cycle}, port {port}"
            await ctx.tick()
            if enable:
                contents[written] = value
        assert len(contents) == depth

    m.domains.sync = ClockDomain()
    run(m, bench)
