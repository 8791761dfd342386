"""FPGA processing elements and reconfiguration, after Jungblut's dissertation *Task
Scheduling on FPGA-based Accelerators with Limited Partial Reconfiguration* (seed 004).

- Execution time of the *standard PE* (§6.1.5.2, §6.3.2, Figure 6.1): on an Alveo U280 no
  task runs shorter than about 33 us; from about 2^10 input words on, the time grows
  linearly with the input. :class:`PiecewiseLinearPE` is that curve,
  ``max(floor, beta0 + beta1 * words)``, and :func:`fit_linear` the simple linear
  regression of Eqs. (6.1) and (6.2) that finds ``beta0`` and ``beta1``;
  :meth:`PiecewiseLinearPE.words_for` inverts it as Eq. (6.4) does to build a task of a
  given duration.
- Reconfiguration delay (§3.3.2-3.3.3, Tables 3.5 and 3.6): instantiating configuration
  ``c`` at location ``l`` keeps ``l`` busy for ``P_s^C(c) / P_b^L(l)`` (bitstream size over
  the location's configuration bandwidth) plus the location's fixed overhead ``P_r^L(l)``.
  §2 gives the bandwidths: JTAG about 0.03 Gbit/s, Configuration via Protocol (CvP) over
  PCIe 8 Gbit/s, so a 10 MB bitstream takes from 0.01 s up to 2.7 s.
"""

from dataclasses import dataclass

import numpy as np

from hts.base.config import AcceleratorClass
from hts.isa import Word

from .units import require_positive, seconds_to_cycles

__all__ = [
    "JTAG_BITS_PER_S", "CVP_PCIE_BITS_PER_S", "reconfiguration_seconds",
    "fit_linear", "PiecewiseLinearPE", "PiecewiseLinearTiming",
]

JTAG_BITS_PER_S = 0.03e9
CVP_PCIE_BITS_PER_S = 8e9


def reconfiguration_seconds(bitstream_bytes: float, bits_per_second: float, overhead_seconds: float = 0.0) -> float:
    """Seconds a location is unavailable while a bitstream of ``bitstream_bytes`` is loaded into it."""
    require_positive(bitstream_bytes=bitstream_bytes, bits_per_second=bits_per_second)
    if overhead_seconds < 0:
        raise ValueError(f"overhead_seconds must be >= 0, got {overhead_seconds}")
    return bitstream_bytes * 8 / bits_per_second + overhead_seconds


def fit_linear(sizes, seconds) -> tuple[float, float]:
    """``(beta0, beta1)`` of the least-squares line through the measured ``(size, seconds)`` points."""
    sizes, seconds = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    if sizes.shape != seconds.shape or sizes.ndim != 1:
        raise ValueError(f"sizes and seconds must be 1-D and of equal length, got shapes {sizes.shape} "
                         f"and {seconds.shape}")
    if np.unique(sizes).size < 2:
        raise ValueError("sizes must hold at least two different values to fit a line")
    beta1, beta0 = np.polyfit(sizes, seconds, 1)
    return float(beta0), float(beta1)


@dataclass(frozen=True)
class PiecewiseLinearPE:
    """Execution time of a processing element: a floor, then linear in the input size."""
    floor_seconds: float
    beta0: float            # seconds, intercept of the linear part
    beta1: float            # seconds per input word

    def __post_init__(self):
        require_positive(floor_seconds=self.floor_seconds, beta1=self.beta1)

    @property
    def knee_words(self) -> float:
        """Input size where the linear part overtakes the floor."""
        return max(0.0, (self.floor_seconds - self.beta0) / self.beta1)

    def seconds(self, words: float) -> float:
        if words < 0:
            raise ValueError(f"words must be >= 0, got {words}")
        return max(self.floor_seconds, self.beta0 + self.beta1 * words)

    def words_for(self, seconds: float) -> float:
        """Input size that makes a task last ``seconds`` (Eq. 6.4); below the floor none does."""
        if seconds < self.floor_seconds:
            raise ValueError(f"seconds must be >= the floor of {self.floor_seconds} s, got {seconds}")
        return max(self.knee_words, (seconds - self.beta0) / self.beta1)


class PiecewiseLinearTiming:
    """Tasks on a PE of curve ``pe``; a task's input size is its input region (B blocks)."""

    def __init__(self, pe: PiecewiseLinearPE, block_words: int, clock_hz: float):
        require_positive(block_words=block_words, clock_hz=clock_hz)
        self.pe, self.block_words, self.clock_hz = pe, block_words, clock_hz

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        return seconds_to_cycles(self.pe.seconds(word.b * self.block_words), self.clock_hz)
