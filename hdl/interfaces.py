"""Signatures and layouts that cross between the RTL blocks, sized from one :class:`SystemConfig`.

Blocks import them from here, never from a sibling; the logic applied to them is in
``hts.hdl.primitives``.
"""

from amaranth.hdl import Cat, Value
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig, bits_for
from hts.isa import FIELDS, REGISTER_BITS, Cond, FaultCause, Instruction

__all__ = ["fetch_pc_width", "WORD_BITS", "word_address_width", "instance_numbering", "flat_instance",
           "region_layout", "program_word_layout", "queue_entry_layout", "READ_AHEAD_FIELDS", "read_ahead_layout",
           "read_ahead_registers", "window_request_layout", "fault_layout",
           "tracker_entry_layout",
           "tracker_register_layout", "task_record_layout", "record_read_signature",
           "queued_task_layout", "task_layout", "granted_task_layout", "delivered_task_layout", "held_task_layout",
           "decoded_task_layout",
           "decoded_signature",
           "Stall", "BranchKind", "restore_layout", "branch_layout", "loop_frame_layout",
           "tlb_entry_layout", "tlb_request_layout", "tlb_query_layout", "HeadSource", "tlb_lookahead_layout",
           "tlb_checks_layout",
           "occupy_layout", "dma_signature", "core_signature",
           "retarget_layout", "cpu_signature", "branch_read_signature", "beats_per_block", "largest_copy_beats",
           "copyback_trace_layout", "retarget_trace_layout", "dispatch_trace_layout", "trace_layout"]


def fetch_pc_width(config: SystemConfig) -> int:
    """Bits of the fetch PC and the program length: ``program_words`` + 1 values (one past the end)."""
    return bits_for(config.hts.program_words + 1)


# A memory word is as wide as a register (np.int32 words in hts.models.memory).
WORD_BITS = REGISTER_BITS


def word_address_width(config: SystemConfig) -> int:
    """Bits of a word address over home memory and the TM above it."""
    return config.widths.phys_block + (config.memory.block_words.bit_length() - 1)


def instance_numbering(config: SystemConfig) -> list[tuple[int, int]]:
    """(class, instance) of every flat instance index, in flat (class-major) order."""
    return [(class_index, instance) for class_index, acc in enumerate(config.accelerators)
            for instance in range(acc.count)]


def flat_instance(config: SystemConfig, class_index: int, instance: int) -> int:
    """The flat index of ``instance`` of class ``class_index`` (class-major)."""
    return sum(acc.count for acc in config.accelerators[:class_index]) + instance


def _field_width(name: str) -> int:
    return next(width for field, _, width in FIELDS if field == name)


def region_layout(config: SystemConfig) -> data.StructLayout:
    """A memory region: physical first block (TM blocks sit above home) and a block count."""
    widths = config.widths
    return data.StructLayout({"base": widths.phys_block, "blocks": widths.region_blocks})


def program_word_layout(config: SystemConfig) -> data.StructLayout:
    """A program word as program memory holds it, with its ``target`` and ``malformed`` computed at load."""
    return data.StructLayout({"word": Instruction, "target": fetch_pc_width(config), "malformed": 1})


def queue_entry_layout(config: SystemConfig) -> data.StructLayout:
    """One fetched program word and where it came from."""
    return data.StructLayout({"pc": config.widths.pc, **program_word_layout(config).members})


# The fields whose registers decode reads a cycle ahead, from the word behind the head.
READ_AHEAD_FIELDS = ("a", "b", "c")


def read_ahead_layout(config: SystemConfig) -> data.ArrayLayout:
    """The GPR indices a word's ``READ_AHEAD_FIELDS`` name (their low bits)."""
    return data.ArrayLayout(config.widths.gpr_index, len(READ_AHEAD_FIELDS))


def read_ahead_registers(config: SystemConfig, word) -> Value:
    """``word``'s value of :func:`read_ahead_layout`."""
    return Cat(*(getattr(word, field)[:config.widths.gpr_index] for field in READ_AHEAD_FIELDS))


def window_request_layout(config: SystemConfig) -> data.StructLayout:
    """The CPU setting process ``pid``'s window to ``blocks`` blocks from ``base``."""
    width = config.widths.home_end
    return data.StructLayout({"valid": 1, "pid": config.widths.pid, "base": width, "blocks": width})


def fault_layout(config: SystemConfig) -> data.StructLayout:
    """A process stopping at ``pc`` of its committed path, and why."""
    return data.StructLayout({"valid": 1, "pid": config.widths.pid, "pc": config.widths.pc, "cause": FaultCause})


