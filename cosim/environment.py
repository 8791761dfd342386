"""The scheduler's surroundings as one cycle-level model: memory, branch reads, DMA, accelerators.

Both benches of the whole scheduler play the same surroundings around it: the
Amaranth-simulator harness of ``tests/hdl/system_sim.py`` and the cocotb testbench of
the Verilated scheduler (:mod:`hts.cosim.testbench`). :class:`Environment` is those
surroundings, in plain Python: a bench reads the scheduler's outputs of a cycle into
plain values, hands them over, and writes back what it answers. It keeps

- the **memory** (a :class:`hts.models.memory.Memory`, home and TM);
- the **branch reads**: a read requested on a lane in cycle ``c`` is answered in cycle
  ``c + timing.memory_latency`` with the word as it stands then (after that cycle's
  completions); a new request on a lane replaces the one pending there;
- the **DMA ports**: the copy-back engine's TM and home ports, and one lane per RTL core
  standing in for an accelerator (``rtl_instances``), all always ready. A read is
  answered ``latency`` cycles after its request (1 for the copy-back ports, which is what
  the cycle model assumes; ``rtl_dma_latency`` for RTL cores) with the memory as it
  stands at the start of that cycle; a write is stored in its cycle;
- the **accelerators**: at a CDB grant, the numpy function of the granted task's class
  (``hts.models.dsp``) runs on the memory at the regions its instance holds, with the
  metadata its core was given with the task, as it started (RTL cores
  move their own data: nothing runs for them). With a device ``timing``, a Python core
  stands behind every other instance: a task it accepts in cycle ``c`` raises ``done``
  from ``c + cycles`` on and ``writeback`` over the last write-back cycles (as
  :class:`hts.hdl.accelerator.LatencyCore` does), until the instance releases it;
  without, the scheduler's own cores time the tasks;
- the **record** of the run: the events, faults and ends the scheduler shows.

A cycle goes in three steps, in the order the scheduler's combinational paths ask for:

1. :meth:`Environment.begin` gives the inputs that come before anything of the cycle
   is known (:class:`Drive`: the cores' ``done`` and ``writeback``, DMA read data);
2. :meth:`Environment.grant` takes the cycle's CDB grants (which follow from ``done``),
   runs the completions, and gives the branch-read answers due in the cycle;
3. :meth:`Environment.observe` takes the cycle's settled outputs (:class:`Outputs`) and
   says whether the run is over.

Benches skip the cycles in which nothing changes: :meth:`Environment.next_due` is the
next cycle whose inputs the environment changes (the scheduler's ``wake`` covers the
rest). A skipped cycle is one whose outputs ask nothing; a bench that skips a cycle
owing an answer is told so.
"""

from dataclasses import dataclass, field
from typing import Sequence

from hts.base.config import SystemConfig
from hts.models.accelerator import AcceleratorFunctions
from hts.models.copy_back import transfer_cycles
from hts.models.memory import Memory, read_beat, write_beat

__all__ = ["Environment", "Drive", "Outputs", "Record", "COPYBACK_TM", "COPYBACK_HOME", "rtl_dma_port"]

# DMA ports, numbered: the copy-back engine's two, then one lane per RTL core.
COPYBACK_TM, COPYBACK_HOME = 0, 1
COPYBACK_LATENCY = 1        # the copy-back ports' read latency, as the cycle model assumes


def rtl_dma_port(lane: int) -> int:
    """The DMA port number of the ``lane``-th RTL core (in ``rtl_instances`` order)."""
    return 2 + lane


@dataclass
class Drive:
    """The scheduler's inputs from the environment at the start of a cycle."""
    done: int = 0                     # per flat instance: its Python core's ``done``
    writeback: int = 0                # and ``writeback``
    dma_data: dict[int, int] = field(default_factory=dict)   # DMA port -> read beat answered (its ``rvalid``)


@dataclass
class Outputs:
    """The scheduler's outputs in one cycle that the environment takes, as plain values."""
    branch_reads: dict[int, int] = field(default_factory=dict)          # lane -> block read
    dma_reads: dict[int, int] = field(default_factory=dict)             # DMA port -> word address
    dma_writes: dict[int, tuple[int, int]] = field(default_factory=dict)   # DMA port -> (word address, beat)
    started: int = 0                  # flat instances accepting a task
    released: int = 0                 # flat instances whose task leaves (granted or aborted)
    tasks: Sequence = ()              # the task each flat instance accepts; read only with ``started``
    events: list[dict] = field(default_factory=list)   # the trace port's events (``hts.hdl.trace.TraceReader``)
    ended: int = 0                    # processes ending
    fault: tuple[int, int, str] | None = None           # (pid, pc, cause) on the CPU's fault port


@dataclass
class Record:
    """What the scheduler showed of a run."""
    events: list[dict] = field(default_factory=list)   # in the order shown
    faults: list[tuple[int, int, int, str]] = field(default_factory=list)   # (cycle, pid, pc, cause)
    cycles: int | None = None         # the model's ``RunResult.cycles`` (last end + 1); None until all ended


@dataclass
class _Running:
    """A task on a Python core: from which cycles it raises ``done`` and ``writeback``."""
    done_at: int
    writeback_from: int


