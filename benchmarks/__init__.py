"""Benchmark task programs: the HTS paper's nine synthetic benchmarks and its audio compression.

Shipped with the package so that `hts run`, `hts compare` and the tests find them anywhere.
"""

import re
from importlib import resources

__all__ = ["SYNTHETIC", "BENCHMARKS", "source", "audio_compression"]

# The paper's nine synthetic benchmarks, in its order (section VI-C).
SYNTHETIC = (
    "no_dependency", "same_dependency", "different_dependency", "random_dependency",
    "loop_no_dependency", "loop_dependency",
    "branch_taken_no_dependency", "branch_not_taken_no_dependency", "branch_taken_dependency",
)
BENCHMARKS = (*SYNTHETIC, "audio_compression")

# The audio program's threshold that makes its branch taken (frequency domain): the
# correlation peak is Q15, at most 0x7fff.
TAKEN_THRESHOLD = 0x7FFF


def source(name: str) -> str:
    return resources.files(__name__).joinpath(f"{name}.s").read_text()


def audio_compression(bands: int = 8, taken: bool = False) -> str:
    """The audio program for ``bands`` bands, its branch taken (frequency domain) or not."""
    if not 0 <= bands <= 0xFFFF:
        raise ValueError("bands must fit the 16-bit loop count")
    text = source("audio_compression")
    text = re.sub(r"lbeg  8 (r4 .*; @bands)", rf"lbeg  {bands:x} \1", text)
    threshold = TAKEN_THRESHOLD if taken else 0
    return re.sub(r"mov   0    0 r9 (.*; @threshold)", rf"mov   {threshold:x}    0 r9 \1", text)