def tracker_entry_layout(config: SystemConfig) -> data.StructLayout:
    """What the memory tracker keeps per in-flight task (index = tag): its regions and the rest of the task."""
    region = region_layout(config)
    return data.StructLayout({"pid": config.widths.pid, "reads": region, "writes": region,
                              "pc": config.widths.pc, "task_id": _field_width("task_id"),
                              "metadata": _field_width("metadata")})


def tracker_register_layout(config: SystemConfig) -> data.StructLayout:
    """The part of a tracker entry in flip-flops: regions, pid and pc, which searches, retargets and the trace read."""
    return data.StructLayout({name: shape for name, shape in tracker_entry_layout(config).members.items()
                              if name in ("pid", "pc", "reads", "writes")})


def task_record_layout(config: SystemConfig) -> data.StructLayout:
    """The part of a tracker entry in distributed RAM: task ID and metadata, read by tag."""
    return data.StructLayout({name: shape for name, shape in tracker_entry_layout(config).members.items()
                              if name not in tracker_register_layout(config).members})


def record_read_signature(config: SystemConfig) -> wiring.Signature:
    """A read of a tag's task record, as the reader drives it: ``tag`` out, the ``record`` back in the same cycle."""
    return wiring.Signature({"tag": Out(config.widths.tag), "record": In(task_record_layout(config))})


def queued_task_layout(config: SystemConfig) -> data.StructLayout:
    """A task as the enqueue stage hands it on and a ready list offers it: tag, class,
    speculation ``mask``, whether it is ``ready``."""
    return data.StructLayout({
        "tag": config.widths.tag,
        "accel_class": config.widths.accel_class,
        "mask": config.hts.spec_ids,
        "ready": 1,
    })


def task_layout(config: SystemConfig) -> data.StructLayout:
    """A whole task: a queued task's fields and its tracker entry's; regions are physical. The
    field order is the bit order of every port carrying a task (the synthesis figures used it).
    """
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
        "ready": 1,
    })


def granted_task_layout(config: SystemConfig) -> data.StructLayout:
    """What a shell takes of a task in its grant's cycle: tag and mask."""
    task = task_layout(config).members
    return data.StructLayout({name: task[name] for name in ("tag", "mask")})


def delivered_task_layout(config: SystemConfig) -> data.StructLayout:
    """A task as delivered to a shell the cycle after its grant (and as the trace shows it): all but its record."""
    record = task_record_layout(config).members
    return data.StructLayout({name: shape for name, shape in task_layout(config).members.items()
                              if name not in record})


def held_task_layout(config: SystemConfig) -> data.StructLayout:
    """What a shell holds of its task: tag, pid, pc, mask and output region."""
    task = task_layout(config).members
    return data.StructLayout({name: task[name] for name in ("tag", "pid", "pc", "mask", "writes")})


def decoded_task_layout(config: SystemConfig) -> data.StructLayout:
    """A task as decode hands it to the enqueue stage: all but ``ready``."""
    return data.StructLayout({name: shape for name, shape in task_layout(config).members.items() if name != "ready"})


def decoded_signature(config: SystemConfig) -> wiring.Signature:
    """A task leaving decode; ``reads_copy``: the TLB slot whose TM copy its reads are (none: home)."""
    return wiring.Signature({"valid": Out(1), "task": Out(decoded_task_layout(config)),
                             "reads_copy": Out(config.hts.tlb_entries)})


class Stall(enum.Enum, shape=4):
    """Why a process decoded nothing this cycle (the model's stall reasons)."""
    NONE = 0
    DONE = 1
    BRANCH = 2
    DRAIN = 3
    FETCH = 4
    DECODER_BUSY = 5
    TRACKER_FULL = 6
    SPECULATIVE_FAULT = 7
    TLB_CONFLICT = 8
    TLB_FULL = 9
    FAULT = 10          # a committed-path access leaves the process's window: the process stops
    OPERANDS = 11       # the head's region base was written as it became the head (compared again)
    SCAN = 12           # a tracker search goes on next cycle: a task or memory branch waits for it
    SUCCESSORS_FULL = 13  # a producer's successor list has fewer than two free slots


class BranchKind(enum.Enum, shape=2):
    RR = 0
    MR = 1
    BR = 2


def restore_layout(config: SystemConfig) -> data.StructLayout:
    """A misprediction of one of the process's branches, from the branch unit."""
    return data.StructLayout({"valid": 1, "slot": bits_for(config.hts.spec_ids), "mask": config.hts.spec_ids})


