"""What a co-simulation run is, what the reference says it must do, and the verdict.

A :class:`Job` is a batch of :class:`RunSpec` on one configuration (one Verilator build);
it is pickled for the cocotb process, which returns a :class:`RunOutcome` per run. The
reference of a run is the cycle model (``hts.models.hts``) on the same programs, initial
memory and device timing; :func:`score` compares the RTL's trace with the model's event
for event and cycle for cycle, its end cycle, and its final home memory with both the
model's and the sequential executor's.
"""

import dataclasses
from dataclasses import dataclass, field

from hts.assembler import Program
from hts.base.config import SystemConfig, Window
from hts.hdl.control import FAULT_IRQ_SHIFT
from hts.hdl.trace import canonical
from hts.models.coverage import Coverage
from hts.models.executor import run_sequential
from hts.models.hts import HTSModel, RunResult
from hts.models.memory import Memory, initial_memory, outside_windows
from hts.models.timing import ClassTiming, ScrambledLatency, TableLatency, VectorAddCoreLatency

from .replay import Stimulus

__all__ = ["RunSpec", "Job", "RunOutcome", "score", "first_difference", "expected_registers", "RTL_DMA_LATENCY"]

# Cycles from an RTL core's accepted read to its answer, as the testbench serves them
# (the copy-back engine's latency); the core's timing model is exact for it.
RTL_DMA_LATENCY = 1


@dataclass(frozen=True)
class RunSpec:
    """One run: programs (one per process), memory seed, timing, and how to repeat it."""
    name: str
    programs: tuple[Program, ...]
    seed: int = 0                       # initial memory and the CPU's load pauses
    scrambled_timing: int | None = None  # seed of a ScrambledLatency; None: the configured table
    reproduce: str = ""                 # the command that runs this case alone
    windows: tuple[Window, ...] = ()    # per process, set through the CPU port; () keeps the job's

    def system(self, config: SystemConfig) -> SystemConfig:
        """The job's system with this run's windows (the RTL build does not depend on them)."""
        return dataclasses.replace(config, windows=self.windows) if self.windows else config

    def timing(self, config: SystemConfig, rtl_classes: tuple[str, ...] = ()):
        """The device timing; the classes in ``rtl_classes`` (all vector_add: the one RTL
        core) take their RTL core's exact time."""
        timing = TableLatency() if self.scrambled_timing is None else ScrambledLatency(self.scrambled_timing)
        if not rtl_classes:
            return timing
        core = VectorAddCoreLatency(config.memory.block_words, config.hts.copyback_words_per_cycle, RTL_DMA_LATENCY)
        return ClassTiming(tuple((name, core) for name in rtl_classes), timing)

    def initial_memory(self, config: SystemConfig) -> Memory:
        return initial_memory(config, self.seed)

    def reference(self, config: SystemConfig, observer=None, rtl_classes: tuple[str, ...] = ()) -> RunResult:
        """The model's run; ``observer`` as for :class:`~hts.models.hts.HTSModel`; ``rtl_classes``
        as for :meth:`timing`."""
        system = self.system(config)
        return HTSModel(system, list(self.programs), self.initial_memory(system), self.timing(system, rtl_classes),
                        observer=observer).run()


@dataclass(frozen=True)
class Job:
    config: SystemConfig
    runs: tuple[RunSpec, ...]
    load_pause: float = 0.2             # chance of an idle cycle before each program word
    progress: bool = False              # print a line per run
    record: bool = False                # record each run's inputs for a replay (``RunOutcome.stimulus``)
    keep_trace: bool = False            # return each run's RTL events (``RunOutcome.trace``)
    coverage: bool = False              # count each run's functional coverage (``RunOutcome.coverage``)
    axi: bool = False                   # load, start and end through AXI4-Lite (``hts.hdl.axi_hts``)
    rtl_classes: tuple[str, ...] = ()   # classes whose RTL core stands in (``hts.cosim.top.RTL_CORES``)


@dataclass
class RunOutcome:
    name: str
    match: bool                         # trace, end cycle and memory all as the references
    difference: str | None              # the first disagreement, described
    cycles: int | None                  # the RTL's (None: it never ended)
    model_cycles: int
    memory_digest: str
    reproduce: str
    wall_s: float = 0.0                 # simulation time of the run (load excluded)
    wakes: int = 0                      # cycles in which Python looked
    events: int = 0
    faults: list = field(default_factory=list)
    stimulus: Stimulus | None = None    # with ``Job(record=True)``
    trace: list[dict] | None = None     # the RTL's events, canonical order, with ``Job(keep_trace=True)``
    coverage: Coverage | None = None    # with ``Job(coverage=True)``: trace bins from the RTL's events,
                                        # model bins from the reference run

    @property
    def sim_cycles_per_s(self) -> float:
        return (self.cycles or self.model_cycles) / self.wall_s if self.wall_s else 0.0


