"""Properties shared by the fixed-slot queues (window, reservation stations)."""

from amaranth.hdl import Cat, Module, Signal

from .harness import Harness, strict_total_order

__all__ = ["age_order_properties", "registered_squash", "squash_hits", "squash_properties"]


def age_order_properties(harness: Harness, m: Module, queue):
    """``queue.older`` is a strict total order over ``queue.valid``; covered with the queue full."""
    for name, holds in strict_total_order(queue.valid, queue.older).items():
        harness.check(m, "age_order", name, holds)
    harness.cover(m, "age_order", "queue_full", queue.valid.all())


def registered_squash(m: Module, queue) -> Signal:
    """This cycle's squash: the queue's free ``squash_next`` of the cycle before, as the
    branch unit registers it (zero after reset)."""
    squash = Signal.like(queue.squash_next, name="squash")
    m.d.sync += squash.eq(queue.squash_next)
    return squash


def squash_hits(queue, squash) -> list:
    """One bit per slot: a valid entry whose mask meets this cycle's ``squash``, stated
    from the records, not from the queue's own squash logic (its ``doomed`` bits)."""
    return [valid & (entry.mask & squash).any() for valid, entry in zip(queue.valid, queue.entries)]


def squash_properties(harness: Harness, m: Module, queue, squash):
    """The ``squash`` group: a squash leaves no entry under a squashed ID, and the doomed
    bits are exactly the entries it hits; ``squash`` is :func:`registered_squash`. (The
    tags removed are the top level's: ``queued_tag_sets`` in ``hdl/hts.py``, asserted in
    every simulation and in the pipeline harness.)

    Entries arriving in the squash cycle are not checked against it here: the harness
    assumes, as the queue's contract says, that arrivals never carry a squashed ID.
    """
    hits = squash_hits(queue, squash)
    was_squash = Signal.like(squash)
    m.d.sync += was_squash.eq(squash)
    # The register is zero after reset, so the first cycle checked compares with no squash.
    harness.check(m, "squash", "no_entry_left_under_a_squashed_id",
                  Cat(*(~valid | ((entry.mask & was_squash) == 0)
                        for valid, entry in zip(queue.valid, queue.entries))).all())
    harness.check(m, "squash", "doomed_entries_are_the_hit_entries", (queue.valid & queue.doomed) == Cat(*hits))
    harness.cover(m, "squash", "squash_hits_an_entry", Cat(*hits).any())
    if len(hits) > 1:   # one slot cannot hold an entry hit and one spared
        spared = Cat(*(valid & ~hit for valid, hit in zip(queue.valid, hits)))
        harness.cover(m, "squash", "squash_hits_one_and_spares_another", Cat(*hits).any() & spared.any())
