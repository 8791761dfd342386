"""Data layouts shared by the RTL blocks, sized from one :class:`SystemConfig`.

Every width comes from ``config.widths`` (hts/config.py); the instruction itself is
``hts.isa.Instruction``. The functions here build layouts and the few pieces of
combinational logic that several blocks repeat (range overlap, look-up by tag), and
:func:`record_register`.

Which registers have a reset. Only control state does: valid bits, pointers, counters,
allocation masks. Task records, TLB and tracker entries, age and overlap matrices,
snapshots, queue words and the CDB's ticket order mean something only while a valid bit
(or a depth, or a head/tail pair) says so, and are written before that bit is set, so
they carry no reset, as FPGA practice has it: on the default the reset net then reaches
some 1,500 of the 12,800 flip-flops rather than nearly all of them, and the flip-flops
without it pack with any neighbour. ``tests/hdl/test_rtl_hts.py`` resets the scheduler
in the middle of runs and checks that the run after the reset matches the model, cycle
for cycle.
"""

import operator

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from hts.config import SystemConfig
from hts.isa import FIELDS, FaultCause

from .mutation import mutable
from .primitives import select

__all__ = ["region_layout", "tracker_entry_layout", "queued_task_layout", "task_layout", "decoded_task_layout",
           "decoded_signature", "window_layout", "window_request_layout", "fault_layout",
           "whole_task", "entry_of", "entry_at", "region_end", "overlaps", "retargeted_ranges", "record_register"]


def region_layout(config: SystemConfig) -> data.StructLayout:
    """A memory region: physical first block (TM blocks sit above home) and a block count."""
    widths = config.widths
    return data.StructLayout({"base": widths.phys_block, "blocks": widths.region_blocks})


def window_layout(config: SystemConfig) -> data.StructLayout:
    """A process's window of home memory, blocks ``[base, end)``."""
    width = config.widths.home_end
    return data.StructLayout({"base": width, "end": width})


def window_request_layout(config: SystemConfig) -> data.StructLayout:
    """The CPU setting process ``pid``'s window to ``blocks`` blocks from ``base``."""
    width = config.widths.home_end
    return data.StructLayout({"valid": 1, "pid": config.widths.pid, "base": width, "blocks": width})


def fault_layout(config: SystemConfig) -> data.StructLayout:
    """A process stopping at ``pc`` of its committed path, and why."""
    return data.StructLayout({"valid": 1, "pid": config.widths.pid, "pc": config.widths.pc, "cause": FaultCause})


def tracker_entry_layout(config: SystemConfig) -> data.StructLayout:
    """What the memory tracker keeps per in-flight task (its index is the task's tag): the
    regions it searches, and the rest of the task that no queue updates (pid, pc, task
    ID, metadata), kept here once instead of in every queue the task passes through."""
    region = region_layout(config)
    return data.StructLayout({"pid": config.widths.pid, "reads": region, "writes": region,
                              "pc": config.widths.pc, "task_id": _field_width("task_id"),
                              "metadata": _field_width("metadata")})


def queued_task_layout(config: SystemConfig) -> data.StructLayout:
    """A decoded task as the window and the reservation stations hold it: its tag, and
    what changes or is searched while it waits there. ``mask`` holds the speculation IDs
    of the unresolved branches it was decoded under; ``waits`` holds the tags not yet
    broadcast that it depends on. The rest of the task is its tag's tracker entry, which
    takes the retargets the model applies to queued tasks, by the same rule."""
    return data.StructLayout({
        "tag": config.widths.tag,
        "accel_class": config.widths.accel_class,
        "mask": config.hts.spec_ids,
        "waits": config.hts.tracker_entries,
    })


def task_layout(config: SystemConfig) -> data.StructLayout:
    """A whole task, as the dispatch arbiter delivers it to an accelerator shell and the
    trace shows it: the fields of a queued task and of its tag's tracker entry. ``reads``
    and ``writes`` are physical (TM when remapped). The fields are listed here rather
    than concatenated from the two layouts: their order is the bit order of every port
    that carries a task, and the synthesis results in docs/results.md were measured with
    this one (a concatenated order gave Yosys 588 more LUT4s, from the same logic)."""
    widths, region = config.widths, region_layout(config)
    return data.StructLayout({
        "tag": widths.tag,
        "pid": widths.pid,
        "pc": widths.pc,
        "task_id": _field_width("task_id"),
        "accel_class": widths.accel_class,
        "reads": region,
        "writes": region,
        "metadata": _field_width("metadata"),
        "mask": config.hts.spec_ids,
        "waits": config.hts.tracker_entries,
    })


