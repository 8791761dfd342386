"""Device timing: how many cycles a task occupies an accelerator instance.

Timing is kept apart from what the accelerator computes (``hts.models.dsp``) so that a
system can be timed by another model without touching the scheduler: anything with a
``cycles(accelerator, word)`` method will do. The default is the fixed per-class count
of the configuration (Table II of the HTS paper in the built-in presets).
"""

import hashlib
from dataclasses import dataclass
from typing import Protocol

from hts.config import AcceleratorClass
from hts.isa import Word

__all__ = ["DeviceTiming", "TableLatency", "ScrambledLatency"]


class DeviceTiming(Protocol):
    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        """Cycles from dispatch to done for this task on an instance of ``accelerator``."""


class TableLatency:
    """Every task of a class takes the class's configured ``latency``, whatever its size."""

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        return accelerator.latency


@dataclass(frozen=True)
class ScrambledLatency:
    """Every task takes between 1 and twice its class's latency, drawn from ``seed`` and the task.

    For differential testing: runs whose completions come in orders the fixed table never
    gives. The draw is a hash of the seed, the class and the instruction word, so the same
    task takes the same time wherever it is timed (model, RTL testbench, a rerun). One
    task in four is slow: it draws against at least ``slow`` cycles instead, so that a
    class of one-cycle accelerators still has all its instances busy now and then, and
    the structures behind them (stations, tracker) fill up.
    """
    seed: int
    slow: int = 32

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        key = f"{self.seed}|{accelerator.name}|{word}".encode()
        draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
        slow = draw >> 32 & 3 == 0
        latency = max(accelerator.latency, self.slow) if slow else accelerator.latency
        return 1 + draw % (2 * latency)
