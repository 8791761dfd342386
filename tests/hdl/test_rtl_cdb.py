"""The CDB arbiter RTL against ``hts.models.cdb``, cycle by cycle, as ``models/hts.py`` drives it.

Each cycle the model's ``_complete`` takes the finishing instances' tickets and grants the
oldest; the squash that follows aborts tickets not granted (``_squash`` removes them from
``cdb.tickets``) and releases the tags of granted tasks it hits, which the next cycle's
broadcast leaves out; aborts of running or idle instances do not concern the CDB.
"""

import random
from collections import deque
from types import SimpleNamespace

import pytest
from configs import preset
from rtl_sim import run

from hts.base.config import with_values
from hts.hdl.cdb import CommonDataBus
from hts.hdl.interfaces import instance_numbering
from hts.models.cdb import CommonDataBus as Model

pytestmark = pytest.mark.rtl


def running(class_index: int, instance: int) -> SimpleNamespace:
    # The model's CDB reads only these fields of a Running; the bench sets tag and mask.
    return SimpleNamespace(task=SimpleNamespace(class_index=class_index, tag=0, mask=0), instance=instance)


@pytest.mark.parametrize("system", ["default", "tiny", "default-cdb2", "tiny-cdb3"])
@pytest.mark.parametrize("seed", range(3))
def test_cdb_matches_model(system, seed):
    name, _, width = system.partition("-cdb")
    config = with_values(preset(name), {"hts.cdb_width": int(width)}) if width else preset(name)
    numbering = instance_numbering(config)
    dut, model, rng = CommonDataBus(config), Model(config.hts.cdb_width), random.Random(seed)
    runs = [running(c, i) for c, i in numbering]
    flat_of = {id(run): flat for flat, run in enumerate(runs)}
    tags = config.hts.tracker_entries
    granted_total = squashed_grants = 0

    async def bench(ctx):
        nonlocal granted_total, squashed_grants
        for cycle in range(400):
            where = f"seed {seed}, cycle {cycle}"
            # Phases of light and heavy completion traffic, so that the queue builds and drains.
            if cycle % 40 == 0:
                finish_rate = rng.choice([0.02, 0.1, 0.3])
            ticketed = {flat_of[id(run)] for run in model.tickets}
            finishing = [flat for flat in range(len(runs)) if flat not in ticketed and rng.random() < finish_rate]
            # A shell's done level stays up while its ticket waits: it must take no second ticket.
            held = [flat for flat in sorted(ticketed) if rng.random() < 0.5]
            ctx.set(dut.finished, sum(1 << flat for flat in finishing + held))
            ctx.set(dut.abort, 0)          # the squash decides after the grant, below
            # Tags repeat across instances here (more instances than tags), so the squash
            # hits whole tags, as it hits whole speculation IDs in the scheduler.
            hit_tags = {tag for tag in range(tags) if rng.random() < 0.1}
            for held_run in runs:
                held_run.task.tag = rng.randrange(tags)
                held_run.task.mask = int(held_run.task.tag in hit_tags)
            ctx.set(dut.tags, [held_run.task.tag for held_run in runs])
            ctx.set(dut.squashed, sum(1 << flat for flat, held_run in enumerate(runs) if held_run.task.mask))

            model.take_tickets([runs[flat] for flat in finishing])
            expected = {flat_of[id(run)] for run in model.grant()}
            grant = ctx.get(dut.grant)
            assert grant == sum(1 << flat for flat in expected), f"{where}: granted {grant:b}, model {expected}"
            granted_total += len(expected)

            # The squash after the grant: tickets left and instances still running may be aborted.
            aborted = {flat for flat in range(len(runs)) if flat not in expected and rng.random() < 0.05}
            ctx.set(dut.abort, sum(1 << flat for flat in aborted))
            model.tickets = deque(run for run in model.tickets if flat_of[id(run)] not in aborted)
            squashed_grants += len(model.squash_granted(1))
            model.advance()
            await ctx.tick()
            pending = sum(1 << flat_of[id(run)] for run in model.tickets)
            assert ctx.get(dut.pending) == pending, where
            # The registered broadcast: last cycle's grants, their tags less the squashed.
            assert ctx.get(dut.broadcast_instances) == sum(1 << flat_of[id(run)] for run in model.broadcasting), where
            assert ctx.get(dut.broadcast_tags) == sum(1 << tag for tag in model.broadcast_tags), where
        assert granted_total > 100, f"seed {seed}: too little traffic to test the arbiter"
        assert squashed_grants > 0, f"seed {seed}: no squash hit a grant"

    run(dut, bench)