class Environment:
    """The surroundings of one run of ``programs`` (one per process, from pid 0) on the scheduler.

    ``memory`` is updated in place. ``cycle_limit`` ends the run (at the first cycle
    observed at or past it) if the processes have not all ended. ``timing`` (a device
    timing model, ``hts.models.timing``) puts a Python core behind every instance not in
    ``rtl_instances``; ``rtl_instances`` are the flat instances with an RTL core, lane
    ``k`` of the RTL cores' DMA being the ``k``-th.
    """

    def __init__(self, config: SystemConfig, memory: Memory, programs: Sequence, cycle_limit: int, *,
                 timing=None, rtl_instances: Sequence[int] = (), rtl_dma_latency: int = 1):
        self.memory = memory
        self.record = Record()
        self._config, self._programs, self._timing = config, programs, timing
        self._limit = cycle_limit
        self._everyone = (1 << len(programs)) - 1
        self._rtl = frozenset(rtl_instances)
        self._functions = AcceleratorFunctions(config)
        self._accel_ids = [accel.id for accel in config.accelerators]
        self._read_latency = config.timing.memory_latency
        self._per_beat = config.hts.copyback_words_per_cycle
        self._dma_latency = [COPYBACK_LATENCY, COPYBACK_LATENCY, *[rtl_dma_latency] * len(rtl_instances)]
        self._cycle = -1
        self._lanes: dict[int, tuple[int, int]] = {}        # branch-read lane -> (cycle due, block)
        self._dma: list[tuple[int, int, int]] = []          # DMA reads pending: (cycle due, port, word address)
        self._answered_at: int | None = None                # the last cycle with a DMA answer
        self._tasks: dict = {}                              # flat instance -> the task it started
        self._running: dict[int, _Running] = {}             # flat instance -> its Python core's timing
        self._ended = 0

    # ---- one cycle ------------------------------------------------------------------------
    def begin(self, cycle: int) -> Drive:
        """Start ``cycle``: the cores' status and the DMA reads answered in it."""
        if self._lanes or self._dma:
            missed = [due for due, _ in self._lanes.values()] + [due for due, _, _ in self._dma]
            if min(missed) < cycle:
                raise RuntimeError(f"cycle {cycle}: the environment owed an answer in cycle {min(missed)}")
        self._cycle = cycle
        drive = Drive()
        for flat, task in self._running.items():
            drive.done |= (task.done_at <= cycle) << flat
            drive.writeback |= (task.writeback_from <= cycle) << flat
        if self._dma:
            for due, port, address in self._dma:
                if due == cycle:
                    drive.dma_data[port] = read_beat(self.memory.words, address, self._per_beat)
            self._dma = [read for read in self._dma if read[0] != cycle]
        if drive.dma_data:
            self._answered_at = cycle
        return drive

    def grant(self, grants: int, writes: Sequence = (), records: Sequence = ()) -> dict[int, int]:
        """The CDB grants of the cycle (``writes``: the output region each flat instance's
        shell holds, retargets applied; ``records``: the task ID and metadata its core was
        given; both read only with ``grants``): their functions run on the tasks they
        started, as the model's ``_complete``. Returns the branch-read answers due in the
        cycle, lane -> word, which see those completions."""
        for flat in range(len(writes)) if grants else ():
            if grants >> flat & 1 and flat not in self._rtl:
                task, output = self._tasks[flat], writes[flat]
                self._functions.run(self.memory, self._accel_ids[task.accel_class], task.reads.base,
                                    task.reads.blocks, output.base, output.blocks, records[flat].metadata)
        answers = {}
        for lane, (due, block) in list(self._lanes.items()):
            if due == self._cycle:
                answers[lane] = self.memory.first_word(block)
                del self._lanes[lane]
        return answers

    def observe(self, outputs: Outputs) -> bool:
        """The cycle's settled outputs: requests taken, events recorded. Whether the run is over."""
        cycle, record = self._cycle, self.record
        if outputs.fault is not None:
            record.faults.append((cycle, *outputs.fault))
        record.events += outputs.events
        for lane, block in outputs.branch_reads.items():
            self._lanes[lane] = (cycle + self._read_latency, block)
        for port, address in outputs.dma_reads.items():
            self._dma.append((cycle + self._dma_latency[port], port, address))
        for address, beat in outputs.dma_writes.values():
            write_beat(self.memory.words, address, self._per_beat, beat)
        if outputs.released or outputs.started:
            self._accelerators(cycle, outputs)
        self._ended |= outputs.ended
        if self._ended == self._everyone:
            record.cycles = cycle + 1
            return True
        return cycle >= self._limit

    def next_due(self, cycle: int) -> int | None:
        """The first cycle after ``cycle`` in which the environment's inputs change (an
        answer given or withdrawn, a core's status); None if none is coming."""
        changes = [due for due, _ in self._lanes.values()] + [due for due, _, _ in self._dma] + [
            when for task in self._running.values() for when in (task.done_at, task.writeback_from)]
        if self._answered_at == cycle:
            changes.append(cycle + 1)       # its ``rvalid`` drops
        return min((when for when in changes if when > cycle), default=None)

    def _accelerators(self, cycle: int, outputs: Outputs):
        """Starts and releases of the cycle: each Python core's task scheduled or forgotten."""
        for flat in list(self._running):
            if outputs.released >> flat & 1:
                del self._running[flat]        # idle from the next cycle
        for flat in range(len(outputs.tasks)):
            if outputs.started >> flat & 1 and flat not in self._rtl:
                task = self._tasks[flat] = outputs.tasks[flat]
                if self._timing is None:
                    continue
                accel = self._config.accelerators[task.accel_class]
                cycles = self._timing.cycles(accel, self._programs[task.pid].decoded[task.pc])
                writing = transfer_cycles(self._config, task.writes.blocks)
                self._running[flat] = _Running(done_at=cycle + cycles,
                                               writeback_from=max(cycle + 1, cycle + cycles - writing))
