"""Device timing: how many cycles a task occupies an accelerator instance.

Timing is kept apart from what the accelerator computes (``hts.models.dsp``) so that a
system can be timed by another model without touching the scheduler: anything with a
``cycles(accelerator, word)`` method will do. The default is the fixed per-class count
of the configuration (Table II of the HTS paper in the built-in presets).
"""

from typing import Protocol

from hts.config import AcceleratorClass
from hts.isa import Word

__all__ = ["DeviceTiming", "TableLatency"]


class DeviceTiming(Protocol):
    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        """Cycles from dispatch to done for this task on an instance of ``accelerator``."""


class TableLatency:
    """Every task of a class takes the class's configured ``latency``, whatever its size."""

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        return accelerator.latency
