"""The dispatch arbiter RTL against the model's ``Dispatch.dispatch``, cycle by cycle.

The model's own ``Dispatch.dispatch`` runs on ready lists and an ASR of the cycle model,
filled with random tasks, some of them squashed while listed. The arbiter sees what the
RTL ready lists, ASR and tracker would show it: each class's list head when live (its
queued record; a dead head offers nothing, and the model drops it), each class's lowest
free instance, and the tracker entries holding the rest of every task in flight (regions,
pid and pc as registers, the rest answering the arbiter's record reads by tag; junk in the
entries of free tags, as the tracker leaves them). A grant must give its shell the offer's
tag and mask in its cycle, and the cycle after, read by the tag registered in its slot,
the whole task (queued record and its tag's entry) with its task ID and metadata to its
shell, and the task to the trace.
"""

import random
from collections import Counter

import pytest
from amaranth.hdl import ClockDomain, Module
from configs import preset
from queue_model import (DispatchStage, TaskSource, delivered_record_fields, delivered_task_fields, task_record,
                         task_record_value, tracker_register_record)
from rtl_sim import run

from hts.base.config import with_values
from hts.hdl.dispatch import DispatchArbiter
from hts.hdl.interfaces import granted_task_layout, instance_numbering

pytestmark = pytest.mark.rtl

CYCLES = 200
FINISH_RATES = (0.02, 0.5, 0.05, 0.2)       # chance a running task completes in a cycle, by phase
SYSTEMS = ["default", "tiny", "large", "default-width2", "default-width3", "tiny-width2"]