def decoded_task_layout(config: SystemConfig) -> data.StructLayout:
    """A task as decode hands it to the enqueue stage: the whole task but ``waits``, which
    the enqueue stage finds in the tracker the next cycle."""
    return data.StructLayout({name: shape for name, shape in task_layout(config).members.items() if name != "waits"})


def decoded_signature(config: SystemConfig) -> wiring.Signature:
    """A task leaving decode for the enqueue stage, as decode drives it."""
    return wiring.Signature({"valid": Out(1), "task": Out(decoded_task_layout(config))})


def entry_of(entries, tag):
    """``entries[tag]`` (an array view indexed by a signal) as an AND-OR multiplexer on the
    decoded index: a view of the element layout, or a plain value for plain elements.

    Indexing the view directly shifts the whole array by ``tag`` times the element
    width, which Yosys builds as a log-shifter over every bit of every element: the
    dispatch arbiter's look-up in the default's 16 tracker entries took 3,567 LUT4s that
    way and takes 667 as an AND-OR."""
    return entry_at(entries, [tag == index for index in range(len(entries))])


def entry_at(entries, one_hot):
    """The element of ``entries`` whose bit is set in ``one_hot`` (an AND-OR), as
    :func:`entry_of` gives it."""
    selected = select(one_hot, entries)
    element = entries.shape().elem_shape
    return element(selected) if isinstance(element, data.Layout) else selected


def whole_task(task, *parts) -> list:
    """Assignments making the ``task_layout`` value ``task`` of ``parts`` whose fields make
    it up: a queued task and its tag's tracker entry, or a decoded task and its waits."""
    return [getattr(task, name).eq(getattr(part, name)) for part in parts for name, _ in part.shape()]


def _field_width(name: str) -> int:
    return next(width for field, _, width in FIELDS if field == name)


def region_end(region) -> Value:
    """The block after ``region``, one bit wider than its base so that a region reaching
    the top of the physical space does not wrap."""
    return region.base + region.blocks


def overlaps(a, b, *, a_end=None, b_end=None) -> Value:
    """Whether two regions share a block: two range comparators and two non-empty checks.

    An end held in a register (``a_end``, ``b_end``) saves the adder in front of its
    comparator.
    """
    a_end = region_end(a) if a_end is None else a_end
    b_end = region_end(b) if b_end is None else b_end
    before = mutable("overlap_touching_ends", operator.lt, operator.le)
    return (a.blocks != 0) & (b.blocks != 0) & before(a.base, b_end) & before(b.base, a_end)


def retargeted_ranges(task, tag, retarget) -> tuple[Value, Value, Value]:
    """``task``'s reads and writes after this cycle's retarget, and whether one changed.

    ``retarget`` has the copy-back engine's ``retarget``, ``retarget_tm``,
    ``retarget_home`` and ``retarget_producer``. The producer (by ``tag``) writes home
    from now on, and a reader whose range is exactly the TM copy reads home
    (``_apply_retarget`` of ``models/hts.py``, which matches writes on the TM region:
    while the TLB entry lives, only its producer writes it).
    """
    reads = mutable("retarget_skips_readers", retarget.retarget & (task.reads == retarget.retarget_tm), 0)
    writes = retarget.retarget & (retarget.retarget_producer == tag)
    return (Mux(reads, retarget.retarget_home, task.reads), Mux(writes, retarget.retarget_home, task.writes),
            reads | writes)


def record_register(m: Module, port, name: str) -> Signal:
    """A register without reset driving the output ``port``, for state that a valid bit
    guards (see the module docstring); the block assigns it in ``sync`` instead of the port."""
    register = Signal(port.shape(), name=name, reset_less=True)
    m.d.comb += port.eq(register)
    return register
