"""The task queue RTL (program memory, fetch, queue) against ``hts.models.task_queue``."""

import dataclasses
import random

import pytest
from configs import config_named
from rtl_sim import run

from hts.hdl.interfaces import READ_AHEAD_FIELDS, fetch_pc_width
from hts.hdl.task_queue import TaskQueue
from hts.isa import FIELDS, INSTRUCTION_BITS, RESERVED_ACCEL_ID, Opcode, Role, Word, operand_roles, to_signed
from hts.models.task_queue import TaskQueue as Model

pytestmark = pytest.mark.rtl

ROUNDS = 4                 # programs loaded one after the other into the same block
CYCLES_PER_ROUND = 200
LONGEST_RANDOM_PROGRAM = 48   # keeps loading the default's 1024-word memory cheap


class LoadedProgram:
    """The two things the model reads from ``hts.assembler.Program``."""

    def __init__(self, words: list[Word]):
        self.decoded = words

    def __len__(self) -> int:
        return len(self.decoded)


def random_word(rng: random.Random, config) -> Word:
    """Random bits, but with the accelerator ID mostly a defined one and the A, B and C
    fields often small (a register, a short jump either way), so that every case of
    ``malformed`` is met and missed."""
    word = Word.decode(rng.getrandbits(INSTRUCTION_BITS))
    ids = [acc.id for acc in config.accelerators] + list(RESERVED_ACCEL_ID.values())
    width = {name: field_width for name, _, field_width in FIELDS}
    fields = {name: rng.choice([getattr(word, name), rng.randrange(-4, 2 * config.hts.gprs) % (1 << width[name])])
              for name in ("a", "b", "c")}
    return dataclasses.replace(word, accel_id=rng.choice([*ids, word.accel_id]), **fields)


def malformed(config, word: Word, pc: int) -> bool:
    """Whether ``word`` at ``pc`` cannot execute whatever the state: the reference of
    ``hts.hdl.task_queue.malformed``."""
    op = word.opcode
    if op is None or op is Opcode.TASK and word.accel_id not in {acc.id for acc in config.accelerators}:
        return True
    roles = operand_roles(op, word.k)
    if any(role is Role.REGISTER and getattr(word, field) >= config.hts.gprs for field, role in roles.items()):
        return True
    return roles["c"] is Role.OFFSET and pc + word.offset < 0


# Presets with a tiny program memory, so programs fill it and fetch hits its end: a ring
# that is not a power of two, and a one-word memory.
VARIANTS = {
    "small": ("default", {"hts.program_words": 6, "hts.queue_depth": 3}),
    "one_word": ("tiny", {"hts.program_words": 1, "hts.queue_depth": 2}),
}
CONFIGS = ["default", "tiny", *VARIANTS]


def program_length(rng: random.Random, program_words: int) -> int:
    if rng.random() < 0.2:
        return rng.choice([0, program_words])
    return rng.randint(0, min(program_words, LONGEST_RANDOM_PROGRAM))


def redirect_target(rng: random.Random, length: int, width: int) -> int:
    """Mostly inside the program; sometimes its end, or anywhere past it."""
    roll = rng.random()
    if roll < 0.7 and length:
        return rng.randrange(length)
    if roll < 0.85:
        return length
    return rng.randrange(length, 1 << width)


@pytest.mark.parametrize("preset", CONFIGS)
@pytest.mark.parametrize("seed", range(3))
def test_task_queue_matches_model(preset, seed):
    config = config_named(preset, VARIANTS)
    program_words = config.hts.program_words
    pc_width = fetch_pc_width(config)
    dut, rng = TaskQueue(config), random.Random(seed)

    async def load(ctx, words: list[Word], start_with_last: bool):
        """Write the words in random order with random pauses, then pulse start.

        The last write may share the cycle of ``start`` (the read port is transparent).
        Stale instructions fetched meanwhile under the old ``program_len`` are flushed.
        """
        order = rng.sample(range(len(words)), len(words))
        last = order.pop() if start_with_last and order else None
        for addr in order:
            while rng.random() < 0.3:
                await ctx.tick()
            ctx.set(dut.load_en, 1)
            ctx.set(dut.load_addr, addr)
            ctx.set(dut.load_data.as_value(), words[addr].encode())
            await ctx.tick()
            ctx.set(dut.load_en, 0)
        if last is not None:
            ctx.set(dut.load_en, 1)
            ctx.set(dut.load_addr, last)
            ctx.set(dut.load_data.as_value(), words[last].encode())
        ctx.set(dut.program_len, len(words))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.load_en, 0)

    async def bench(ctx):
        for round_ in range(ROUNDS):
            words = [random_word(rng, config) for _ in range(program_length(rng, program_words))]
            await load(ctx, words, start_with_last=rng.random() < 0.5)
            model = Model(LoadedProgram(words), config.hts.queue_depth)
            pop_rate, redirect_rate = rng.choice([0.2, 0.6, 0.95]), rng.choice([0.0, 0.05, 0.2])
            for cycle in range(CYCLES_PER_ROUND):
                where = f"seed {seed}, round {round_}, cycle {cycle}"
                head = model.head()
                assert ctx.get(dut.head_valid) == (head is not None), where
                if head is not None:
                    assert ctx.get(dut.head_pc) == head.pc, where
                    assert ctx.get(dut.head_word.as_value()) == head.word.encode(), where
                    target = head.pc + to_signed(head.word.c, 16)
                    assert ctx.get(dut.head_malformed) == malformed(config, head.word, head.pc), where
                    if target >= 0:
                        assert ctx.get(dut.head_target) == min(target, program_words), where
                # The next head, whose registers decode reads a cycle ahead.
                assert ctx.get(dut.behind_valid) == bool(model.entries), where
                if model.entries:
                    behind = model.entries[0].word
                    assert ctx.get(dut.behind_word.as_value()) == behind.encode(), where
                    assert list(ctx.get(dut.behind_registers)) == [
                        getattr(behind, field) % (1 << config.widths.gpr_index) for field in READ_AHEAD_FIELDS], where
                occupancy = model.occupancy
                assert ctx.get(dut.exhausted) == model.exhausted, where
                assert ctx.get(dut.fetch_pc) == model.fetch_pc, where

                pop = head is not None and rng.random() < pop_rate
                redirect = rng.random() < redirect_rate
                target = redirect_target(rng, len(words), pc_width)
                ctx.set(dut.pop, pop)
                ctx.set(dut.redirect, redirect)
                ctx.set(dut.redirect_pc, target)
                if pop:
                    model.pop()
                if redirect:
                    model.redirect(target)
                # What is fetched is (fetch_pc, word): the pc was compared above, the word
                # is compared when the entry reaches the head.
                model.advance()
                assert ctx.get(dut.fetched) == model.fetch(occupancy), where
                await ctx.tick()
            ctx.set(dut.pop, 0)
            ctx.set(dut.redirect, 0)

    run(dut, bench)


def test_pop_from_empty_queue_is_caught(tiny_config):
    dut = TaskQueue(tiny_config)

    async def bench(ctx):
        ctx.set(dut.pop, 1)
        await ctx.tick()

    with pytest.raises(AssertionError, match="empty task queue"):
        run(dut, bench)