def branch_layout(config: SystemConfig) -> data.StructLayout:
    """An ``if`` handed to the branch unit, with everything captured at decode."""
    hts, widths = config.hts, config.widths
    return data.StructLayout({
        "valid": 1,
        "pid": widths.pid,
        "pc": widths.pc,
        "target": fetch_pc_width(config),      # saturated at program_words: past the end
        "cond": Cond,
        "kind": BranchKind,
        "x": REGISTER_BITS,                     # RR: R[A]
        "y": REGISTER_BITS,                     # R[B]
        "block": widths.phys_block,             # MR/BR: physical block read
        "speculated": 1,
        "spec_id": bits_for(hts.spec_ids),
        "mask": hts.spec_ids,                   # the IDs the branch is itself under
    })


def loop_frame_layout(config: SystemConfig) -> data.StructLayout:
    """One open loop; ``remaining``, from ``lbeg``'s A − 1, has the A field's width."""
    trip_count = next(width for name, _, width in FIELDS if name == "a")
    widths = config.widths
    return data.StructLayout({"body_start": widths.pc, "counter": widths.gpr_index, "remaining": trip_count})


def tlb_entry_layout(config: SystemConfig) -> data.StructLayout:
    widths = config.widths
    return data.StructLayout({
        "pid": widths.pid,
        "home": region_layout(config),
        "tm_base": widths.phys_block,
        "mask": config.hts.spec_ids,       # unresolved speculation IDs of the producer
        "producer": widths.tag,            # producer's tag, meaningful while not producer_done
        "producer_done": 1,
    })


def tlb_request_layout(config: SystemConfig) -> data.StructLayout:
    """What decode supplies for a new TLB entry; the TLB adds its TM base."""
    return data.StructLayout({"pid": config.widths.pid, "home": region_layout(config),
                              "mask": config.hts.spec_ids, "producer": config.widths.tag})


def tlb_query_layout(config: SystemConfig) -> data.StructLayout:
    """What decode looks up in the TLB for a head: a task's input and output, a memory branch's block."""
    region = region_layout(config)
    return data.StructLayout({"read": region, "write": region, "block": config.widths.phys_block})


class HeadSource(enum.Enum, shape=1):
    """Where a task queue's head comes from at the next edge, for what decode keeps of it."""
    STAY = 0          # the head stays, and what was kept for it holds
    NEXT = 1          # the next head (or the head itself, compared again)


def tlb_lookahead_layout(config: SystemConfig) -> data.StructLayout:
    """A process's head at the next edge: the queries of the head and of the next one, and which it will be."""
    query = tlb_query_layout(config)
    return data.StructLayout({"stay": query, "next": query, "take": HeadSource})


def tlb_checks_layout() -> data.StructLayout:
    """Which kept relations the head's look-up means (simulation's assertions only)."""
    return data.StructLayout({"regions": 1, "block": 1})


def occupy_layout(config: SystemConfig) -> data.StructLayout:
    """One class's dispatch into the ASR: whether it dispatches, and to which instance."""
    return data.StructLayout({"valid": 1, "instance": config.widths.instance})


def dma_signature(config: SystemConfig) -> wiring.Signature:
    """A core's memory master port, as seen from the core: a beat of ``copyback_words_per_cycle``
    words (lane ``k`` at ``addr + k``); a request is held until ``ready``, each accepted read
    answered by ``rvalid`` with ``rdata``, in order, a cycle or more later.
    """
    beat = WORD_BITS * config.hts.copyback_words_per_cycle
    return wiring.Signature({
        "addr": Out(word_address_width(config)),
        "read": Out(1),
        "write": Out(1),
        "wdata": Out(beat),
        "ready": In(1),
        "rdata": In(beat),
        "rvalid": In(1),
    })


def core_signature(config: SystemConfig) -> wiring.Signature:
    """What a core offers its shell, as seen from the core.

    ``start`` (in): the task starts now, with ``task`` and ``record`` (meaningful then only);
    ``writes`` (in): the output region, whose base may change until ``writeback`` rises;
    ``release`` (in): the task leaves; ``done``, ``writeback`` (out): held until ``release``;
    ``dma``: the memory master port.
    """
    return wiring.Signature({
        "start": In(1),
        "task": In(delivered_task_layout(config)),
        "record": In(task_record_layout(config)),
        "writes": In(region_layout(config)),
        "release": In(1),
        "done": Out(1),
        "writeback": Out(1),
        "dma": Out(dma_signature(config)),
    })


