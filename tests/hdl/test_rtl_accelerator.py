"""The accelerator shell with a latency core, against the timing of ``models/hts.py``.

The model grants a task at *t* (the shell takes its tag and mask); it starts at
*t + 1*, when the rest of the task and its record arrive, and finishes (takes its CDB
ticket) at *t + 1 + latency*. It is retargetable while it waits in a station (its
grant's cycle included), in its start cycle, and while running with ``finishes - t >
transfer_cycles(output blocks)`` one cycle before (the copy-back engine's test is
registered); confirmations and retargets land at the end of the cycle, on running
tasks too, and the core sees a retarget in its own cycle. A retarget in the grant's
cycle reaches the task through its delivered regions, as the tracker's entry takes it.
Two shells of classes with different latencies run side by side on random traffic.
"""

import functools
import random

import pytest
from amaranth.hdl import Module, Shape
from configs import latencies, preset
from rtl_sim import region_value, run

from hts.base.config import with_values
from hts.hdl.accelerator import AcceleratorShell, LatencyCore
from hts.hdl.interfaces import (delivered_task_layout, granted_task_layout, held_task_layout, region_layout,
                                task_record_layout)
from hts.models.copy_back import transfer_cycles

pytestmark = pytest.mark.rtl


def short_latencies(config):
    """Latencies of 1 and 4 cycles and one word a beat: write-back as long as the run, or longer."""
    return with_values(config, {**latencies(config, (1, 4)), "memory.block_words": 2,
                                "hts.copyback_words_per_cycle": 2})


SYSTEMS = {
    # (preset, config transform, the two classes under test, cycles)
    "default": ("default", lambda config: config, ("vector_dot", "vector_add"), 1500),
    "tiny": ("tiny", lambda config: config, ("vector_max", "vector_dot"), 800),
    "short": ("default", short_latencies, ("real_fir", "complex_fir"), 600),
}


class ShellModel:
    """What one shell must show: the held task, when it was accepted, and its timing."""

    def __init__(self, latency: int, transfer_cycles):
        self.latency, self.transfer_cycles = latency, transfer_cycles
        self.task = None               # dict in delivered_task_layout form
        self.start = None              # the cycle after the grant
        self.finishes = None
        self.grant_at = None
        self.abort_at = None           # a squash hits it then (running, or waiting for its grant)

    def not_writing(self, t: int) -> bool:
        return self.task is not None and (
            t <= self.start or self.finishes - t > self.transfer_cycles(self.task["writes"]["blocks"]))

    def retargetable(self, t: int, accepting: bool) -> bool:
        return accepting or self.not_writing(t - 1)

    def writeback_started(self, t: int) -> bool:
        return self.task is not None and not self.not_writing(t)


def random_task(rng: random.Random, config, class_index: int) -> dict:
    # Output sizes whose write-back is shorter than, as long as, and longer than the latency.
    region = lambda: region_value((rng.randrange(1 << config.widths.phys_block), rng.choice([0, 1, 2, 3, 4, 8, 40])))
    task = {"tag": rng.randrange(config.hts.tracker_entries), "pid": rng.randrange(config.hts.processes),
            "pc": rng.randrange(config.hts.program_words), "accel_class": class_index, "reads": region(),
            "writes": region(), "mask": rng.getrandbits(config.hts.spec_ids), "ready": 1}
    assert set(task) == set(delivered_task_layout(config).members)
    return task


