"""Decode RTL, fed by the task-queue RTL, against in-order execution of random programs.

The harness plays the rest of the scheduler: a window and tracker that always have
room (the enqueue stage is not there), a TLB that holds nothing, and a branch unit that resolves each branch after the
model's delay (RR two cycles later, memory branches ``timing.memory_latency`` + 1
cycles later: the compare is registered, ``OUTCOME_DELAY``).
Speculation is off here, so decode never runs ahead of a branch; every task runs its
accelerator function on the harness's memory the cycle it is decoded. In that setting the
tasks decode in program order, so their sequence, regions and data digests, and the
final registers, must equal the in-order executor's. Speculation (masks, checkpoints,
restore) is exercised with the whole scheduler, against the cycle model.
"""

import random

import pytest
from amaranth.hdl import Elaboratable, Module, Mux, Signal
from rtl_sim import run

from hts.assembler import assemble
from hts.base.config import with_values
from hts.cosim.progen import random_config, random_programs
from hts.hdl.decode import Decode, take_queue
from hts.hdl.interfaces import BranchKind, Stall
from hts.hdl.task_queue import TaskQueue
from hts.isa import branch_taken
from hts.models.accelerator import AcceleratorFunctions
from hts.models.branch_unit import OUTCOME_DELAY
from hts.models.executor import run_sequential
from hts.models.memory import initial_memory

pytestmark = pytest.mark.rtl


class FrontEnd(Elaboratable):
    """Task queues wired to decode; the branch unit's redirects come from the testbench."""

    def __init__(self, config):
        self.decode = Decode(config)
        self.queues = [TaskQueue(config) for _ in range(config.hts.processes)]
        # Redirects of resolved branches, from the testbench's stand-in branch unit.
        self.branch_redirect = [Signal(name=f"branch_redirect{pid}") for pid in range(config.hts.processes)]
        self.branch_target = [Signal.like(queue.redirect_pc, name=f"branch_target{pid}") for pid, queue
                              in enumerate(self.queues)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.decode = self.decode
        for pid, queue in enumerate(self.queues):
            m.submodules[f"queue{pid}"] = queue
            m.d.comb += [
                *take_queue(self.decode, pid, queue),
                queue.pop.eq(self.decode.pop[pid]),
                queue.redirect.eq(self.decode.redirect[pid] | self.branch_redirect[pid]),
                queue.redirect_pc.eq(Mux(self.branch_redirect[pid], self.branch_target[pid],
                                         self.decode.redirect_pc[pid])),
            ]
        return m


def without_speculation(config):
    return with_values(config, {"hts.speculation": False})


@pytest.mark.parametrize("seed", range(40))
def test_decode_runs_programs_in_order(seed):
    rng = random.Random(seed)
    config = without_speculation(random_config(rng))
    programs = [assemble(text, config, f"p{pid}.s") for pid, text in enumerate(random_programs(rng, config))]
    expected = run_sequential(programs, config, initial_memory(config, seed))
    memory, functions = initial_memory(config, seed), AcceleratorFunctions(config)
    front = FrontEnd(config)
    decode, queues = front.decode, front.queues
    decoded: list[tuple] = []

    async def bench(ctx):
        # Nothing is fetched (so nothing decodes) until start: program_len is 0 until then.
        for queue, program in zip(queues, programs):
            for pc, word in enumerate(program.words):
                ctx.set(queue.load_en, 1)
                ctx.set(queue.load_addr, pc)
                ctx.set(queue.load_data.as_value(), word)
                await ctx.tick()
            ctx.set(queue.load_en, 0)
        for queue, program in zip(queues, programs):
            ctx.set(queue.program_len, len(program))
            ctx.set(queue.start, 1)
        await ctx.tick()
        for queue in queues:
            ctx.set(queue.start, 0)
        ctx.set(decode.tracker_has_free, 1)
        ctx.set(decode.tlb_has_room, 1)

        pending: dict[int, tuple[int, dict]] = {}       # pid -> (resolution cycle, branch)
        for cycle in range(20_000):
            where = f"seed {seed}, cycle {cycle}"
            ctx.set(decode.blocked, sum(1 << pid for pid in pending))
            ctx.set(decode.pending, sum(1 << pid for pid in pending))
            for pid in range(config.hts.processes):
                resolving = pid in pending and pending[pid][0] == cycle
                branch = pending[pid][1] if resolving else None
                taken = branch is not None and branch_taken(branch["cond"], branch["x"], branch["y"])
                ctx.set(front.branch_redirect[pid], taken)
                if taken:
                    ctx.set(front.branch_target[pid], branch["target"])
            # The TLB holds nothing: a branch reads the home block it names.
            ctx.set(decode.tlb_branch_phys, ctx.get(decode.tlb_branch_block))
            stalls = ctx.get(decode.stall)
            if all(queue_exhausted and pid not in pending
                   for pid, queue_exhausted in enumerate(ctx.get(q.exhausted) for q in queues)):
                break
            assert not ctx.get(decode.fault.valid), where
            for pid in range(config.hts.processes):
                assert stalls[pid] not in (Stall.TRACKER_FULL, Stall.TLB_FULL,
                                           Stall.TLB_CONFLICT, Stall.SPECULATIVE_FAULT), where
            if ctx.get(decode.enqueue.valid):
                # The task goes to the enqueue stage as the tracker entry is written.
                assert ctx.get(decode.tracker_alloc), where
                task, entry = ctx.get(decode.enqueue.task), ctx.get(decode.tracker_alloc_entry)
                assert task.tag == ctx.get(decode.tracker_free_tag), where
                assert all(getattr(task, name) == getattr(entry, name) for name, _ in entry.shape()), where
                pid, pc = int(entry.pid), int(entry.pc)
                word = programs[pid].decoded[pc]
                assert (int(entry.task_id), int(entry.metadata)) == (word.task_id, word.metadata), where
                assert config.accelerators[int(task.accel_class)].id == word.accel_id, where
                regions = (int(entry.reads.base), int(entry.reads.blocks),
                           int(entry.writes.base), int(entry.writes.blocks))
                data = functions.run(memory, word.accel_id, *regions, word.metadata)
                decoded.append((pid, pc, word.accel_id, regions, data))
            branch = ctx.get(decode.branch)
            if branch.valid:
                pid = int(branch.pid)
                kind = branch.kind
                x = int(branch.x) if kind == BranchKind.RR else memory.first_word(int(branch.block))
                delay = (1 if kind == BranchKind.RR else config.timing.memory_latency) + OUTCOME_DELAY
                assert kind != BranchKind.BR and not branch.speculated, where
                pending[pid] = (cycle + delay, {"cond": branch.cond, "x": x, "y": int(branch.y),
                                                "target": int(branch.target)})
            await ctx.tick()
            for pid in [pid for pid, (when, _) in pending.items() if when == cycle]:
                del pending[pid]
        else:
            raise AssertionError(f"seed {seed}: the front end did not finish")

        reference = [(t.pid, t.pc, t.accel_id, t.regions, t.data) for t in expected.tasks]
        for pid in range(config.hts.processes):
            assert [t for t in decoded if t[0] == pid] == [t for t in reference if t[0] == pid], \
                f"seed {seed}, process {pid}"
            registers = decode.gprs[pid].peek(ctx)
            assert tuple(int(value) for value in registers) == expected.registers[pid], f"seed {seed}, pid {pid}"

    run(front, bench)
