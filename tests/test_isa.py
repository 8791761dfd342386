"""The instruction layout against Table I of the paper, bit by bit."""

import pytest
from amaranth.lib import data
from hypothesis import given, strategies as st

from hts.isa import (
    FIELDS, FIRST_RESERVED_ACCEL_ID, INSTRUCTION_BITS, RESERVED_ACCEL_ID, Cond, Control, Instruction,
    Opcode, Role, Word, opcode_of, operand_roles, to_signed,
)

# Table I, typed in from the paper (not derived from the code under test): [hi:lo].
TABLE_I = {
    "accel_id": (7, 0), "a": (23, 8), "b": (31, 24), "c": (47, 32), "d": (55, 48),
    "task_id": (59, 56), "pid": (63, 60), "k": (67, 64), "metadata": (127, 68),
}

words = st.builds(Word, **{name: st.integers(0, (1 << width) - 1) for name, _, width in FIELDS})


def test_instruction_is_128_bits():
    assert INSTRUCTION_BITS == 128


@pytest.mark.parametrize("name", TABLE_I)
def test_field_occupies_exactly_its_table_i_bits(name):
    hi, lo = TABLE_I[name]
    ones = Word(**{name: (1 << (hi - lo + 1)) - 1}).encode()
    assert [bit for bit in range(128) if ones >> bit & 1] == list(range(lo, hi + 1))


def test_task_id_f_sets_bits_56_to_59_only():
    assert Word(task_id=0xF).encode() == 0b1111 << 56


def test_fields_tile_the_word():
    covered = sorted(bit for _, offset, width in FIELDS for bit in range(offset, offset + width))
    assert covered == list(range(128))


@given(words)
def test_decode_inverts_encode(word):
    assert Word.decode(word.encode()) == word


@given(words)
def test_python_encoding_matches_amaranth_layout(word):
    """The RTL decodes with Instruction; the tools encode with Word: they must agree."""
    const = Instruction.const({name: getattr(word, name) for name, _, _ in FIELDS if name != "k"}
                              | {"k": {"task": {"indirect": word.k & 1, "reserved": word.k >> 1}}})
    assert const.as_value().value == word.encode()


@pytest.mark.parametrize("k", range(16))
def test_branch_control_bits(k):
    view = data.Const(Control, k).branch
    word = Word(k=k)
    assert word.cond == view.cond == Cond(k & 3)
    assert word.speculate == bool(view.speculate) == bool(k & 4)
    assert word.memory_branch == bool(view.memory) == bool(k & 8)
    assert word.indirect == bool(data.Const(Control, k).task.indirect) == bool(k & 1)


def test_reserved_ids_are_distinct_and_above_accelerator_ids():
    ids = list(RESERVED_ACCEL_ID.values())
    assert len(set(ids)) == len(ids) == len(Opcode) - 1
    assert min(ids) == FIRST_RESERVED_ACCEL_ID
    for op, accel_id in RESERVED_ACCEL_ID.items():
        assert opcode_of(accel_id) is op
    assert opcode_of(0) is opcode_of(FIRST_RESERVED_ACCEL_ID - 1) is Opcode.TASK
    assert opcode_of(0xFF) is None


def test_word_rejects_values_wider_than_their_field():
    with pytest.raises(ValueError, match="task_id"):
        Word(task_id=16)
    with pytest.raises(ValueError, match="128-bit"):
        Word.decode(1 << 128)


def test_offset_is_signed_16_bit():
    assert Word(c=0xFFFD).offset == -3
    assert Word(c=0x7FFF).offset == 0x7FFF
    assert to_signed(0x8000, 16) == -0x8000


def test_operand_roles_follow_k():
    assert operand_roles(Opcode.TASK, 0)["a"] == Role.BLOCK
    assert operand_roles(Opcode.TASK, 1)["c"] == Role.REGISTER
    assert operand_roles(Opcode.IF, 0b1000)["a"] == Role.BLOCK
    assert operand_roles(Opcode.IF, 0b0100)["a"] == Role.REGISTER
    assert operand_roles(Opcode.ADD, 0) == {"a": Role.REGISTER, "b": Role.REGISTER, "c": Role.REGISTER,
                                            "d": Role.RESERVED}
