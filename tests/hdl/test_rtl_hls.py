"""The ap_ctrl_hs shell with the vector-add kernel, in an accelerator shell, on a simulated memory.

Its memory must end as ``hts.models.dsp.vector_add`` leaves it (through
``AcceleratorFunctions.run``'s padding and truncation), its run must take
``VectorAddCoreLatency`` cycles with its write-back the last ``transfer_cycles`` of them
(the model's retarget rule), a retarget before write-back must move its output, and an
abort must leave it idle and ready for the next task even with reads in flight. As the
dispatch arbiter does, the bench grants the task's tag and mask, gives the task and its
metadata the cycle after, when it starts, and junk on the shell's ``delivered`` and
``record`` ports in every other cycle.
"""

import random

import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator
from configs import preset
from rtl_sim import region_value, run

from hts.base.config import with_values
from hts.hdl.accelerator import AcceleratorShell
from hts.hdl.hls import requantise, vector_add_core
from hts.hdl.interfaces import delivered_task_layout
from hts.isa import Word
from hts.models import dsp
from hts.models.accelerator import AcceleratorFunctions
from hts.models.dispatch import START_DELAY
from hts.models.hts import transfer_cycles
from hts.models.memory import Memory, read_beat, write_beat
from hts.models.timing import VectorAddCoreLatency

pytestmark = pytest.mark.rtl


def small(block_words: int, per_beat: int):
    """tiny with a small memory, so that random regions overlap and the memory is cheap."""
    return with_values(preset("tiny"), {"memory.block_words": block_words, "memory.blocks": 48,
                                         "hts.copyback_words_per_cycle": per_beat})


CONFIGS = {"64x4": small(64, 4), "8x2": small(8, 2), "4x1": small(4, 1)}
VECTOR_ADD = next(index for index, acc in enumerate(CONFIGS["64x4"].accelerators) if acc.name == "vector_add")


class MemoryService:
    """A memory behind the DMA port: ``ready`` high with probability ``ready``, read answers
    ``latency`` cycles after acceptance, in order. Counts cycles (``now``). It also drives
    the shell's ``delivered`` and ``record``: ``given`` (port to value) in the cycle after
    it is set, junk otherwise."""

    def __init__(self, config, rng: random.Random, latency: int = 1, ready: float = 1.0):
        self.config = config
        self.ports, self.given = (), {}
        self.memory = Memory(config)
        self.memory.words[:] = [rng.choice([rng.randrange(-1 << 31, 1 << 31), rng.randrange(-99, 100)])
                                for _ in range(len(self.memory.words))]
        self.per_beat = config.hts.copyback_words_per_cycle
        self.rng, self.latency, self.ready = rng, latency, ready
        self.answers: list[tuple[int, int]] = []       # (cycle due, word address)
        self.now = 0

    async def cycle(self, ctx, dma):
        """Serve the port for this cycle, then let the clock tick."""
        words = self.memory.words
        due = self.answers and self.answers[0][0] == self.now
        ctx.set(dma.rvalid, bool(due))
        if due:
            ctx.set(dma.rdata, read_beat(words, self.answers.pop(0)[1], self.per_beat))
        ready = self.rng.random() < self.ready
        ctx.set(dma.ready, ready)
        if ready and ctx.get(dma.read):
            self.answers.append((self.now + self.latency, ctx.get(dma.addr)))
        if ready and ctx.get(dma.write):
            write_beat(words, ctx.get(dma.addr), self.per_beat, ctx.get(dma.wdata))
        await ctx.tick()
        self.now += 1
        for port in self.ports:
            ctx.set(port.as_value(), self.rng.getrandbits(len(port.as_value())))
            if id(port) in self.given:
                ctx.set(port, self.given[id(port)])
        self.given = {}


def random_task(rng: random.Random, config) -> dict:
    blocks = config.memory.blocks
    length = rng.choice([0, 1, 2, 3, rng.randrange(1, 200), rng.randrange(1 << dsp.LEN.width)])
    scale = rng.choice([0, 1, -1, 31, -32, rng.randrange(-32, 32)])
    region = lambda: region_value((rng.randrange(blocks - 8), rng.choice([0, 1, 2, 3, rng.randrange(9)])))
    return {"accel_class": VECTOR_ADD, "reads": region(), "writes": region(),
            "metadata": dsp.LEN.encode(length) | dsp.SCALE.encode(scale)}


