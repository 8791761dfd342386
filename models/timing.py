"""Device timing: how many cycles a task occupies an accelerator instance.

Timing is kept apart from what the accelerator computes (``hts.models.dsp``) so that a
system can be timed by another model without touching the scheduler: anything with a
``cycles(accelerator, word)`` method will do. The default is the fixed per-class count
of the configuration (Table II of the HTS paper in the built-in presets).
"""

import hashlib
from dataclasses import dataclass
from typing import Protocol

from hts.base.config import AcceleratorClass
from hts.isa import Word

from .dsp import DEFAULT_LEN, LEN

__all__ = ["DeviceTiming", "TableLatency", "ScrambledLatency", "VectorAddCoreLatency", "ClassTiming"]


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
    the structures behind them (ready lists, tracker) fill up.
    """
    seed: int
    slow: int = 32

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        key = f"{self.seed}|{accelerator.name}|{word}".encode()
        draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
        slow = draw >> 32 & 3 == 0
        latency = max(accelerator.latency, self.slow) if slow else accelerator.latency
        return 1 + draw % (2 * latency)


def _beats(words: int, per_beat: int) -> int:
    """Beats that move ``words`` words (none for a count of zero or less)."""
    return max(0, -(-words // per_beat))


@dataclass(frozen=True)
class VectorAddCoreLatency:
    """Cycles of the RTL vector-add core (``hts.hdl.hls.vector_add_core``), from start to done.

    Exact for a memory that is always ready and answers each read ``dma_latency`` cycles
    after accepting it, as the co-simulation testbench serves the core. The kernel starts
    the cycle after the core's start (``ApCtrlCore`` registers it). It reads
    the beats of ``a`` and ``b`` it needs (none wholly past the input region), waits for
    the last answer, spends a cycle reading its buffer, writes every output beat and is
    done the cycle after: so its write-back is the last ``ceil(out_words / W)`` cycles
    of the run, as the model's retarget rule has it (``VectorAddKernel`` in
    ``hts.hdl.hls`` derives the count).
    """
    block_words: int
    words_per_beat: int
    dma_latency: int = 1

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        length = LEN.read(word.metadata) or DEFAULT_LEN
        in_words, out_words = word.b * self.block_words, word.d * self.block_words
        results = min(length, out_words)
        reads = _beats(min(results, in_words), self.words_per_beat) + \
            _beats(min(results, in_words - length), self.words_per_beat)
        waiting = reads + self.dma_latency if reads else 1
        return 1 + waiting + _beats(out_words, self.words_per_beat) + 2


@dataclass(frozen=True)
class ClassTiming:
    """The classes named in ``by_class`` timed by their own model, the others by ``default``
    (e.g. an RTL core's exact timing for its class beside the configured table)."""
    by_class: tuple[tuple[str, DeviceTiming], ...]
    default: DeviceTiming

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        return dict(self.by_class).get(accelerator.name, self.default).cycles(accelerator, word)
