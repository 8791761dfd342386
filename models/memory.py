"""The simulated memory: home memory, with the transactional memory (TM) right above it.

Addresses are block indices. Blocks ``[0, memory.blocks)`` are home memory, the blocks
from there up to ``memory.blocks + hts.tm_blocks`` are the TM that speculative tasks
write through the Task Lookup Buffer. The digest covers home memory only: that is the
state the sequential-equivalence contract compares.
"""

import hashlib

import numpy as np

from hts.base.config import SystemConfig
from hts.isa import REGISTER_BITS

__all__ = ["Memory", "initial_memory", "outside_windows", "read_beat", "write_beat"]


class Memory:
    def __init__(self, config: SystemConfig, home: np.ndarray | None = None):
        self.block_words = config.memory.block_words
        self.home_blocks = config.memory.blocks
        total = (config.memory.blocks + config.hts.tm_blocks) * self.block_words
        self.words = np.zeros(total, dtype=np.int32)
        if home is not None:
            self.home[:] = home

    @property
    def home(self) -> np.ndarray:
        return self.words[: self.home_blocks * self.block_words]

    def read(self, base: int, blocks: int) -> np.ndarray:
        return self.words[base * self.block_words: (base + blocks) * self.block_words].copy()

    def write(self, base: int, blocks: int, data: np.ndarray):
        self.words[base * self.block_words: (base + blocks) * self.block_words] = data

    def first_word(self, block: int) -> int:
        return int(self.words[block * self.block_words])

    def digest(self) -> str:
        return hashlib.sha256(self.home.tobytes()).hexdigest()[:16]

    def copy(self) -> "Memory":
        clone = Memory.__new__(Memory)
        clone.block_words, clone.home_blocks, clone.words = self.block_words, self.home_blocks, self.words.copy()
        return clone


def initial_memory(config: SystemConfig, seed: int = 0) -> Memory:
    """Home memory filled with deterministic 16-bit signed samples, as DSP input data."""
    rng = np.random.default_rng(seed)
    words = config.memory.blocks * config.memory.block_words
    return Memory(config, rng.integers(-(1 << 15), 1 << 15, size=words, dtype=np.int32))


# A DMA beat (the copy-back engine's and the accelerators' memory ports) carries
# consecutive words, lane 0 in the lowest bits; RTL testbenches pack and unpack it here.
def outside_windows(config: SystemConfig) -> np.ndarray:
    """Per word of home memory: whether it lies outside every process's window (no process
    may ever write it)."""
    inside = np.zeros(config.memory.blocks, dtype=bool)
    for pid in range(config.hts.processes):
        window = config.window(pid)
        inside[window.base:window.end] = True
    return np.repeat(~inside, config.memory.block_words)


def read_beat(words: np.ndarray, address: int, count: int) -> int:
    """``count`` memory words from word ``address`` as one DMA beat (lane 0 in the lowest bits)."""
    lanes = words[address:address + count].astype(np.uint32)
    return sum(int(word) << (REGISTER_BITS * lane) for lane, word in enumerate(lanes))


def write_beat(words: np.ndarray, address: int, count: int, beat: int):
    """Store one DMA beat of ``count`` lanes at word ``address``."""
    mask = (1 << REGISTER_BITS) - 1
    lanes = [beat >> (REGISTER_BITS * lane) & mask for lane in range(count)]
    words[address:address + count] = np.array(lanes, dtype=np.uint32).astype(np.int32)
