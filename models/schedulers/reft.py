"""REFT (seed 004, chapter 4): HEFT made aware of configurations, locations and reconfiguration.

A PE can take a task only while its configuration is loaded at the location: the
availability of a (PE, location) excludes the PE's own tasks and every instance of
another configuration at that location, widened on both sides by the reconfiguration
delay (seed 004, section 4.3.1), since loading either configuration after the other
takes that long. The ranks are HEFT's upward ranks: seed 004 found its
reconfiguration-pressure ranking no better (section 6.3.3) and uses rank_u from then on.
On a machine that never reconfigures, REFT's schedule is HEFT's.
"""

from collections.abc import Mapping

from hts.models.graphs import TaskGraph

from .heft import Interval, busy_on_pe, list_schedule
from .machine import Machine
from .schedule import Schedule, Slot, instances

__all__ = ["reft", "reconfiguration_aware_busy"]


def reconfiguration_aware_busy(machine: Machine):
    """What blocks a (PE, location) on ``machine``: its tasks, and other configurations there."""
    def blocked(pe: str, location: int, slots: Mapping[str, Slot]) -> list[Interval]:
        own = machine.configuration_of[pe]
        delay = machine.reconfiguration
        foreign = [(instance.begin - delay, instance.end + delay) for instance in instances(machine, slots)
                   if instance.location == location and instance.configuration != own]
        return busy_on_pe(pe, location, slots) + foreign
    return blocked


def reft(graph: TaskGraph, machine: Machine) -> Schedule:
    return list_schedule(graph, machine, "reft", reconfiguration_aware_busy(machine))
