"""Machine models: which processing elements exist, and when they can run (seed 004, ch. 3).

A machine has processing elements (PEs), each an instance of an accelerator class; a
task runs on a PE whose class its ``cost`` names, for that cost. PEs are grouped into
*configurations* (bitstreams). A configuration must be loaded at a *location* (a
reconfigurable region) for its PEs to run; a location holds one configuration at a time,
and loading another one takes ``reconfiguration`` cycles. The configuration a location
starts with is there at time 0: the case study's published makespans (410 and 510)
count no load before the first task. A PE runs one task at a time, wherever it is
loaded (seed 004, constraint 1). Data move for free between tasks at the same location
and cost the edge's ``comm`` between locations (section 2.6.2).

The HTS systems are *static*: one location holding one configuration of every
accelerator instance, so nothing is ever reconfigured and no edge costs anything (the
accelerators share home memory).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from hts.base.config import SystemConfig

__all__ = ["ProcessingElement", "Machine", "instance_name", "static_machine", "machine_of_config",
           "distributed_machine", "reconfigurable_machine", "case_study_machine"]


@dataclass(frozen=True)
class ProcessingElement:
    name: str
    accel_class: str


@dataclass(frozen=True)
class Machine:
    name: str
    pes: tuple[ProcessingElement, ...]
    configurations: tuple[tuple[str, ...], ...]     # the PE names of each configuration
    placements: tuple[tuple[int, ...], ...]         # per configuration, the locations it may be loaded at
    locations: int = 1
    reconfiguration: int = 0

    def __post_init__(self):
        names = [pe.name for pe in self.pes]
        if len(set(names)) != len(names):
            raise ValueError(f"machine {self.name}: PE names must be unique")
        grouped = sorted(name for configuration in self.configurations for name in configuration)
        if grouped != sorted(names):
            raise ValueError(f"machine {self.name}: every PE must be in exactly one configuration")
        if len(self.placements) != len(self.configurations):
            raise ValueError(f"machine {self.name}: one placement per configuration")
        if any(not places or not all(0 <= l < self.locations for l in places) for places in self.placements):
            raise ValueError(f"machine {self.name}: placements must name locations 0..{self.locations - 1}")
        if self.reconfiguration < 0:
            raise ValueError(f"machine {self.name}: reconfiguration must be >= 0")

    @cached_property
    def pe(self) -> Mapping[str, ProcessingElement]:
        return {pe.name: pe for pe in self.pes}

    @cached_property
    def configuration_of(self) -> Mapping[str, int]:
        return {name: index for index, configuration in enumerate(self.configurations) for name in configuration}

    @cached_property
    def executors(self) -> tuple[tuple[str, int], ...]:
        """Every (PE, location) a task may be placed on, PEs in order."""
        return tuple((pe.name, location) for pe in self.pes
                     for location in self.placements[self.configuration_of[pe.name]])

    @cached_property
    def reconfigurable(self) -> bool:
        """Whether some location can hold more than one configuration."""
        return any(sum(location in places for places in self.placements) > 1 for location in range(self.locations))

    @cached_property
    def parallel_pes(self) -> int:
        """The most PEs that can run at once: the largest configuration each location can hold."""
        largest = [max((len(c) for c, places in zip(self.configurations, self.placements) if location in places),
                       default=0) for location in range(self.locations)]
        return min(len(self.pes), sum(largest))

    def instances_of(self, accel_class: str) -> int:
        return sum(pe.accel_class == accel_class for pe in self.pes)


def instance_name(accel_class: str, instance: int) -> str:
    """The PE of an HTS system's accelerator instance, as traces and Gantt charts name it."""
    return f"{accel_class}#{instance}"


def static_machine(instances: Mapping[str, int], name: str = "static") -> Machine:
    """An HTS-like system: ``instances[c]`` PEs of each class ``c``, all loaded, shared memory."""
    pes = tuple(ProcessingElement(instance_name(c, i), c) for c, count in instances.items() for i in range(count))
    return Machine(name, pes, (tuple(pe.name for pe in pes),), ((0,),))


def machine_of_config(config: SystemConfig) -> Machine:
    """The static machine of a system configuration: its accelerator classes and instances."""
    return static_machine({acc.name: acc.count for acc in config.accelerators}, f"accelerators of {config.source}")


def distributed_machine(classes: Sequence[str], name: str = "distributed") -> Machine:
    """One PE per class, each with its own memory, as the processors of Topcuoglu et al.:
    data between different PEs cost the edge's ``comm``."""
    pes = tuple(ProcessingElement(c, c) for c in classes)
    return Machine(name, pes, tuple((pe.name,) for pe in pes), tuple((i,) for i in range(len(pes))), len(pes))


def reconfigurable_machine(configurations: Sequence[Sequence[str]], locations: int, reconfiguration: int,
                           name: str = "reconfigurable") -> Machine:
    """Configurations given as the classes of their PEs (one PE per entry), each loadable at
    every location; PEs are named ``p0``, ``p1``, ... in order."""
    pes, grouped = [], []
    for configuration in configurations:
        names = []
        for accel_class in configuration:
            names.append(f"p{len(pes)}")
            pes.append(ProcessingElement(names[-1], accel_class))
        grouped.append(tuple(names))
    every_location = tuple(range(locations))
    return Machine(name, tuple(pes), tuple(grouped), (every_location,) * len(grouped), locations, reconfiguration)


# Seed 004, section 3.7.1: "the reconfiguration overhead is 10 ms for all PEs".
CASE_STUDY_RECONFIGURATION = 10


def case_study_machine(partial_reconfiguration: bool) -> Machine:
    """Seed 004's case-study machines: PEs p0, p1, p2 of classes a, b, c.

    With partial reconfiguration (M_PR) the FPGA has two slots and every PE is a
    configuration of its own; without (M_R), one region and two bitstreams, {p0, p1}
    and {p2}.
    """
    if partial_reconfiguration:
        return reconfigurable_machine([["a"], ["b"], ["c"]], 2, CASE_STUDY_RECONFIGURATION, "M_PR")
    return reconfigurable_machine([["a", "b"], ["c"]], 1, CASE_STUDY_RECONFIGURATION, "M_R")