def system_config(system: str):
    """A preset, optionally with another dispatch width (``default-width2``)."""
    name, _, width = system.partition("-width")
    return with_values(preset(name), {"hts.dispatch_width": int(width)}) if width else preset(name)


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("seed", range(2))
def test_dispatch_matches_model(system, seed):
    config = system_config(system)
    hts, classes = config.hts, range(len(config.accelerators))
    numbering = instance_numbering(config)
    dut, rng, model = DispatchArbiter(config), random.Random(seed), DispatchStage(config)
    source = TaskSource(config, rng)
    seen = Counter()                   # what the stimulus exercised, so the test cannot pass idle

    async def bench(ctx):
        last_grants = []                 # (slot, flat instance, run) granted last cycle
        for cycle in range(CYCLES):
            where = f"{system}, seed {seed}, cycle {cycle}"
            # Phases of slow and fast completion, so that classes both saturate and idle
            # (and listed tasks wait long enough to be squashed).
            finish_rate = FINISH_RATES[cycle * len(FINISH_RATES) // CYCLES]
            # What the start of the cycle holds: completions of earlier cycles have freed
            # instances and tags, new tasks have become ready and joined their lists, a
            # squash has left some listed tasks dead. A task granted last cycle starts now:
            # it cannot have finished.
            for running in list(model.asr.running()):
                if rng.random() < finish_rate and running.started < cycle:
                    model.asr.release(running.task.class_index, running.instance)
            for _ in range(rng.randrange(4)):
                free = source.free_tags(model.in_flight())
                if free:
                    task = source.task(rng.choice(free), model.in_flight(), rng.choice(classes))
                    task.ready = True
                    model.lists.append(task)
            for entries in model.lists.lists:
                for task in entries:
                    task.squashed |= rng.random() < 0.02

            heads = [model.lists.head(c) for c in classes]
            offers = [head if head is not None and not head.squashed else None for head in heads]
            free = [model.asr.free_instance(c) for c in classes]
            ctx.set(dut.offer_valid, sum(1 << c for c in classes if offers[c] is not None))
            ctx.set(dut.offer_task, [task_record(task) if task is not None else {} for task in offers])
            ctx.set(dut.has_free, sum(1 << c for c in classes if free[c] is not None))
            ctx.set(dut.free_instance, [instance or 0 for instance in free])
            tasks = {task.tag: task for task in model.in_flight()}
            junk = [source.task(tag, []) for tag in range(hts.tracker_entries)]
            ctx.set(dut.tasks, [tracker_register_record(tasks.get(tag, junk[tag]))
                                for tag in range(hts.tracker_entries)])
            # The record reads name last cycle's grants, slot by slot; the tracker's RAM
            # answers each in the same cycle (with junk for a tag granted nothing).
            granted_before = {run.task.tag: run.task for _, _, run in last_grants}
            assert ctx.get(dut.last_granted_tags) == sum(1 << tag for tag in granted_before), where
            for slot, read in enumerate(dut.record_reads):
                tag = ctx.get(read.tag)
                grants_in_slot = [run.task.tag for k, _, run in last_grants if k == slot]
                assert grants_in_slot in ([], [tag]), f"{where}, record read {slot}"
                ctx.set(read.record, task_record_value(granted_before.get(tag, junk[tag])))
            # Last cycle's grants start: the whole task to the shell, and to the trace.
            trace = ctx.get(dut.trace)
            for slot in range(hts.dispatch_width):
                assert trace[slot].valid == (slot < len(last_grants)), f"{where}, slot {slot}"
            for slot, flat, started in last_grants:
                task, record = started.task, ctx.get(dut.deliver_record[flat])
                assert (record.task_id, record.metadata) == (task.task_id, task.metadata), f"{where}, instance {flat}"
                assert delivered_record_fields(ctx.get(dut.delivered[flat])) == delivered_task_fields(task), \
                    f"{where}, instance {flat}"
                assert trace[slot].instance == started.instance, f"{where}, slot {slot}"
                assert delivered_record_fields(trace[slot].task) == delivered_task_fields(task), f"{where}, slot {slot}"
                assert trace[slot].task.accel_class == task.class_index, where
            for port in dut.deliver:
                ctx.set(port.ready, 1)

            dispatched = model.grant(cycle)
            granted = {run.task.tag: run for run in dispatched}
            last_grants = [(slot, numbering.index((run.task.class_index, run.instance)), run)
                           for slot, run in enumerate(dispatched)]
            taken = [offers[c] is not None and offers[c].tag in granted for c in classes]

            assert ctx.get(dut.take) == sum(1 << c for c in classes if taken[c]), where
            for c in classes:
                occupy = ctx.get(dut.occupy[c])
                assert occupy.valid == taken[c], f"{where}, class {c}"
                if taken[c]:
                    assert occupy.instance == free[c], f"{where}, class {c}"
            for flat, (c, instance) in enumerate(numbering):
                port = dut.deliver[flat]
                delivered = taken[c] and free[c] == instance
                assert ctx.get(port.valid) == delivered, f"{where}, instance {flat}"
                if delivered:
                    assert ctx.get(port.payload) == granted_task_layout(config).const(
                        {"tag": offers[c].tag, "mask": offers[c].mask}), f"{where}, instance {flat}"

            eligible = sum(offers[c] is not None and free[c] is not None for c in classes)
            seen.update(dispatched=len(dispatched), several=len(dispatched) > 1,
                        contended=eligible > hts.dispatch_width, dead_head=heads != offers,
                        class_full=any(offers[c] is not None and free[c] is None for c in classes),
                        upper_instance=any(taken[c] and free[c] > 0 for c in classes))
            await ctx.tick()

    # The arbiter is combinational; a clock domain of its own lets the bench count cycles.
    top = Module()
    top.domains.sync = ClockDomain()
    top.submodules.arbiter = dut
    run(top, bench)
    exercised = ["dispatched"]
    # A single tag holds one task at a time (so one offer, however many ways: tiny-width2
    # checks that the ranks still elaborate; and granted as it is listed, every instance
    # free, so dead only if squashed at once); one instance per class has no upper instance.
    exercised += ["contended", "class_full", "dead_head"] if hts.tracker_entries > 1 else []
    exercised += ["several"] if hts.dispatch_width > 1 and hts.tracker_entries > 1 else []
    exercised += ["upper_instance"] if any(acc.count > 1 for acc in config.accelerators) else []
    assert all(seen[what] for what in exercised), f"seed {seed}: stimulus missed a case: {seen}"
