"""The ready lists RTL against ``hts.models.ready_lists`` as models/hts.py drives them, cycle by cycle.

The testbench plays the rest of the scheduler. The enqueue stage hands on a task now and
then, ready or waiting, on a tag no task and no list holds. The wake-up wakes one waiting
queued task a cycle (never the one enqueued in it), or a squashed waiter whose tag it
still holds. The branch unit squashes the queued tasks under some speculation IDs and
confirms others. The model's own dispatch (``Dispatch.dispatch``) drops dead heads and
takes the live heads of classes with a free instance; instances free at random. Every
cycle each class's offer (valid, and its record) must be the model's live head; after
every edge each list's count and head slot, and the held tags, must be the model's.
"""

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass

import pytest
from configs import preset
from queue_model import DispatchStage, TaskSource, record_fields, task_fields, task_record
from rtl_sim import run

from hts.base.config import with_values
from hts.hdl.ready_lists import ReadyLists
from hts.models.dispatch import squash_queued
from hts.models.task import DecodedTask

pytestmark = pytest.mark.rtl

CYCLES = 1000

# (preset, keys set, classes, or None for the preset's ten). default: rings of 16 slots in
# two banks of 8. odd_tags: 5 tags, so each ring has a sixth slot and banks of 3 rows.
# one_tag: rings of two one-slot banks. one_class: every task in one list. many_classes:
# more classes than tags, and a class field with no unused code.
CONFIGS = {
    "default": ("default", {}, None),
    "odd_tags": ("default", {"hts.tracker_entries": 5}, None),
    "one_tag": ("tiny", {}, None),
    "one_class": ("default", {}, 1),
    "many_classes": ("default", {"hts.tracker_entries": 6}, 16),
}


def config_named(name: str):
    """The configuration ``name`` of ``CONFIGS``; its classes copies of the preset's first."""
    base, values, classes = CONFIGS[name]
    config = with_values(preset(base), values)
    if classes is None:
        return config
    first = config.accelerators[0]
    return dataclasses.replace(config, accelerators=tuple(
        dataclasses.replace(first, name=f"class{c}", id=c) for c in range(classes)))


def bits(tags) -> int:
    return sum(1 << tag for tag in tags)


@dataclass
class Traffic:
    """What the rest of the scheduler does for a while. Filling: a hot class takes most
    tasks while its instances finish nothing, and the rest drains, so that its list comes
    to hold every tag. Mixed: tasks spread, and waiters wait long enough to be squashed."""

    hot: int
    hot_share: float
    finish: list[float]          # chance a running task of each class completes in a cycle
    squash: float
    wake: float                  # chance the wake-up wakes a tag in a cycle

    @classmethod
    def draw(cls, rng: random.Random, classes: int, filling: bool) -> "Traffic":
        hot = rng.randrange(classes)
        if filling:
            return cls(hot, 0.9, [0.0 if c == hot else 0.8 for c in range(classes)], 0.03, 0.7)
        finish = [rng.choice([0.05, 0.3, 0.8]) for _ in range(classes)]
        return cls(hot, 0.2, finish, rng.choice([0.05, 0.2]), rng.choice([0.15, 0.7]))


class Surroundings:
    """``HTSModel`` reduced to its queued tasks, ready lists and dispatch, and the tags of
    squashed waiters the wake-up still holds (each is woken once, and is not reallocated
    before). A granted task's tag is free at once: the lists never see a running task, and
    with the instances busy every tag can wait in one list."""

    def __init__(self, config):
        self.tags = config.hts.tracker_entries
        self.stage = DispatchStage(config, width=len(config.accelerators))
        self.lists = self.stage.lists
        self.queued: list[DecodedTask] = []
        self.asleep: set[int] = set()

    def free_tags(self) -> list[int]:
        taken = {task.tag for task in self.queued} | self.lists.held() | self.asleep
        return [tag for tag in range(self.tags) if tag not in taken]

    def waiting_tags(self) -> list[int]:
        """The tags the wake-up may wake now: queued waiters' and squashed waiters'."""
        return [task.tag for task in self.queued if not task.ready] + sorted(self.asleep)

    def squash(self, spec_bits: int) -> list[DecodedTask]:
        squashed = squash_queued(self.queued, spec_bits)
        self.asleep |= {task.tag for task in squashed if not task.ready}
        return squashed

    def dispatch(self, t: int) -> list:
        runs = self.stage.grant(t)
        for granted in runs:
            self.queued.remove(granted.task)
        return runs

    def end_of_cycle(self, enqueued: DecodedTask | None, woken: int | None, confirm: int) -> list[DecodedTask]:
        """``HTSModel``'s enqueue, then ``_wake``'s lines for the lists (the woken task joins
        first, then the enqueued one), then ``_confirm``'s for the queued tasks; the tasks woken."""
        if enqueued is not None:
            self.queued.append(enqueued)
        self.asleep.discard(woken)
        joined = [task for task in self.queued if task.tag == woken and task is not enqueued]
        for task in joined:
            task.ready = True
            self.lists.append(task)
        if enqueued is not None and enqueued.ready:
            self.lists.append(enqueued)
        for task in self.queued:
            task.mask &= ~confirm
        return joined


