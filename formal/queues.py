"""Properties shared by the fixed-slot queues (window, reservation stations)."""

from amaranth.hdl import Module

from .harness import Harness, strict_total_order

__all__ = ["age_order_properties"]


def age_order_properties(harness: Harness, m: Module, queue):
    """``queue.older`` is a strict total order over ``queue.valid``; covered with the queue full."""
    for name, holds in strict_total_order(queue.valid, queue.older).items():
        harness.check(m, "age_order", name, holds)
    harness.cover(m, "age_order", "queue_full", queue.valid.all())
