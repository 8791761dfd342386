"""Pipeline partitioning of a kernel chain over device types and counts, after DYPE
(Bai et al., *Data-aware Dynamic Execution of Irregular Workloads on Heterogeneous
Systems*, seed 000, §II-A, Algorithm 1).

A workload is a chain of kernels (e.g. SpMM, GEMM, SpMM, GEMM for a two-layer GCN). A
pipeline cuts it into contiguous stages; each stage runs on ``count`` devices of one type,
no device serving two stages. Inferences stream through the pipeline, so:

- a stage is busy per inference for its compute time (the kernels' single-device times
  divided evenly among its devices) plus the peer-to-peer transfers in and out of it
  (:func:`hts.models.devices.dype.p2p_seconds`; Algorithm 1 charges a transfer to both
  the destination stage, line 19, and the source stage, line 21);
- the *period* is the longest stage time, and the throughput its inverse;
- the energy of one inference is, over the devices used, static power for a whole period
  plus dynamic power while busy (DYPE counts "stage idleness, data transfers, and kernel
  execution", with static power measured at idle, Table II).

Objectives (§VI-A): ``throughput`` (the shortest period), ``energy`` (the least energy
per inference) and ``balanced`` (the least energy among pipelines of at least 70% of the
best throughput).

:func:`dype_candidates` is Algorithm 1: tables ``dp[i][usage]`` hold, for the first ``i``
kernels on exactly ``usage`` devices of each type, the best pipeline found by period
(``dp_perf``) and by energy (``dp_eng``, the prefix judged at its own period, line 30),
each extended one stage at a time. :func:`all_pipelines` enumerates every pipeline, for
checking it. The DP is exact for throughput when transfers are free (the period is then
the largest of independent stage times) and for energy when, in addition, static power is
zero (a plain sum). Otherwise a table keeps one prefix per state and can drop the one that
would have done better once extended: the one whose last stage absorbs the transfer to the
next stage, or the one with the shorter period when the devices of a later stage draw
static power all period long. The balanced choice can miss the optimum even then: per
device count the tables hold only the fastest and the most frugal pipeline.
``tests/test_pipeline.py`` lists a case of each.
"""

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from hts.models.devices.dype import DeviceSpec, p2p_seconds

__all__ = [
    "OBJECTIVES", "BALANCED_THROUGHPUT_FRACTION", "Kernel", "Stage", "Pipeline", "evaluate",
    "dype_candidates", "all_pipelines", "select", "dype_schedule", "best_pipeline",
]

OBJECTIVES = ("throughput", "energy", "balanced")
BALANCED_THROUGHPUT_FRACTION = 0.7     # §VI-A: "at least 70% of ... performance-optimized"


@dataclass(frozen=True)
class Kernel:
    """One kernel of the chain: seconds on a single device of each type able to run it."""
    name: str
    seconds: Mapping[str, float]
    output_bytes: float = 0.0       # handed to the next kernel

    def __post_init__(self):
        if not self.seconds:
            raise ValueError(f"kernel {self.name}: seconds must name at least one device type")
        for device, seconds in self.seconds.items():
            if not seconds > 0:
                raise ValueError(f"kernel {self.name}: seconds[{device!r}] must be > 0, got {seconds}")
        if self.output_bytes < 0:
            raise ValueError(f"kernel {self.name}: output_bytes must be >= 0, got {self.output_bytes}")


@dataclass(frozen=True)
class Stage:
    """Kernels ``[start, stop)`` of the chain on ``count`` devices of type ``device``."""
    start: int
    stop: int
    device: str
    count: int


@dataclass(frozen=True)
class Pipeline:
    stages: tuple[Stage, ...]
    stage_seconds: tuple[float, ...]
    period: float
    energy: float                   # joules per inference

    @property
    def throughput(self) -> float:
        return 1 / self.period

    def __str__(self):
        """DYPE's mnemonic (Table V): ``3F2G`` is 3 FPGAs, then 2 GPUs."""
        return "".join(f"{stage.count}{stage.device[0].upper()}" for stage in self.stages)


def _check_system(kernels: tuple[Kernel, ...], devices: Mapping[str, DeviceSpec]) -> None:
    if not kernels:
        raise ValueError("the chain needs at least one kernel")
    for kernel in kernels:
        unknown = set(kernel.seconds) - set(devices)
        if unknown:
            raise ValueError(f"kernel {kernel.name}: no device type {', '.join(sorted(unknown))} in the system "
                             f"(types: {', '.join(devices)})")


def _compute_seconds(kernels: tuple[Kernel, ...], stage: Stage) -> float | None:
    """Compute time of ``stage``, or None when one of its kernels cannot run on its devices."""
    try:
        return sum(kernel.seconds[stage.device] for kernel in kernels[stage.start:stage.stop]) / stage.count
    except KeyError:
        return None


def _transfer_seconds(kernels, devices, sender: Stage, receiver: Stage) -> float:
    return p2p_seconds(kernels[sender.stop - 1].output_bytes, devices[sender.device], sender.count,
                       devices[receiver.device], receiver.count)


