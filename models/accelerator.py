"""What an accelerator does with a task: read its input blocks, compute, write its output.

Each class of the configuration is bound to a function of ``hts.models.dsp`` (its
``function`` key, or its keyname). Timing is separate (``hts.models.timing``).
"""

import hashlib

from hts.base.config import SystemConfig
from hts.base.errors import ConfigError, shown

from . import dsp
from .memory import Memory

__all__ = ["AcceleratorFunctions"]


class AcceleratorFunctions:
    def __init__(self, config: SystemConfig):
        self._by_id = {}
        for index, acc in enumerate(config.accelerators):
            if acc.computes not in dsp.FUNCTIONS:
                key = f"accelerators[{index}].function"
                raise ConfigError(key, f"no accelerator function '{shown(acc.computes)}' (known: "
                                       f"{', '.join(dsp.FUNCTIONS)})", config.location_of(key))
            self._by_id[acc.id] = dsp.FUNCTIONS[acc.computes]

    def run(self, memory: Memory, accel_id: int, in_base: int, in_blocks: int, out_base: int, out_blocks: int,
            metadata: int) -> str:
        """Run one task on ``memory``; a digest of what it read and wrote.

        The digests let a test compare every task's data with the in-order execution, not
        only the final memory, in which a wrong value may have been overwritten since.
        """
        inputs = memory.read(in_base, in_blocks)
        result = self._by_id[accel_id](inputs, out_blocks * memory.block_words, metadata)
        memory.write(out_base, out_blocks, result)
        return hashlib.blake2b(inputs.tobytes() + b"|" + result.tobytes(), digest_size=8).hexdigest()