def expected_memory(config, memory: Memory, task: dict) -> Memory:
    """``memory`` after the model's run of ``task`` (``AcceleratorFunctions.run``)."""
    expected = memory.copy()
    accel = config.accelerators[VECTOR_ADD]
    AcceleratorFunctions(config).run(expected, accel.id, task["reads"]["base"], task["reads"]["blocks"],
                                     task["writes"]["base"], task["writes"]["blocks"], task["metadata"])
    return expected


def model_cycles(config, task: dict, latency: int) -> int:
    word = Word(b=task["reads"]["blocks"], d=task["writes"]["blocks"], metadata=task["metadata"])
    timing = VectorAddCoreLatency(config.memory.block_words, config.hts.copyback_words_per_cycle, latency)
    return timing.cycles(config.accelerators[VECTOR_ADD], word)


async def idle(ctx, shell):
    for port, value in (("power_enable", 1), ("granted", 0), ("abort", 0), ("confirm", 0)):
        ctx.set(getattr(shell, port), value)
    ctx.set(shell.retarget, {"valid": 0, "base": 0})
    ctx.set(shell.task.valid, 0)


async def start(ctx, shell, service, task):
    """Grant ``task`` (the task and its metadata follow the cycle after); the service's
    clock stands at the cycle after the grant, the task's start."""
    ctx.set(shell.task.valid, 1)
    ctx.set(shell.task.payload, {"tag": 0, "mask": 0})
    assert ctx.get(shell.task.ready), "the shell is not ready for a task"
    delivered = {name: task.get(name, 0) for name in delivered_task_layout(service.config).members}
    service.ports = (shell.delivered, shell.record)
    service.given = {id(shell.delivered): delivered, id(shell.record): {"task_id": 0, "metadata": task["metadata"]}}
    await service.cycle(ctx, shell.dma)
    ctx.set(shell.task.valid, 0)


async def finish(ctx, shell, service, limit: int = 20000) -> tuple[int, int | None]:
    """Run until ``done``, then grant: (cycle of done, first cycle of ``writeback_started``)."""
    writeback_from = None
    while not ctx.get(shell.done):
        if writeback_from is None and ctx.get(shell.writeback_started):
            writeback_from = service.now
        assert service.now < limit, "the core never finished"
        await service.cycle(ctx, shell.dma)
    done_at = service.now
    ctx.set(shell.granted, 1)
    await service.cycle(ctx, shell.dma)
    ctx.set(shell.granted, 0)
    assert not ctx.get(shell.busy)
    return done_at, writeback_from


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("latency", [1, 3])
def test_random_tasks_compute_vector_add_in_the_modelled_cycles(name, latency):
    config, rng = CONFIGS[name], random.Random(f"{name}/{latency}")
    shell = AcceleratorShell(config, vector_add_core(config))
    service = MemoryService(config, rng, latency)
    tasks = [random_task(rng, config) for _ in range(20)]

    async def bench(ctx):
        await idle(ctx, shell)
        for index, task in enumerate(tasks):
            where = f"task {index} {task}"
            expected = expected_memory(config, service.memory, task)
            started = service.now
            await start(ctx, shell, service, task)
            done_at, writeback_from = await finish(ctx, shell, service)
            assert done_at - started == START_DELAY + model_cycles(config, task, latency), where
            if task["writes"]["blocks"]:
                assert done_at - writeback_from == transfer_cycles(config, task["writes"]["blocks"]), where
            assert (service.memory.words == expected.words).all(), where

    run(shell, bench)


@pytest.mark.parametrize("name", ["64x4", "8x2"])
def test_a_slow_memory_changes_the_timing_not_the_data(name):
    config, rng = CONFIGS[name], random.Random(name)
    shell = AcceleratorShell(config, vector_add_core(config))
    service = MemoryService(config, rng, latency=2, ready=0.4)
    tasks = [random_task(rng, config) for _ in range(6)]

    async def bench(ctx):
        await idle(ctx, shell)
        for task in tasks:
            expected = expected_memory(config, service.memory, task)
            await start(ctx, shell, service, task)
            await finish(ctx, shell, service)
            assert (service.memory.words == expected.words).all(), task

    run(shell, bench)


