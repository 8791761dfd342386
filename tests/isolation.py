"""Directed programs for process isolation, shared by the model and the RTL tests."""

import dataclasses
from importlib import resources

from hts.assembler import assemble
from hts.base.config import SystemConfig, Window, parse_config, with_values

EXAMPLES = resources.files("hts.examples")

# Process 0 writes block 0x40 speculatively (into TM), then the branch squashes it.
SPECULATIVE_WRITER = """\
        mov   ffff 0 r1 0 0 0 0
        if    70 r1 skip 0 0 0 d 0       ; MR, speculated, NEQ: taken
        real_fir   10 1 40 1 1 0 0 0     ; speculative: writes 0x40 into TM, then squashed
skip:   vector_add 24 2 46 1 2 0 0 0
"""

# Process 1 reads block 0x40 while process 0's speculative copy of it is in the TLB.
SHARED_READER = "        mov 0 0 r1 0 0 1 0\n" * 6 + "        real_fir 40 1 a0 1 0 1 0 0\n"


def windows_example():
    """examples/windows.yaml and its two programs."""
    config = parse_config(EXAMPLES.joinpath("windows.yaml").read_text(), "windows.yaml")
    return config, [assemble(EXAMPLES.joinpath(f"windows_p{pid}.s").read_text(), config, f"windows_p{pid}.s")
                    for pid in range(2)]


def shared_windows(config: SystemConfig):
    """``config`` with two processes whose windows share blocks 0x40..0x7f, and the
    writer and reader above."""
    config = dataclasses.replace(with_values(config, {"hts.processes": 2}),
                                 windows=(Window(0, 0x80, shared=True), Window(0x40, 0x80, shared=True)))
    return config, [assemble(SPECULATIVE_WRITER, config, "writer.s"), assemble(SHARED_READER, config, "reader.s")]