def random_record(rng: random.Random, config) -> dict:
    fields = task_record_layout(config).members
    return {name: rng.getrandbits(Shape.cast(shape).width) for name, shape in fields.items()}


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("seed", range(2))
def test_shell_timing_matches_model(system, seed):
    name, transform, names, cycles = SYSTEMS[system]
    config = transform(preset(name))
    classes = [next(i for i, acc in enumerate(config.accelerators) if acc.name == name) for name in names]
    latencies = [config.accelerators[c].latency for c in classes]
    assert latencies[0] != latencies[1], "the test needs two different latencies"
    cores = [LatencyCore(config, c) for c in classes]
    shells = [AcceleratorShell(config, core) for core in cores]
    refs = [ShellModel(latency, functools.partial(transfer_cycles, config)) for latency in latencies]
    held, granted_layout = held_task_layout(config), granted_task_layout(config)
    delivered_layout = delivered_task_layout(config)
    top = Module()
    for index, shell in enumerate(shells):
        top.submodules[f"shell{index}"] = shell
    rng = random.Random(seed)
    seen = {"accepted": 0, "granted": 0, "aborted": 0, "aborted_at_start": 0, "retargeted": 0, "refused": 0,
            "gated": 0, "retargeted_at_acceptance": 0, "retargeted_writing": 0}

    async def bench(ctx):
        offers = [None, None]
        powered = [True, True]
        for t in range(cycles):
            for index, (shell, ref, class_index) in enumerate(zip(shells, refs, classes)):
                where = f"seed {seed}, cycle {t}, class {config.accelerators[class_index].name}"
                # The dispatcher holds an offer until it is taken, with random pauses between offers.
                if offers[index] is None and rng.random() < 0.3:
                    offers[index] = random_task(rng, config, class_index)
                if rng.random() < 0.05:
                    powered[index] = not powered[index]
                done = ref.task is not None and t >= ref.finishes
                if done and ref.grant_at is None:
                    ref.grant_at = t + rng.choice([0, 0, 1, 2, 7])
                granted = done and t >= ref.grant_at
                aborted = ref.task is not None and not granted and t == ref.abort_at
                retarget = rng.random() < 0.2
                retarget_base = rng.randrange(1 << config.widths.phys_block)
                confirm = rng.getrandbits(config.hts.spec_ids) if rng.random() < 0.1 else 0
                ctx.set(shell.task.valid, offers[index] is not None)
                if offers[index] is not None:
                    ctx.set(shell.task.payload, {name: offers[index][name] for name, _ in granted_layout})
                # The task arrives whole in its start cycle; anything else is noise the shell ignores.
                starting = ref.task is not None and t == ref.start
                ctx.set(shell.delivered, ref.task if starting else random_task(rng, config, class_index))
                ctx.set(shell.power_enable, powered[index])
                ctx.set(shell.granted, granted)
                ctx.set(shell.abort, aborted)
                ctx.set(shell.retarget, {"valid": retarget, "base": retarget_base})
                ctx.set(shell.confirm, confirm)
                record = random_record(rng, config)
                ctx.set(shell.record, record)

                ready = ref.task is None and powered[index]
                accepting = ready and offers[index] is not None
                refused = retarget and not ref.retargetable(t, accepting)
                assert ctx.get(shell.task.ready) == ready, where
                assert ctx.get(shell.busy) == (ref.task is not None), where
                assert ctx.get(shell.done) == done, f"{where}: done should rise at {ref.finishes}"
                assert ctx.get(shell.writeback_started) == ref.writeback_started(t), where
                assert ctx.get(shell.retarget_refused) == refused, where
                assert not ctx.get(shell.dma.read) and not ctx.get(shell.dma.write), where
                assert ctx.get(cores[index].record) == task_record_layout(config).const(record), where
                assert ctx.get(cores[index].start) == (starting and not aborted), where
                if starting:
                    assert ctx.get(cores[index].task) == delivered_layout.const(ref.task), where
                    seen["aborted_at_start"] += aborted
                if ref.task is not None:
                    assert ctx.get(shell.current) == held.const({name: ref.task[name] for name, _ in held}), where
                    # The core sees the output region it writes: the held task's, with a
                    # retarget of the cycle applied.
                    writes = ref.task["writes"]
                    if retarget and not refused:
                        writes = {**writes, "base": retarget_base}
                        seen["retargeted_writing"] += ref.writeback_started(t)
                    assert ctx.get(cores[index].writes) == region_layout(config).const(writes), where
                    assert ctx.get(shell.writes) == region_layout(config).const(writes), where

                # What lands at the clock edge.
                seen["gated"] += ref.task is None and not powered[index] and offers[index] is not None
                if accepting:
                    ref.task, ref.start, ref.grant_at = offers[index], t + 1, None
                    ref.finishes = ref.start + ref.latency
                    # Some in the start cycle, when the core must not start.
                    ref.abort_at = ref.start + rng.choice([0, rng.randrange(ref.latency + 8)]) if rng.random() < 0.2 else None
                    seen["retargeted_at_acceptance"] += retarget
                    offers[index] = None
                    seen["accepted"] += 1
                elif granted or aborted:
                    ref.task = None
                    seen["granted" if granted else "aborted"] += 1
                if ref.task is not None:
                    ref.task = {**ref.task, "mask": ref.task["mask"] & ~confirm}
                    if retarget and not refused:
                        ref.task = {**ref.task, "writes": {**ref.task["writes"], "base": retarget_base}}
                seen["retargeted"] += retarget and not refused and ref.task is not None
                seen["refused"] += refused and ref.task is not None
            await ctx.tick()
        assert all(count > 0 for count in seen.values()), f"seed {seed}: stimulus missed a case: {seen}"

    run(top, bench)