def _check_stages(kernels: tuple[Kernel, ...], devices: Mapping[str, DeviceSpec], stages: tuple[Stage, ...]) -> None:
    """Stages must follow each other from kernel 0 on, each on devices the system has."""
    expected_start = 0
    for k, stage in enumerate(stages):
        if not expected_start == stage.start < stage.stop <= len(kernels):
            raise ValueError(f"stage {k} covers kernels [{stage.start}, {stage.stop}); it must start at "
                             f"{expected_start} and end after it, by {len(kernels)} at most")
        if stage.device not in devices:
            raise ValueError(f"stage {k}: no device type {stage.device!r} (types: {', '.join(devices)})")
        if stage.count < 1:
            raise ValueError(f"stage {k}: count must be >= 1, got {stage.count}")
        expected_start = stage.stop
    for name, spec in devices.items():
        used = sum(stage.count for stage in stages if stage.device == name)
        if used > spec.count:
            raise ValueError(f"the stages use {used} {name} devices; the system has {spec.count}")


def evaluate(kernels, devices: Mapping[str, DeviceSpec], stages: Iterable[Stage]) -> Pipeline | None:
    """Period and energy of the pipeline ``stages``; None when a stage cannot run its kernels."""
    kernels, stages = tuple(kernels), tuple(stages)
    _check_stages(kernels, devices, stages)
    busy = []
    for stage in stages:
        compute = _compute_seconds(kernels, stage)
        if compute is None:
            return None
        busy.append(compute)
    for k in range(len(stages) - 1):
        transfer = _transfer_seconds(kernels, devices, stages[k], stages[k + 1])
        busy[k] += transfer
        busy[k + 1] += transfer
    period = max(busy, default=0.0)
    energy = sum(stage.count * (devices[stage.device].static_power * period
                                + devices[stage.device].dynamic_power * seconds)
                 for stage, seconds in zip(stages, busy))
    return Pipeline(stages, tuple(busy), period, energy)


def _usages(devices: Mapping[str, DeviceSpec]) -> list[tuple[int, ...]]:
    """Every vector of device counts used, one entry per type, within what the system has."""
    return list(itertools.product(*(range(spec.count + 1) for spec in devices.values())))


def dype_candidates(kernels, devices: Mapping[str, DeviceSpec]) -> list[Pipeline]:
    """Algorithm 1: the complete pipelines of ``dp_perf`` and ``dp_eng`` for every device usage."""
    kernels = tuple(kernels)
    _check_system(kernels, devices)
    types = tuple(devices)
    empty = Pipeline((), (), 0.0, 0.0)
    nothing = (0,) * len(types)
    tables = {"period": {(0, nothing): empty}, "energy": {(0, nothing): empty}}
    for i in range(1, len(kernels) + 1):
        for usage in _usages(devices):
            for j in range(1, i + 1):
                for t, device in enumerate(types):
                    for count in range(1, usage[t] + 1):
                        before = usage[:t] + (usage[t] - count,) + usage[t + 1:]
                        stage = Stage(i - j, i, device, count)
                        for score, table in tables.items():
                            prefix = table.get((i - j, before))
                            if prefix is None:
                                continue
                            extended = evaluate(kernels, devices, prefix.stages + (stage,))
                            best = table.get((i, usage))
                            if extended is not None and (
                                    best is None or getattr(extended, score) < getattr(best, score)):
                                table[(i, usage)] = extended
    return [table[(len(kernels), usage)] for table in tables.values() for usage in _usages(devices)
            if (len(kernels), usage) in table]


def _compositions(length: int) -> Iterator[tuple[tuple[int, int], ...]]:
    """Every way to cut ``range(length)`` into contiguous non-empty pieces."""
    for cuts in itertools.product((False, True), repeat=length - 1):
        bounds = [0] + [k + 1 for k, cut in enumerate(cuts) if cut] + [length]
        yield tuple(zip(bounds, bounds[1:]))


def all_pipelines(kernels, devices: Mapping[str, DeviceSpec]) -> Iterator[Pipeline]:
    """Every feasible pipeline, by brute force: exponential, for small chains only."""
    kernels = tuple(kernels)
    _check_system(kernels, devices)
    options = [(device, count) for device, spec in devices.items() for count in range(1, spec.count + 1)]
    for pieces in _compositions(len(kernels)):
        for assignment in itertools.product(options, repeat=len(pieces)):
            if any(sum(count for device, count in assignment if device == name) > spec.count
                   for name, spec in devices.items()):
                continue
            pipeline = evaluate(kernels, devices, (Stage(start, stop, device, count)
                                                   for (start, stop), (device, count) in zip(pieces, assignment)))
            if pipeline is not None:
                yield pipeline


def select(pipelines: Iterable[Pipeline], objective: str) -> Pipeline:
    """The best of ``pipelines`` for ``objective``; ties go to the other measure, then to the first."""
    pipelines = list(pipelines)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if not pipelines:
        raise ValueError("no feasible pipeline: every stage needs devices of its own, and the chain "
                         "needs more than the system has")
    if objective == "throughput":
        return min(pipelines, key=lambda p: (p.period, p.energy))
    if objective == "balanced":
        floor = BALANCED_THROUGHPUT_FRACTION * max(p.throughput for p in pipelines)
        pipelines = [p for p in pipelines if p.throughput >= floor]
    return min(pipelines, key=lambda p: (p.energy, p.period))


def dype_schedule(kernels, devices: Mapping[str, DeviceSpec], objective: str) -> Pipeline:
    """DYPE's choice for ``objective`` among the pipelines of its tables."""
    return select(dype_candidates(kernels, devices), objective)


def best_pipeline(kernels, devices: Mapping[str, DeviceSpec], objective: str) -> Pipeline:
    """The optimum for ``objective`` over every pipeline (brute force)."""
    return select(all_pipelines(kernels, devices), objective)