def test_a_retarget_before_write_back_moves_the_output():
    config, rng = CONFIGS["8x2"], random.Random(3)
    shell = AcceleratorShell(config, vector_add_core(config))
    service = MemoryService(config, rng, latency=1)
    task = {"accel_class": VECTOR_ADD, "reads": region_value((2, 4)), "writes": region_value((10, 2)),
            "metadata": dsp.LEN.encode(16) | dsp.SCALE.encode(-1)}
    retargeted = {**task, "writes": region_value((30, 2))}

    async def bench(ctx):
        await idle(ctx, shell)
        expected = expected_memory(config, service.memory, retargeted)
        await start(ctx, shell, service, task)
        for _ in range(5):      # reading: the output base is still free
            await service.cycle(ctx, shell.dma)
        ctx.set(shell.retarget, {"valid": 1, "base": 30})
        assert not ctx.get(shell.retarget_refused) and not ctx.get(shell.writeback_started)
        await service.cycle(ctx, shell.dma)
        ctx.set(shell.retarget, {"valid": 0, "base": 0})
        await finish(ctx, shell, service)
        # The old output region kept its words: the kernel, told block 10, wrote block 30.
        assert (service.memory.words == expected.words).all()

    run(shell, bench)


@pytest.mark.parametrize("abort_after", [0, 1, 4, 9, 14, 20, 24])
def test_an_abort_leaves_the_core_idle_and_ready_for_the_next_task(abort_after):
    """Aborted in its start cycle (``abort_after`` 0), while reading (answers in
    flight, three cycles each; its run takes 30 cycles, the last 8 writing) or while
    writing: the next task, started the cycle after, computes its result in the
    modelled cycles."""
    config, rng = CONFIGS["8x2"], random.Random(abort_after)
    shell = AcceleratorShell(config, vector_add_core(config))
    service = MemoryService(config, rng, latency=3)
    aborted = {"accel_class": VECTOR_ADD, "reads": region_value((0, 4)), "writes": region_value((40, 2)),
               "metadata": dsp.LEN.encode(16)}
    task = {"accel_class": VECTOR_ADD, "reads": region_value((8, 3)), "writes": region_value((20, 2)),
            "metadata": dsp.LEN.encode(12) | dsp.SCALE.encode(2)}
    untouched = slice(0, 40 * config.memory.block_words)     # all but the aborted task's output

    async def bench(ctx):
        await idle(ctx, shell)
        await start(ctx, shell, service, aborted)
        for _ in range(abort_after):
            await service.cycle(ctx, shell.dma)
        assert ctx.get(shell.busy) and not ctx.get(shell.done)
        ctx.set(shell.abort, 1)
        await service.cycle(ctx, shell.dma)
        ctx.set(shell.abort, 0)
        assert not ctx.get(shell.busy) and ctx.get(shell.task.ready)
        expected = expected_memory(config, service.memory, task)
        started = service.now
        await start(ctx, shell, service, task)
        done_at, _ = await finish(ctx, shell, service)
        assert done_at - started == START_DELAY + model_cycles(config, task, 3)
        assert (service.memory.words[untouched] == expected.words[untouched]).all()

    run(shell, bench)


def test_requantise_is_the_model_s_on_the_edges():
    """The rounding and saturation in isolation, on sums and shifts at their limits."""
    total, scale, out = Signal(signed(33)), Signal(signed(dsp.SCALE.width)), Signal(signed(32))
    m = Module()
    m.d.comb += out.eq(requantise(total, scale))
    sums = [0, 1, -1, 2, -2, 3, -3, (1 << 31) - 1, -1 << 31, (1 << 32) - 2, -1 << 32, 12345, -12345, 1 << 30]
    shifts = range(-32, 32)

    async def bench(ctx):
        for value in sums:
            for shift in shifts:
                ctx.set(total, value)
                ctx.set(scale, shift)
                want = int(dsp._requantise(np.array([value], np.int64), shift)[0])
                assert ctx.get(out) == want, (value, shift)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
