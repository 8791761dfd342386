"""Randomized differential testing: random programs and latencies, RTL against the model.

A fuzz case is a seed. It draws the programs of every process with ``hts.cosim.progen``: tasks
over overlapping regions, nested loops, branches of every kind, several processes, each
in its own window of memory, and register-indirect regions that sometimes leave it (a
fault, or a stall on a wrong path). It also draws the accelerators' latencies
(``ScrambledLatency``: one task in four slow, so that even one-cycle classes keep all
their instances busy at times) and the initial memory.
The systems are fixed, because each one is a Verilator build. They are small random
systems from ``hts.cosim.progen.random_config``, chosen so that their structures fill up:
:data:`SYSTEMS` names them.
"""

import dataclasses
import random
from dataclasses import dataclass

from hts.assembler import assemble
from hts.base.config import SystemConfig
from hts.cosim.progen import random_config, random_programs, random_windows

__all__ = ["SYSTEMS", "fuzz_system", "fuzz_job", "FuzzBatch", "run_batch", "WILD"]

# The chance that a random program loads a base register with any block: about one case
# in four then faults on its committed path.
WILD = 0.05
# One item in twenty a speculated branch over a loop: squashes find every stage busy (hts.cosim.progen).
SPECULATED_LOOPS = 0.05

# name -> seed of hts.cosim.progen.random_config(seed, processes=2), and why that one.
SYSTEMS = {
    # two processes, speculation, four speculation IDs, a 12-entry tracker, 7 TLB entries,
    # three dispatch ways and two CDB lanes: everything happens at once
    "small": 36,
    # two processes and one entry in every structure: the scheduler must still finish
    "one": 1,
    # three vector_add instances beside two iir, four words a beat, speculation, a 3-block
    # TM: for `--rtl-accelerator vector_add`, the RTL core under aborts and retargets
    "vector_add": 22735,
}


# Scheduler sizes set over the drawn ones: "small" searches its 12 entries in three rows of
# five lanes, the last row short, keeps four successors a producer, so lists fill, and has
# 7 TLB entries, three dispatch ways and two CDB lanes.
SCHEDULER_SIZES = {"small": {"tracker_entries": 12, "tracker_lanes": 5, "successor_slots": 4, "tlb_entries": 7,
                             "dispatch_width": 3, "cdb_width": 2}}


def fuzz_system(name: str) -> SystemConfig:
    config = random_config(random.Random(SYSTEMS[name]), processes=2)
    if name in SCHEDULER_SIZES:
        config = dataclasses.replace(config, hts=dataclasses.replace(config.hts, **SCHEDULER_SIZES[name]))
    return dataclasses.replace(config, source=f"<fuzz system {name}>")


def fuzz_case(config: SystemConfig, system: str, seed: int, axi: bool = False, rtl_classes: tuple[str, ...] = ()):
    """The :class:`~hts.cosim.scoreboard.RunSpec` of one seed."""
    # The scoreboard pulls in the RTL (Amaranth); importing it here, not at the top, keeps
    # `hts` commands that only list SYSTEMS quick.
    from .scoreboard import RunSpec
    rng = random.Random(seed)
    windows = random_windows(rng, config)
    programs = tuple(assemble(text, config, f"fuzz{seed}_p{pid}.s")
                     for pid, text in enumerate(random_programs(rng, config, wild=WILD,
                                                                speculated_loops=SPECULATED_LOOPS)))
    return RunSpec(name=f"{system}/{seed}", programs=programs, seed=seed, scrambled_timing=seed, windows=windows,
                   reproduce=f"hts fuzz --system {system} --first {seed} --seeds 1{' --axi' if axi else ''}"
                             + "".join(f" --rtl-accelerator {name}" for name in rtl_classes))


def fuzz_job(system: str, first: int, count: int, progress: bool = False, coverage: bool = False,
             axi: bool = False, rtl_classes: tuple[str, ...] = ()):
    """The :class:`~hts.cosim.scoreboard.Job` of seeds ``first .. first + count - 1`` on fuzz system
    ``system`` (``axi``: through the AXI4-Lite control registers; ``rtl_classes``: those
    classes' RTL cores stand in for their Python accelerators)."""
    from .scoreboard import Job
    config = fuzz_system(system)
    runs = tuple(fuzz_case(config, system, seed, axi, rtl_classes) for seed in range(first, first + count))
    return Job(config, runs, progress=progress, coverage=coverage, axi=axi, rtl_classes=rtl_classes)


@dataclass(frozen=True)
class FuzzBatch:
    """Seeds ``first .. first + count - 1`` on fuzz system ``system``: one simulator process."""
    system: str
    first: int
    count: int
    coverage: bool = False
    axi: bool = False
    rtl_classes: tuple[str, ...] = ()


def run_batch(batch: FuzzBatch) -> list:
    """The outcomes of a batch, in seed order (a Dask task of ``hts fuzz``: the worker builds
    the Verilator model itself if its cache does not have it)."""
    from .run import cosimulate
    job = fuzz_job(batch.system, batch.first, batch.count, coverage=batch.coverage, axi=batch.axi,
                   rtl_classes=batch.rtl_classes)
    return cosimulate(job, progress=lambda message: None)
