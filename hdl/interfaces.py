"""Signatures and layouts that cross between the RTL blocks, sized from one :class:`SystemConfig`.

Every shape that more than one block builds its ports or signals with is defined here
once, with the widths, enumerations and instance numbering it is made of: blocks import
them from here, never from a sibling block. A layout that only its own block uses stays
in that block's module. Every width comes from ``config.widths`` (hts/config.py); the
instruction itself is ``hts.isa.Instruction``. The logic several blocks apply to these
values (range overlap, look-up by tag, retarget) is in ``hts.hdl.primitives``.
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
    """Bits of the fetch PC and the program length, which both reach ``program_words``.

    ``config.widths.pc`` addresses a word; one more value is needed for "past the last
    word", where a finished program's fetch PC rests.
    """
    return bits_for(config.hts.program_words + 1)


# A memory word is as wide as a register (np.int32 words in hts.models.memory).
WORD_BITS = REGISTER_BITS


def word_address_width(config: SystemConfig) -> int:
    """Bits of a word address over home memory and the TM above it."""
    return config.widths.phys_block + (config.memory.block_words.bit_length() - 1)


def instance_numbering(config: SystemConfig) -> list[tuple[int, int]]:
    """(class, instance) of every flat instance index, in flat order."""
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
    """A program word as the program memory holds it: the instruction and its pc-relative
    target (a jump's or an ``if``'s; meaningless for other instructions), computed when
    the word is loaded: ``target`` is pc + signed C saturated at ``program_words`` (past
    the end: nothing to fetch), and whether the word is ``malformed`` (an illegal word
    whatever the state it meets, ``hts.hdl.task_queue.malformed``). Neither fetch nor
    decode adds or compares IDs in its cycle (``hts.hdl.task_queue``)."""
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
    """What the memory tracker keeps per in-flight task (its index is the task's tag): the
    regions it searches, and the rest of the task that no queue updates (pid, pc, task
    ID, metadata), kept here once instead of in every queue the task passes through."""
    region = region_layout(config)
    return data.StructLayout({"pid": config.widths.pid, "reads": region, "writes": region,
                              "pc": config.widths.pc, "task_id": _field_width("task_id"),
                              "metadata": _field_width("metadata")})


def tracker_register_layout(config: SystemConfig) -> data.StructLayout:
    """The part of a tracker entry kept in flip-flops: what searches read and retargets
    rewrite (the regions), the pid, which a process's end reads from every entry, and the
    pc, which the trace reads for the window's issue slots."""
    return data.StructLayout({name: shape for name, shape in tracker_entry_layout(config).members.items()
                              if name in ("pid", "pc", "reads", "writes")})


def task_record_layout(config: SystemConfig) -> data.StructLayout:
    """The part of a tracker entry that only the delivered task carries (task ID,
    metadata): written once, read by tag, so the tracker keeps it in distributed RAM."""
    return data.StructLayout({name: shape for name, shape in tracker_entry_layout(config).members.items()
                              if name not in tracker_register_layout(config).members})


def record_read_signature(config: SystemConfig) -> wiring.Signature:
    """A read of a tag's task record, as the reader drives it: ``tag`` out, and the
    ``record`` of that tag back in the same cycle (an asynchronous RAM read)."""
    return wiring.Signature({"tag": Out(config.widths.tag), "record": In(task_record_layout(config))})


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
    """A whole task, as decode plans it and the enqueue stage holds it: the fields of a
    queued task and of its tag's tracker entry. ``reads`` and ``writes`` are physical
    (TM when remapped). The fields are listed here rather than concatenated from the two
    layouts: their order is the bit order of every port that carries a task, and the
    synthesis results in docs/results.md were measured with this one (a concatenated
    order gave Yosys 588 more LUT4s, from the same logic)."""
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


def granted_task_layout(config: SystemConfig) -> data.StructLayout:
    """What an accelerator shell takes of a task in its grant's cycle: the tag (for the
    broadcast) and the mask (for the squash's aborts and the confirms). The rest of the
    task follows the cycle after (``delivered_task_layout``), when it starts."""
    task = task_layout(config).members
    return data.StructLayout({name: task[name] for name in ("tag", "mask")})


def delivered_task_layout(config: SystemConfig) -> data.StructLayout:
    """A task as the dispatch arbiter delivers it to an accelerator shell in the cycle
    after its grant, when it starts, and as the trace shows it: the whole task but its
    record (task ID, metadata), which comes beside it, read from the tracker's RAM. Both
    are read by the tag registered at the grant, so that no tracker read is behind the
    grant (docs/hardware.md, "Timing")."""
    record = task_record_layout(config).members
    return data.StructLayout({name: shape for name, shape in task_layout(config).members.items()
                              if name not in record})


def held_task_layout(config: SystemConfig) -> data.StructLayout:
    """What an accelerator shell holds of its task while it runs: what the scheduler reads
    back (the tag for the broadcast, the mask for the squash, pid and pc for the trace)
    and the output region, which a retarget may change. The rest of the task (its input
    region and class, its task ID and metadata, all with ``start``) reaches the core; a
    core keeps what it needs of it."""
    task = task_layout(config).members
    return data.StructLayout({name: task[name] for name in ("tag", "pid", "pc", "mask", "writes")})


def decoded_task_layout(config: SystemConfig) -> data.StructLayout:
    """A task as decode hands it to the enqueue stage: the whole task but ``waits``, which
    the enqueue stage finds in the tracker the next cycle."""
    return data.StructLayout({name: shape for name, shape in task_layout(config).members.items() if name != "waits"})


def decoded_signature(config: SystemConfig) -> wiring.Signature:
    """A task leaving decode for the enqueue stage, as decode drives it; ``reads_copy``,
    one bit per TLB slot: the slot whose TM copy its ``reads`` are (none: it reads home),
    by which a retarget in its decode cycle finds it
    (:func:`~hts.hdl.primitives.retargeted_ranges`)."""
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
    WINDOW_FULL = 6
    TRACKER_FULL = 7
    SPECULATIVE_FAULT = 8
    TLB_CONFLICT = 9
    TLB_FULL = 10
    FAULT = 11          # a committed-path access leaves the process's window: the process stops
    OPERANDS = 12       # the head's region base was written as it became the head (compared again)


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
    """One open loop (``hts.models.loop_stack.LoopFrame``).

    ``remaining`` counts iterations still to start after the current one; it starts at
    ``lbeg``'s A - 1, and A is an immediate, so it needs the width of the A field.
    """
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
    """What decode supplies for a new entry; the TLB adds its TM base, not yet produced."""
    return data.StructLayout({"pid": config.widths.pid, "home": region_layout(config),
                              "mask": config.hts.spec_ids, "producer": config.widths.tag})


def tlb_query_layout(config: SystemConfig) -> data.StructLayout:
    """What decode looks up in the TLB for a queue head: a task's input and output
    regions and a memory branch's block (bases cut to the physical width)."""
    region = region_layout(config)
    return data.StructLayout({"read": region, "write": region, "block": config.widths.phys_block})


class HeadSource(enum.Enum, shape=1):
    """Where a task queue's head comes from at the next edge, for what decode keeps of it."""
    STAY = 0          # the head stays, and what was kept for it holds
    NEXT = 1          # the next head (or the head itself, compared again)


def tlb_lookahead_layout(config: SystemConfig) -> data.StructLayout:
    """A process's head at the next edge, for the TLB to compare with its homes a cycle
    ahead: the query of the head and of the next one, and which it will be (``take``,
    late in the cycle)."""
    query = tlb_query_layout(config)
    return data.StructLayout({"stay": query, "next": query, "take": HeadSource})


def tlb_checks_layout() -> data.StructLayout:
    """Which relations kept for a head its look-up means, for simulation's assertions: its
    regions' (a task) and its block's (a memory branch)."""
    return data.StructLayout({"regions": 1, "block": 1})


def occupy_layout(config: SystemConfig) -> data.StructLayout:
    """One class's dispatch into the ASR: whether it dispatches, and to which instance."""
    return data.StructLayout({"valid": 1, "instance": config.widths.instance})


def dma_signature(config: SystemConfig) -> wiring.Signature:
    """A core's memory master port (its DMA engine), as seen from the core.

    One beat moves ``hts.copyback_words_per_cycle`` consecutive words, the same port width
    as the copy-back engine; lane ``k`` of ``wdata``/``rdata`` is the word at ``addr + k``.

    - Request: ``addr`` (word address; TM words sit above home memory), ``read`` or
      ``write`` (never both; both low: no request), ``wdata`` (with ``write``). The master
      holds the request until the memory accepts it with ``ready`` high in the same cycle.
    - Read response: ``rvalid`` with ``rdata``, one beat per accepted read, in request
      order, at least one cycle after acceptance. The master always takes it.
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

    - ``start`` (in): the task starts this cycle, the cycle after its grant; ``task``
      carries it but its record, and means nothing in other cycles (the core keeps what it
      needs of it);
    - ``record`` (in): the starting task's task ID and metadata, with ``start`` only (the
      dispatch arbiter reads ``task`` and ``record`` by the tag it registered at the grant);
    - ``writes`` (in): the output region of the task the shell holds, from ``start`` on.
      Its base may change (retarget) until ``writeback`` rises, and not after;
    - ``release`` (in): the task leaves (granted or aborted); the core is idle from the
      next cycle;
    - ``done`` (out): the task has finished (held until ``release``);
    - ``writeback`` (out): the core is writing its output back, or has done so (held until
      ``release``); it reads ``writes`` from its first cycle on;
    - ``dma`` (out): the memory master port (:func:`dma_signature`).
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
    """The CPU's port into the scheduler, as seen from the CPU.

    - ``load`` (out): ``valid``, ``pid``, ``addr``, ``word``: write one program word of a
      process that is not running;
    - ``length`` (out): ``valid``, ``pid``, ``words``: the program's length (fetch stops
      there), set before the start;
    - ``start`` (out): one bit per process; those set start together. The cycle after
      the start is the model's cycle 0 for them: fetch begins at word 0, and GPRs, loop
      stack and speculation state start from reset;
    - ``running`` (in): per process, started and not yet ended;
    - ``ended`` (in): per process, a one-cycle pulse when it ends: every task done and
      every speculative result home (the paper's notification bus; the model's ``end``);
    - ``window`` (out, :func:`window_request_layout`): ``valid``, ``pid``,
      ``base``, ``blocks``: the home blocks the process may touch, set before its start
      (reset: all of home memory);
    - ``fault`` (in, :func:`fault_layout`): ``valid``, ``pid``, ``pc``,
      ``cause``, for one cycle: the process stopped at that instruction of its committed
      path, which touches memory outside its window or cannot execute (``ILLEGAL``). Its
      older tasks finish, then it ends as if drained (the model reports the fault as an error at the source line).
    """
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
    """Memory branches' reads, one lane per branch-unit slot, as seen from the scheduler.

    ``valid[i]`` with ``block[i]`` (out) asks for the first word of a (physical) block;
    the memory answers on ``data[i]`` (in) exactly ``timing.memory_latency`` cycles later,
    with the word as it stands in that cycle (``hts.hdl.branch_unit``, *Memory reads*).
    """
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
    """Beats of the largest region an entry can map (its size field all ones)."""
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
    """One ``dispatch`` event of the cycle before: the task as delivered (its class is
    ``task.accel_class``) and its instance. The port shows a grant the cycle after it,
    with the task read by the registered tag, as the shell gets it."""
    return data.StructLayout({"valid": 1, "instance": config.widths.instance, "task": delivered_task_layout(config)})


def _held_layout(config: SystemConfig) -> data.StructLayout:
    widths = config.widths
    return data.StructLayout({"pid": widths.pid, "pc": widths.pc, "tag": widths.tag})


def _branch_view_layout(config: SystemConfig) -> data.StructLayout:
    widths = config.widths
    return data.StructLayout({"pid": widths.pid, "pc": widths.pc, "kind": BranchKind})


def trace_layout(config: SystemConfig) -> data.StructLayout:
    """Everything an event of the cycle is made of, valid bits first.

    - ``end``: per process, it ends this cycle (also the CPU port's ``ended``);
    - ``complete``, ``abort``: per flat accelerator instance (``hts.hdl.asr``), its task
      is granted the CDB, or aborted; ``held``: the task each instance holds;
    - ``branch_resolving``, ``branch_taken``, ``branches``: per branch-unit slot
      (``hts.hdl.branch_unit``: speculation IDs first, then one per process);
    - ``squash``: speculation IDs mispredicted; ``squashed_tags``: enqueue-stage, window
      and station tasks removed by them (the process of each tag tells which squash removed it);
    - ``retarget``, ``copyback``: the copy-back engine's events;
    - ``dispatch``: the arbiter's grants of the cycle before, lowest class first;
      ``issue``: window to stations in the cycle before, oldest first; ``enqueue``: the
      task entering the window, with the tags it waits for; ``decode``: the task decoded
      into the enqueue stage; ``fault``: decode's fault (:func:`fault_layout`).
    """
    hts = config.hts
    instances = len(instance_numbering(config))
    slots = hts.spec_ids + hts.processes
    issue = data.StructLayout({"valid": 1, "pid": config.widths.pid, "pc": config.widths.pc,
                               "tag": config.widths.tag})
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
        "issue": data.ArrayLayout(issue, hts.dispatch_width),
        "enqueue": data.StructLayout({"valid": 1, "pid": config.widths.pid, "pc": config.widths.pc,
                                      "tag": config.widths.tag, "waits": hts.tracker_entries}),
        "decode": data.StructLayout({"valid": 1, "task": decoded_task_layout(config)}),
        "fault": fault_layout(config),
    })