def drive_tag_sets(ctx, dut, start: list[DecodedTask], squashed: list[DecodedTask], spec_ids: int):
    """The queued tag sets of the cycle's start, as ``queued_tag_sets`` registers them."""
    ctx.set(dut.queued, bits(task.tag for task in start))
    ctx.set(dut.squashed, bits(task.tag for task in squashed))
    ctx.set(dut.under, [bits(task.tag for task in start if task.mask >> spec_id & 1) for spec_id in range(spec_ids)])


def check_offers(ctx, dut, lists, where: str):
    """Each class offers its head when live, with the head's record."""
    heads = [lists.head(c) for c in range(len(lists.lists))]
    live = [head if head is not None and not head.squashed else None for head in heads]
    assert ctx.get(dut.offer_valid) == bits(c for c, head in enumerate(live) if head is not None), where
    offers = ctx.get(dut.offer_task)
    for c, head in enumerate(live):
        if head is not None:
            assert record_fields(offers[c]) == task_fields(head), f"{where}, class {c}"


def check_lists(ctx, dut, lists, where: str):
    """After an edge: the tags held, and each list's length (its ring's entries and the
    pending task) and head slot (a ring slot the model counts as entries ever popped)."""
    assert ctx.get(dut.held) == bits(lists.held()), where
    pending = ctx.get(dut.pending)
    for c, entries in enumerate(lists.lists):
        assert ctx.get(dut.count[c]) + (pending >> c & 1) == len(entries), f"{where}, class {c}"
        if pending >> c & 1:
            assert ctx.get(dut.pending_tag) == entries[-1].tag, f"{where}, class {c}"
        assert ctx.get(dut.head[c]) == lists.popped[c] % lists.ring, f"{where}, class {c}"


def corners_expected(tags: int) -> list[str]:
    """A list of one tag never runs across its ring's end, and takes one join at an edge."""
    return ["full", "dead head", "woken", "woken dead", "taken"] + (["wrap", "two joins"] if tags > 1 else [])


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seed", [*range(2), *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(2, 12))])
def test_ready_lists_match_the_model(seed, name):
    config = config_named(name)
    hts, classes = config.hts, len(config.accelerators)
    rng = random.Random(seed)
    dut, model, source = ReadyLists(config), Surroundings(config), TaskSource(config, rng)
    corners = Counter()                # what the stimulus reached, so the test cannot pass idle

    def enqueued(traffic: Traffic, squash: int) -> DecodedTask | None:
        """The task leaving the enqueue stage, if any: one under a squashed ID never leaves it."""
        free = model.free_tags()
        if not free or rng.random() < 0.3:
            return None
        class_index = traffic.hot if rng.random() < traffic.hot_share else rng.randrange(classes)
        task = source.task(rng.choice(free), [], class_index)
        return None if task.mask & squash else task

    async def bench(ctx):
        for cycle in range(CYCLES):
            where = f"{name}, seed {seed}, cycle {cycle}"
            if cycle % 60 == 0:
                traffic = Traffic.draw(rng, classes, filling=cycle // 60 % 2 == 1)
            for running in list(model.stage.asr.running()):
                if rng.random() < traffic.finish[running.task.class_index]:
                    model.stage.asr.release(running.task.class_index, running.instance)

            start = list(model.queued)
            squash = source.spec_ids() if rng.random() < traffic.squash else 0
            confirm = source.spec_ids() & ~squash if rng.random() < 0.05 else 0
            squashed = model.squash(squash)
            drive_tag_sets(ctx, dut, start, squashed, hts.spec_ids)
            check_offers(ctx, dut, model.lists, where)
            corners["dead head"] += any(head is not None and head.squashed
                                        for head in map(model.lists.head, range(classes)))
            runs = model.dispatch(cycle)
            ctx.set(dut.take, bits(run.task.class_index for run in runs))

            task = enqueued(traffic, squash)
            waiting = model.waiting_tags()
            woken = rng.choice(waiting) if waiting and rng.random() < traffic.wake else None
            ctx.set(dut.append, task is not None)
            if task is not None:
                ctx.set(dut.append_task, task_record(task))
            ctx.set(dut.woken, {"valid": woken is not None, "tag": woken or 0})
            joined = model.end_of_cycle(task, woken, confirm)
            await ctx.tick()
            check_lists(ctx, dut, model.lists, where)

            corners.update({
                "taken": len(runs), "woken": len(joined), "woken dead": woken is not None and not joined,
                "two joins": bool(task and task.ready and any(t.class_index == task.class_index for t in joined)),
                "wrap": any(map(model.lists.wraps, range(classes))),
                "full": any(len(entries) == hts.tracker_entries for entries in model.lists.lists)})

    run(dut, bench)
    assert all(corners[corner] for corner in corners_expected(hts.tracker_entries)), corners
