"""Branch unit: resolves ``if`` instructions that decode could not resolve at once.

Kinds (docs/isa.md): RR compares registers the cycle after decode. A memory branch's
physical block is translated at decode; the next cycle the branch unit searches the
memory tracker for the block's writers (a cycle of its own, so that decode does one
associative search). With none it is MR: it reads the first word of the block, which
arrives ``timing.memory_latency`` cycles after that search and is compared then.
Otherwise it is BR: it waits until every writer has been broadcast on the CDB, then
reads the block like MR. The operands that come from registers are captured at decode.
The compare is registered: every branch resolves the cycle after its compare
(``OUTCOME_DELAY``), so that nothing a compare decides acts in its own cycle.

A speculated MR or BR branch holds a speculation ID and a checkpoint of the process's
GPRs and loop stack; its process decodes on down the not-taken path meanwhile.

:class:`BranchUnit` is the stage (RTL: ``hdl/branch_unit.py``). The pending branches
live in each process's context, which it is given; decode allocates their speculation
IDs (as in the RTL, decode holds the pool), and the IDs resolutions free go back to it.
What its resolutions mean for the rest of the scheduler (the tasks a squash removes,
the masks a confirmation clears) it returns, for the top level to apply.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hts.isa import Word, branch_taken

from .loop_stack import LoopFrame
from .memory_tracker import MemoryTracker, Search

if TYPE_CHECKING:       # decode.py imports this module for PendingBranch
    from .decode import ProcessContext

__all__ = ["PendingBranch", "Checkpoint", "BranchUnit", "Resolution", "OUTCOME_DELAY"]

# Cycles from a branch's compare to its resolution: the outcome is registered.
OUTCOME_DELAY = 1


@dataclass(frozen=True)
class Checkpoint:
    """Front-end state to return to when a speculated branch turns out taken."""
    gprs: tuple[int, ...]
    loops: tuple[LoopFrame, ...]


@dataclass
class PendingBranch:
    pid: int
    pc: int
    word: Word
    kind: str                         # "RR", "MR" or "BR" (a memory branch is "MR" until searched)
    y: int                            # R[B] at decode
    x: int | None = None              # R[A] at decode, for RR
    waits_for: set[int] = field(default_factory=set)   # BR: writers not yet broadcast
    resolves_at: int | None = None    # cycle of resolution, once known
    taken: bool | None = None         # the outcome, compared OUTCOME_DELAY cycles before resolves_at
    block: int = 0                    # MR/BR: physical block read (TM when remapped)
    searched: bool = True             # a memory branch's writers are searched from the cycle after decode
    writer_search: Search = field(default_factory=Search)
    mask: int = 0                     # speculation IDs it is itself under
    spec_id: int | None = None        # set when speculated (predicted not taken)
    checkpoint: Checkpoint | None = None

    @property
    def target(self) -> int:
        return self.pc + self.word.offset

    def search(self, tracker: MemoryTracker, broadcast: frozenset[int], t: int, latency: int):
        """From the cycle after decode, a row a cycle: the block's writers in flight make the
        branch BR, none MR.

        The tracker then holds every task decoded before the branch and none after it
        (decode starts no search during one); the tags broadcast now are left out.
        """
        if not tracker.search_writers(self.writer_search, self.block, ignoring=broadcast):
            return
        writers = self.writer_search.found
        if writers:
            self.kind, self.waits_for = "BR", set(writers)
        else:
            self.kind, self.resolves_at = "MR", t + latency + OUTCOME_DELAY
        self.searched = True


@dataclass
class Resolution:
    """What the branch unit did in one cycle; the IDs take effect at the end of the cycle."""
    squashed: list[PendingBranch] = field(default_factory=list)   # their processes are restored
    resolved: list[tuple[PendingBranch, bool]] = field(default_factory=list)   # (branch, taken), in order
    confirmed: list[int] = field(default_factory=list)   # IDs predicted right: they leave every mask
    freed: list[int] = field(default_factory=list)       # IDs of squashed branches

    @property
    def progress(self) -> bool:
        return bool(self.squashed or self.resolved)


class BranchUnit:
    def __init__(self, memory_latency: int):
        self.memory_latency = memory_latency

    def decode(self, t: int, proc: "ProcessContext", pc: int, word: Word, tlb, spec_id: int | None) -> PendingBranch:
        """Take the ``if`` at ``pc`` from decode; a memory branch reads its block through ``tlb``
        and, with a ``spec_id`` from decode's pool, is speculated not taken."""
        branch = PendingBranch(proc.pid, pc, word, "RR", proc.gprs[word.b], mask=proc.spec_mask)
        if not word.memory_branch:
            branch.x, branch.resolves_at = proc.gprs[word.a], t + 1 + OUTCOME_DELAY
            proc.branches.append(branch)
            return branch
        branch.kind, branch.block, branch.searched = "MR", tlb.translate_block(word.a, proc.pid), False
        if spec_id is not None:
            branch.spec_id = spec_id
            branch.checkpoint = Checkpoint(proc.gprs.snapshot(), proc.loops.snapshot())
            proc.spec_mask |= 1 << branch.spec_id
        proc.branches.append(branch)
        return branch

    def resolve(self, t: int, processes: list["ProcessContext"], memory) -> Resolution:
        """Last cycle's mispredictions squash; then the branches due now resolve, on the
        outcomes compared last cycle; then the branches due next cycle compare.

        A misprediction takes effect the cycle after its resolution (the squash is
        registered): until then its process decodes on, and what it decodes carries the
        mispredicted ID, so the squash removes it with the rest. A younger branch of the
        process due in the cycle of the misprediction does not resolve: the squash removes it.
        A memory branch compares the block's first word as it stands in its compare cycle,
        after that cycle's completions.
        """
        outcome = Resolution()
        for proc in processes:
            if proc.mispredicted is not None:
                self._squash(t, proc, proc.mispredicted, outcome.freed)
                outcome.squashed.append(proc.mispredicted)
                proc.mispredicted = None
        for proc in processes:
            self._resolve_due(t, proc, outcome)
            self._compare(t, proc, memory)
        return outcome

    @staticmethod
    def _compare(t: int, proc: "ProcessContext", memory):
        for branch in proc.branches:
            if branch.resolves_at == t + OUTCOME_DELAY:
                x = branch.x if branch.kind == "RR" else memory.first_word(branch.block)
                branch.taken = branch_taken(branch.word.cond, x, branch.y)

    @staticmethod
    def _resolve_due(t: int, proc: "ProcessContext", outcome: Resolution):
        doomed = 0          # IDs mispredicted this cycle
        for branch in [b for b in proc.branches if b.resolves_at == t]:
            if branch not in proc.branches or branch.mask & doomed:     # under an older misprediction
                continue
            taken = branch.taken
            outcome.resolved.append((branch, taken))
            proc.branches.remove(branch)
            if branch.spec_id is None:
                if taken:
                    proc.queue.redirect(branch.target)
                proc.resume_at = t + 1
            elif taken:
                proc.mispredicted = branch
                doomed |= 1 << branch.spec_id
            else:
                outcome.confirmed.append(branch.spec_id)

    @staticmethod
    def _squash(t: int, proc: "ProcessContext", branch: PendingBranch, freed: list[int]):
        """The front end goes back to the branch's checkpoint and fetches its target."""
        bit = 1 << branch.spec_id
        for younger in [b for b in proc.branches if b.mask & bit]:
            proc.branches.remove(younger)
            if younger.spec_id is not None:
                freed.append(younger.spec_id)
        proc.gprs.restore(branch.checkpoint.gprs)
        proc.loops.restore(branch.checkpoint.loops)
        proc.spec_mask = branch.mask
        proc.skip_depth = 0
        proc.queue.redirect(branch.target)
        proc.resume_at = t + 1
        freed.append(branch.spec_id)

    def search(self, t: int, processes: list["ProcessContext"], tracker: MemoryTracker,
               broadcast: frozenset[int]) -> bool:
        """The memory branch decoded before searches the next row of the tracker for its
        block's writers; whether one did."""
        searching = self.searching(processes)
        for branch in searching:
            branch.search(tracker, broadcast, t, self.memory_latency)
        return bool(searching)

    @staticmethod
    def searching(processes: list["ProcessContext"]) -> list[PendingBranch]:
        """The memory branch whose tracker search is under way, if any."""
        return [branch for proc in processes for branch in proc.branches if not branch.searched]

    def searching_next_cycle(self, processes: list["ProcessContext"], tracker: MemoryTracker) -> bool:
        """At the start of a cycle: a memory branch's search will still be under way in the next one."""
        return any(branch.writer_search.row < tracker.rows - 1 for branch in self.searching(processes))

    # ---- end of cycle ---------------------------------------------------------------------

    def wake(self, t: int, processes: list["ProcessContext"], released: set[int]):
        """BR branches whose last writer was released read their block from the next cycle;
        released writers leave a search under way."""
        for branch in self.searching(processes):
            branch.writer_search.release(released)
        for proc in processes:
            for branch in proc.branches:
                if branch.kind == "BR" and branch.waits_for:
                    branch.waits_for -= released
                    if not branch.waits_for:
                        branch.resolves_at = t + self.memory_latency + OUTCOME_DELAY

    def confirm(self, spec_id: int, processes: list["ProcessContext"]):
        """The ID leaves the masks of the processes and their branches."""
        clear = ~(1 << spec_id)
        for proc in processes:
            proc.spec_mask &= clear
            for branch in [*proc.branches, *([proc.mispredicted] if proc.mispredicted else [])]:
                branch.mask &= clear

    @staticmethod
    def retarget(processes: list["ProcessContext"], tm: tuple[int, int], home_base: int):
        """Branches reading the TM region ``tm`` read home instead (its producer now writes home)."""
        for proc in processes:
            for branch in proc.branches:
                if tm[0] <= branch.block < tm[0] + tm[1]:
                    branch.block += home_base - tm[0]

    @staticmethod
    def reads_tm(processes: list["ProcessContext"], home_blocks: int) -> bool:
        """Whether a pending branch reads a block in TM (which keeps TM allocated)."""
        return any(branch.block >= home_blocks for proc in processes for branch in proc.branches)