def retarget_layout(config: SystemConfig) -> data.StructLayout:
    """A retarget of one shell's task: its output goes to ``base`` instead (same size)."""
    return data.StructLayout({"valid": 1, "base": config.widths.phys_block})


def cpu_signature(config: SystemConfig) -> wiring.Signature:
    """The CPU's port into the scheduler, as seen from the CPU (docs/hardware.md, "The top level")."""
    hts, widths = config.hts, config.widths
    return wiring.Signature({
        "load": Out(data.StructLayout({"valid": 1, "pid": widths.pid, "addr": widths.pc, "word": Instruction})),
        "length": Out(data.StructLayout({"valid": 1, "pid": widths.pid, "words": fetch_pc_width(config)})),
        "start": Out(hts.processes),
        "running": In(hts.processes),
        "ended": In(hts.processes),
        "window": Out(window_request_layout(config)),
        "fault": In(fault_layout(config)),
    })


def branch_read_signature(config: SystemConfig) -> wiring.Signature:
    """Memory branches' reads, a lane per branch-unit slot, answered ``timing.memory_latency`` cycles later."""
    slots = config.hts.spec_ids + config.hts.processes
    return wiring.Signature({
        "valid": Out(slots),
        "block": Out(data.ArrayLayout(config.widths.phys_block, slots)),
        "data": In(data.ArrayLayout(REGISTER_BITS, slots)),
    })


def beats_per_block(config: SystemConfig) -> int:
    """Beats of one block: a power of two, as ``copyback_words_per_cycle`` divides ``block_words``."""
    return config.memory.block_words // config.hts.copyback_words_per_cycle


def largest_copy_beats(config: SystemConfig) -> int:
    """Beats of the largest region an entry can map."""
    return ((1 << config.widths.region_blocks) - 1) * beats_per_block(config)


def copyback_trace_layout(config: SystemConfig) -> data.StructLayout:
    """A ``copyback`` event: ``tm`` is the first TM block, ``cycles`` the copy's duration."""
    widths = config.widths
    return data.StructLayout({"valid": 1, "pid": widths.pid, "home": region_layout(config),
                              "tm": widths.phys_block, "cycles": range(largest_copy_beats(config) + 1)})


def retarget_trace_layout(config: SystemConfig) -> data.StructLayout:
    """A ``retarget`` event: ``tag`` is the producer's, ``tm`` the first TM block."""
    widths = config.widths
    return data.StructLayout({"valid": 1, "pid": widths.pid, "tag": widths.tag, "home": region_layout(config),
                              "tm": widths.phys_block})


def dispatch_trace_layout(config: SystemConfig) -> data.StructLayout:
    """One ``dispatch`` event of the cycle before: the task as delivered, and its instance."""
    return data.StructLayout({"valid": 1, "instance": config.widths.instance, "task": delivered_task_layout(config)})


def _held_layout(config: SystemConfig) -> data.StructLayout:
    widths = config.widths
    return data.StructLayout({"pid": widths.pid, "pc": widths.pc, "tag": widths.tag})


def _branch_view_layout(config: SystemConfig) -> data.StructLayout:
    widths = config.widths
    return data.StructLayout({"pid": widths.pid, "pc": widths.pc, "kind": BranchKind})


def trace_layout(config: SystemConfig) -> data.StructLayout:
    """Everything an event of the cycle is made of (the trace port), valid bits first; dispatch
    is the cycle before's.
    """
    hts = config.hts
    instances = len(instance_numbering(config))
    slots = hts.spec_ids + hts.processes
    return data.StructLayout({
        "end": hts.processes,
        "complete": instances,
        "abort": instances,
        "held": data.ArrayLayout(_held_layout(config), instances),
        "branch_resolving": slots,
        "branch_taken": slots,
        "branches": data.ArrayLayout(_branch_view_layout(config), slots),
        "squash": hts.spec_ids,
        "squashed_tags": hts.tracker_entries,
        "retarget": retarget_trace_layout(config),
        "copyback": copyback_trace_layout(config),
        "dispatch": data.ArrayLayout(dispatch_trace_layout(config), hts.dispatch_width),
        "enqueue": data.StructLayout({"valid": 1, "pid": config.widths.pid, "pc": config.widths.pc,
                                      "tag": config.widths.tag, "producers": range(max(hts.tracker_entries, 2))}),
        "decode": data.StructLayout({"valid": 1, "task": decoded_task_layout(config)}),
        "fault": fault_layout(config),
    })
