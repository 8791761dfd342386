"""The scheduler's control registers on AXI4-Lite: the CPU port as an SoC sees it.

:data:`REGISTERS` is the register map, defined once: the RTL decodes it, the driver
(``hts.cosim.axi``) and the tests use it, and docs/hardware.md lists it (checked).
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hts.base.config import SystemConfig
from hts.isa import INSTRUCTION_BITS

from .axi_lite import DATA_BITS, AxiLiteSubordinate, axi_lite_signature
from .interfaces import cpu_signature, fetch_pc_width, instance_numbering

__all__ = ["Register", "REGISTERS", "ADDR_BITS", "IDENTIFIER", "FAULT_IRQ_SHIFT", "AxiLiteControl", "offset_of"]

#: A 4 KiB register window, the smallest a Vivado address editor or LiteX assigns.
ADDR_BITS = 12
#: What ``ID`` reads: "HTS" and the register map's version.
IDENTIFIER = 0x48545301
#: Per-process bits of ``IRQ_ENABLE`` and ``IRQ_STATUS``: ends in 15..0, faults from here.
FAULT_IRQ_SHIFT = 16
_WORDS_PER_INSTRUCTION = INSTRUCTION_BITS // DATA_BITS


@dataclass(frozen=True)
class Register:
    """One 32-bit register: its byte offset, ``RO``, ``WO``, ``RW`` or ``RW1C``, and meaning."""
    name: str
    offset: int
    access: str
    meaning: str


REGISTERS = (
    Register("ID", 0x00, "RO", "0x48545301: \"HTS\" and the map's version, 1"),
    Register("PROCESSES", 0x04, "RO", "how many processes the scheduler runs (`hts.processes`)"),
    Register("START", 0x08, "WO", "a 1 in bit p starts process p; all written together start together. "
             "SLVERR if one of them is running or p is not a process"),
    Register("RUNNING", 0x0C, "RO", "bit p: process p started and not yet ended"),
    Register("ENDED", 0x10, "RO", "bit p: process p ended since its last start"),
    Register("FAULTED", 0x14, "RO", "bit p: process p faulted since its last start"),
    Register("FAULT_PC", 0x18, "RO", "the pc of the last fault"),
    Register("FAULT_INFO", 0x1C, "RO", "the last fault: bits 7:0 its process, bits 10:8 its cause (`FaultCause`)"),
    Register("IRQ_ENABLE", 0x20, "RW", "bit p: interrupt when process p ends; bit 16 + p: when it faults"),
    Register("IRQ_STATUS", 0x24, "RW1C", "the same bits, set by the events whether enabled or not; "
             "writing 1 clears a bit. `irq` is high while a set bit is enabled"),
    Register("CYCLES_LO", 0x28, "RO", "cycles any process ran since the last start, low word; reading it "
             "latches the high word"),
    Register("CYCLES_HI", 0x2C, "RO", "the high word latched by the last read of CYCLES_LO"),
    Register("TASKS", 0x30, "RO", "tasks completed (CDB grants) since the last start"),
    Register("PID", 0x34, "RW", "the process that LOAD_ADDR, LOAD_DATA, LENGTH and WINDOW_BLOCKS address. "
             "SLVERR if not a process"),
    Register("LOAD_ADDR", 0x38, "RW", "the instruction the next LOAD_DATA writes fill; it counts up after "
             "each instruction. Writing it restarts the instruction. SLVERR past `hts.program_words`"),
    Register("LOAD_DATA", 0x3C, "WO", "four writes make one 128-bit instruction, least significant word "
             "first; the fourth stores it. SLVERR while the process runs"),
    Register("LENGTH", 0x40, "WO", "the program's length in instructions: fetch stops there. SLVERR while "
             "the process runs or past `hts.program_words`"),
    Register("WINDOW_BASE", 0x44, "RW", "the first home block of the window WINDOW_BLOCKS sets. SLVERR past "
             "the end of home memory"),
    Register("WINDOW_BLOCKS", 0x48, "WO", "sets the process's window to this many blocks from WINDOW_BASE "
             "(reset: all of home memory). SLVERR while it runs or past the end of home memory"),
)


def offset_of(name: str) -> int:
    return next(register.offset for register in REGISTERS if register.name == name)


class AxiLiteControl(wiring.Component):
    """The register map behind an AXI4-Lite subordinate, driving the scheduler's CPU port.

    Parameters
    ----------
    config : SystemConfig
        Processes, program and memory sizes.

    Attributes
    ----------
    bus : In(axi_lite_signature)
        The control port: :data:`ADDR_BITS` address bits, full-word writes only.
    cpu : Out(cpu_signature)
        To the scheduler: ``load``, ``length``, ``window``, ``start`` as registered pulses;
        ``running``, ``ended``, ``fault`` feed the status registers.
    completed : In
        Tasks the CDB grants this cycle.
    irq : Out
        Level interrupt, from registers: an enabled bit of ``IRQ_STATUS`` is set.
    """

    def __init__(self, config: SystemConfig):
        self._config = config
        super().__init__({
            "bus": In(axi_lite_signature(ADDR_BITS)),
            "cpu": Out(cpu_signature(config)),
            "completed": In(bits_for(len(instance_numbering(config)))),
            "irq": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        config, cpu = self._config, self.cpu
        processes = config.hts.processes
        m.submodules.subordinate = subordinate = AxiLiteSubordinate(ADDR_BITS)
        wiring.connect(m, wiring.flipped(self.bus), subordinate.bus)

        state = _State(config)
        m.d.comb += self.irq.eq((state.irq_status & state.irq_enable).any())
        raised = self._count_and_latch(m, state)

        offset, data = subordinate.write_addr, subordinate.write_data
        writes = {register.name: subordinate.write & (offset == register.offset) for register in REGISTERS}
        running_pid = cpu.running.bit_select(state.pid, 1)
        refused = {
            "START": (data[processes:] != 0) | (data[:processes] & cpu.running).any(),
            "PID": data >= processes,
            "LOAD_ADDR": data >= config.hts.program_words,
            "LOAD_DATA": running_pid,
            "LENGTH": running_pid | (data > config.hts.program_words),
            "WINDOW_BASE": data > config.memory.blocks,
            "WINDOW_BLOCKS": running_pid | (state.window_base + data > config.memory.blocks),
        }
        writable = {register.name for register in REGISTERS if register.access != "RO"}
        mapped = Cat(*(offset == register.offset for register in REGISTERS if register.name in writable)).any()
        error = ~mapped | (subordinate.write_strb != 0b1111) | Cat(
            *((offset == offset_of(name)) & refusal for name, refusal in refused.items())).any()
        m.d.comb += subordinate.write_error.eq(error)
        accepted = {name: strobe & ~error for name, strobe in writes.items()}
        self._write(m, state, accepted, data, raised)
        self._read(m, state, subordinate)
        return m

    def _count_and_latch(self, m: Module, state: "_State"):
        """Counters and sticky status; returns this cycle's interrupt events, as ``IRQ_STATUS`` bits."""
        cpu, processes = self.cpu, self._config.hts.processes
        with m.If(cpu.start.any()):
            m.d.sync += [state.cycles.eq(0), state.tasks.eq(0)]
        with m.Else():
            m.d.sync += state.tasks.eq(state.tasks + self.completed)
            with m.If(cpu.running.any()):
                m.d.sync += state.cycles.eq(state.cycles + 1)
        fault_bits = Mux(cpu.fault.valid, Const(1, processes) << cpu.fault.pid, 0)
        m.d.sync += [state.ended.eq(state.ended & ~cpu.start | cpu.ended),
                     state.faulted.eq(state.faulted & ~cpu.start | fault_bits)]
        with m.If(cpu.fault.valid):
            m.d.sync += [state.fault_pc.eq(cpu.fault.pc), state.fault_pid.eq(cpu.fault.pid),
                         state.fault_cause.eq(cpu.fault.cause)]
        return Cat(cpu.ended, Const(0, FAULT_IRQ_SHIFT - processes), fault_bits)

    def _write(self, m: Module, state: "_State", accepted: dict, data, raised):
        cpu = self.cpu
        m.d.sync += [cpu.start.eq(Mux(accepted["START"], data, 0)), cpu.load.valid.eq(0),
                     cpu.length.valid.eq(0), cpu.window.valid.eq(0)]
        with m.If(accepted["PID"]):
            m.d.sync += [state.pid.eq(data), state.load_word.eq(0)]
        with m.If(accepted["LOAD_ADDR"]):
            m.d.sync += [state.load_addr.eq(data), state.load_word.eq(0)]
        with m.If(accepted["LOAD_DATA"]):
            m.d.sync += [state.load_word.eq(state.load_word + 1),
                         state.load_shadow.eq(Cat(state.load_shadow[DATA_BITS:], data))]
            with m.If(state.load_word == _WORDS_PER_INSTRUCTION - 1):
                m.d.sync += [cpu.load.valid.eq(1), cpu.load.pid.eq(state.pid), cpu.load.addr.eq(state.load_addr),
                             cpu.load.word.eq(Cat(state.load_shadow, data)),
                             state.load_addr.eq(state.load_addr + 1)]
        with m.If(accepted["LENGTH"]):
            m.d.sync += [cpu.length.valid.eq(1), cpu.length.pid.eq(state.pid), cpu.length.words.eq(data)]
        with m.If(accepted["WINDOW_BASE"]):
            m.d.sync += state.window_base.eq(data)
        with m.If(accepted["WINDOW_BLOCKS"]):
            m.d.sync += [cpu.window.valid.eq(1), cpu.window.pid.eq(state.pid),
                         cpu.window.base.eq(state.window_base), cpu.window.blocks.eq(data)]
        with m.If(accepted["IRQ_ENABLE"]):
            m.d.sync += state.irq_enable.eq(data)
        cleared = Mux(accepted["IRQ_STATUS"], data, 0)
        # An event in the cycle of the write that clears its bit still counts.
        m.d.sync += state.irq_status.eq(state.irq_status & ~cleared | raised)

    def _read(self, m: Module, state: "_State", subordinate: AxiLiteSubordinate):
        cpu = self.cpu
        values = {
            "ID": IDENTIFIER, "PROCESSES": self._config.hts.processes, "RUNNING": cpu.running,
            "ENDED": state.ended, "FAULTED": state.faulted, "FAULT_PC": state.fault_pc,
            "FAULT_INFO": Cat(state.fault_pid, Const(0, 8 - len(state.fault_pid)), state.fault_cause),
            "IRQ_ENABLE": state.irq_enable, "IRQ_STATUS": state.irq_status,
            "CYCLES_LO": state.cycles[:DATA_BITS], "CYCLES_HI": state.cycles_hi, "TASKS": state.tasks,
            "PID": state.pid, "LOAD_ADDR": state.load_addr, "WINDOW_BASE": state.window_base,
        }
        assert set(values) == {register.name for register in REGISTERS if register.access != "WO"}
        offset = subordinate.read_addr
        readable = Cat(*(offset == offset_of(name) for name in values)).any()
        with m.Switch(offset):
            for name, value in values.items():
                with m.Case(offset_of(name)):
                    m.d.comb += subordinate.read_data.eq(value)
        m.d.comb += subordinate.read_error.eq(~readable)
        with m.If(subordinate.read & (offset == offset_of("CYCLES_LO"))):
            m.d.sync += state.cycles_hi.eq(state.cycles[DATA_BITS:])


class _State:
    """The control block's registers."""

    def __init__(self, config: SystemConfig):
        widths, processes = config.widths, config.hts.processes
        self.pid = Signal(widths.pid)
        self.load_addr = Signal(fetch_pc_width(config))
        self.load_word = Signal(range(_WORDS_PER_INSTRUCTION))
        self.load_shadow = Signal(INSTRUCTION_BITS - DATA_BITS)
        self.window_base = Signal(widths.home_end)
        self.ended, self.faulted = Signal(processes), Signal(processes)
        self.fault_pc, self.fault_pid = Signal(widths.pc), Signal(widths.pid)
        self.fault_cause = Signal(3)
        self.irq_enable, self.irq_status = Signal(DATA_BITS), Signal(DATA_BITS)
        self.cycles, self.cycles_hi = Signal(2 * DATA_BITS), Signal(DATA_BITS)
        self.tasks = Signal(DATA_BITS)
