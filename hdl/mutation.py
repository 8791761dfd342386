"""Injected bugs: the catalogue of named RTL mutants that measures the verification.

:func:`mutable` returns the correct value unless ``HTS_MUTANT`` (read at elaboration) names
that mutant; ``hts mutate`` runs them all (docs/verification.md).
"""

import os
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["ENVIRONMENT", "CATALOGUE", "Mutant", "active", "injected", "mutable"]

ENVIRONMENT = "HTS_MUTANT"


@dataclass(frozen=True)
class Mutant:
    """One bug: its name, the block whose file holds it, and what it breaks."""

    name: str
    block: str
    bug: str


CATALOGUE: dict[str, Mutant] = {mutant.name: mutant for mutant in (
    Mutant("overlap_touching_ends", "memory_tracker", "range compare off by one: regions that only touch overlap"),
    Mutant("tracker_raw_ignored", "memory_tracker", "a read after an in-flight write does not wait (RAW)"),
    Mutant("tracker_war_ignored", "memory_tracker", "a write after an in-flight read does not wait (WAR)"),
    Mutant("tracker_waw_ignored", "memory_tracker", "a write after an in-flight write does not wait (WAW)"),
    Mutant("tracker_branch_writers_ignored", "hts", "a memory branch reads before its block's writers end"),
    Mutant("tracker_broadcast_kept", "memory_tracker", "the tags broadcast this cycle are still searched"),
    Mutant("tracker_lane_skips_entry", "memory_tracker",
           "the last comparator lane compares row 0's entry in every row: it skips the entries of later rows"),
    Mutant("search_skips_a_row", "primitives", "a search moves two rows a cycle: it misses every other row"),
    Mutant("enqueue_waits_on_itself", "enqueue", "a task registers as its own successor"),
    Mutant("successor_list_drops_waiter", "wakeup",
           "the last lane's lists keep only their first successor: later ones are never written"),
    Mutant("pending_count_underflows", "wakeup", "a count grows by one per row that found producers, not per producer"),
    Mutant("walk_stops_early", "wakeup", "the walker leaves a list one slot before its end"),
    Mutant("tag_reused_while_held", "memory_tracker",
           "a tag is allocated while its list is walked or a squashed task's count still names it"),
    Mutant("lists_woken_lost", "ready_lists", "the walker's woken task never joins its ready list"),
    Mutant("lists_woken_first", "ready_lists", "a woken task joins its ring before the task pending from enqueue"),
    Mutant("lists_offer_dead", "ready_lists", "a list offers its head after a squash removed its task"),
    Mutant("lists_release_listed", "ready_lists",
           "a listed tag is not held: a dead entry's tag is reallocated and a new task's record read by it"),
    Mutant("dispatch_grants_highest_class", "dispatch",
           "the one-way arbiter grants the highest-numbered eligible class, not the lowest"),
    Mutant("dispatch_ignores_busy", "dispatch", "an offer is eligible without a free instance"),
    Mutant("asr_highest_free", "asr", "a dispatch goes to the highest free instance"),
    Mutant("asr_release_lost", "asr", "a released instance stays busy"),
    Mutant("cdb_priority_inverted", "cdb", "same-cycle tickets queue higher instance first"),
    Mutant("cdb_width_plus_one", "cdb", "the CDB grants one ticket more than its width"),
    Mutant("branch_compare_inverted", "branch_unit", "a branch's equality compare is inverted"),
    Mutant("branch_confirm_lost", "branch_unit", "a speculation predicted right is never confirmed"),
    Mutant("branch_squash_spares_nested", "branch_unit", "the squash keeps the younger branches under it"),
    Mutant("retarget_skips_readers", "memory_tracker", "a retarget rewrites its producer but none of its readers"),
    Mutant("copyback_ignores_touches", "tlb", "a copy-back starts while in-flight tasks touch the home region"),
    Mutant("tlb_oldest_hit", "tlb", "a TLB search takes the oldest overlapping entry, not the youngest"),
    Mutant("tlb_wrap_ignored", "tlb", "a TLB search takes the highest slot, not the nearest behind the tail"),
    Mutant("decode_indirect_ignored", "decode", "an indirect region's base is the register number, not R[A]"),
    Mutant("loop_count_off_by_one", "decode", "a loop runs its body once more"),
    Mutant("gpr_restore_lost", "gpr", "a squash does not restore the registers from the checkpoint"),
    Mutant("gpr_write_over_checkpoint", "gpr", "a write may take the RAM a live checkpoint keeps the register in"),
    Mutant("loop_stack_restore_lost", "loop_stack", "a squash does not restore the loop stack from the checkpoint"),
    Mutant("latency_one_late", "accelerator", "a core is done one cycle after its latency"),
    Mutant("abort_lost", "hts", "a squash does not abort the running tasks it covers"),
    Mutant("queued_sets_keep_confirmed", "hts", "a confirmed ID's set of queued tags is not emptied"),
)}


def active() -> str | None:
    """The mutant named by ``HTS_MUTANT``, or None; an unknown name is an error naming the variable."""
    name = os.environ.get(ENVIRONMENT) or None
    if name is not None and name not in CATALOGUE:
        raise ValueError(f"{ENVIRONMENT}={name!r} names no mutant; the catalogue has {', '.join(CATALOGUE)}")
    return name


def mutable(name: str, correct, mutant):
    """``mutant`` while the mutant ``name`` is active, else ``correct``."""
    if name not in CATALOGUE:
        raise KeyError(f"mutant {name!r} is not in the catalogue (hts.hdl.mutation.CATALOGUE)")
    return mutant if active() == name else correct


@contextmanager
def injected(name: str | None):
    """Elaborate with mutant ``name`` active (None: none) inside the block, in this process and its children."""
    previous = os.environ.get(ENVIRONMENT)
    if name is None:
        os.environ.pop(ENVIRONMENT, None)
    else:
        os.environ[ENVIRONMENT] = name
    try:
        active()
        yield
    finally:
        if previous is None:
            os.environ.pop(ENVIRONMENT, None)
        else:
            os.environ[ENVIRONMENT] = previous
