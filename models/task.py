"""The task record every stage of the model passes on, from decode to completion."""

from dataclasses import dataclass, field

__all__ = ["DecodedTask"]


@dataclass
class DecodedTask:
    seq: int                  # decode order, for oldest-first selection
    tag: int                  # memory tracker entry
    pid: int
    pc: int
    task_id: int
    accel_id: int
    class_index: int
    reads: tuple[int, int]    # (base, blocks) as delivered to the accelerator: TM when remapped
    writes: tuple[int, int]
    metadata: int
    waits_for: set[int] = field(default_factory=set)   # tags its search found
    ready: bool = False       # every producer it waited for is released (woken)
    mask: int = 0             # speculation IDs of the unresolved branches it is under
    data: str | None = None   # digest of what it read and wrote, once completed
    squashed: bool = False    # removed by a squash: queued, or completed under a branch that went the other way