def first_difference(expected: list[dict], actual: list[dict]) -> str | None:
    """The first cycle whose events differ, with both sides' events of it; None if equal."""
    if expected == actual:
        return None
    for index, (want, got) in enumerate(zip(expected, actual)):
        if want != got:
            cycle = min(want["cycle"], got["cycle"])
            break
    else:
        index = min(len(expected), len(actual))
        cycle = (expected + actual)[index]["cycle"] if index < max(len(expected), len(actual)) else None
    at = [e for e in expected if e["cycle"] == cycle]
    got = [e for e in actual if e["cycle"] == cycle]
    return f"first difference in cycle {cycle} (event {index}):\n  model: {at}\n  rtl:   {got}"


def score(config: SystemConfig, spec: RunSpec, reference: RunResult, events: list[dict], cycles: int | None,
          memory: Memory, faults: list, wakes: int, wall_s: float, control: dict | None = None) -> RunOutcome:
    """The verdict on one RTL run against the model's ``reference`` and the sequential executor.

    ``control``: with AXI4-Lite, what the status registers read after the end, and whether
    the interrupt rose and cleared."""
    expected = canonical([event.as_dict() for event in reference.trace.events])
    sequential = run_sequential(list(spec.programs), spec.system(config), spec.initial_memory(config)).memory
    difference = first_difference(expected, events)
    if difference is None and cycles != reference.cycles:
        difference = f"the RTL ended in cycle {cycles}, the model in cycle {reference.cycles}"
    expected_faults = [(f.cycle, f.pid, f.pc, f.cause.name) for f in reference.faults]
    if difference is None and faults != expected_faults:
        difference = f"the CPU port reported faults (cycle, pid, pc, cause) {faults}, the model {expected_faults}"
    if difference is None and control is not None:
        difference = _control_difference(control, reference, config.hts.processes)
    if difference is None and not (memory.home == reference.memory.home).all():
        difference = "home memory differs from the model's"
    if difference is None and not (memory.home == sequential.home).all():
        difference = "home memory differs from the sequential executor's"
    outside = outside_windows(spec.system(config))
    if (difference is None and outside.any()
            and not (memory.home[outside] == spec.initial_memory(config).home[outside]).all()):
        difference = "home memory outside every process's window changed"
    return RunOutcome(name=spec.name, match=difference is None, difference=difference, cycles=cycles,
                      model_cycles=reference.cycles, memory_digest=memory.digest(), reproduce=spec.reproduce,
                      wall_s=wall_s, wakes=wakes, events=len(events), faults=faults)


def expected_registers(reference: RunResult, processes: int) -> dict[str, int]:
    """What the status registers (``hts.cosim.axi.ControlPort.status``) must read after the
    run the model made as ``reference``."""
    everyone = (1 << processes) - 1
    faulted = sum({1 << fault.pid for fault in reference.faults})
    completed = sum(event.event == "complete" for event in reference.trace.events)
    expected = {"RUNNING": 0, "ENDED": everyone, "FAULTED": faulted,
                "IRQ_STATUS": everyone | faulted << FAULT_IRQ_SHIFT, "CYCLES": reference.cycles, "TASKS": completed}
    if reference.faults:
        last = max(reference.faults, key=lambda fault: fault.cycle)      # one fault a cycle: one CPU port
        expected |= {"FAULT_PC": last.pc, "FAULT_INFO": last.pid | last.cause.value << 8}
    return expected


def _control_difference(control: dict, reference: RunResult, processes: int) -> str | None:
    if not control:
        return "the RTL never ended, so its status registers were not read"
    if not control["irq_raised"]:
        return "the interrupt did not rise within 2 cycles of the last end"
    if not control["irq_cleared"]:
        return "writing IRQ_STATUS's bits back did not clear them and the interrupt"
    expected = expected_registers(reference, processes)
    wrong = {name: (control[name], want) for name, want in expected.items() if control[name] != want}
    if wrong:
        return "status registers (read, model): " + ", ".join(f"{name} {got:#x} vs {want:#x}"
                                                              for name, (got, want) in wrong.items())
    return None
