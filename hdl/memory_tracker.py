"""Memory tracker: a CAM of the regions every in-flight task reads and writes.

RTL of ``hts.models.memory_tracker``; see docs/microarchitecture.md for its timing. One
entry per task from decode until its completion is broadcast; the entry index is the
task's tag. It also keeps the age matrix of the tasks in flight, which every block that
must pick "the oldest" reads (a tag's age never changes while it is valid, so the matrix
is written only when a tag is allocated). A retarget by the copy-back engine rewrites
ranges in place (``_apply_retarget`` of ``models/hts.py``).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.config import SystemConfig

from .layouts import overlaps, region_layout, tracker_entry_layout

__all__ = ["MemoryTracker"]


class MemoryTracker(wiring.Component):
    """Range CAM over ``hts.tracker_entries`` entries, with lowest-free-tag allocation.

    Look-up ports (combinational, on the state registered at the start of the cycle):

    - ``query_reads``, ``query_writes`` (in, from decode): the physical regions of the
      task decode is planning;
    - ``ignoring`` (in, from the CDB): tags broadcast this cycle, which a task decoded now
      need not wait for;
    - ``depends`` (out, to decode): tags the planned task must wait for (RAW, WAR, WAW);
    - ``branch_block`` (in, from decode): the physical block a memory branch reads;
    - ``writers`` (out, to decode): tags that write ``branch_block``, ``ignoring`` aside;
    - ``free_tag``, ``has_free`` (out, to decode): the lowest free tag, and whether any is.

    Updates (registered, land at the clock edge):

    - ``alloc`` (in, from decode): allocate ``free_tag`` with ``alloc_entry``;
    - ``release`` (in, from the CDB and the squash logic): tags to free;
    - ``retarget``, ``retarget_tm``, ``retarget_home``, ``retarget_producer`` (in, from
      the copy-back engine): the entry of tag ``retarget_producer`` writes
      ``retarget_home``, and every entry whose ``reads`` is exactly ``retarget_tm`` reads
      ``retarget_home``, the entry allocated in this cycle included (the model decodes
      before the end-of-cycle rewrite). The model matches writes on the TM region rather
      than on the producer's tag: while the TLB entry lives, only its producer writes it.

    State read by other blocks:

    - ``valid`` (out): one bit per tag in use; ``entries`` (out): their regions and pid;
    - ``older`` (out): ``older[j]`` has bit ``i`` set when task ``i`` was decoded before
      task ``j`` (both valid);
    - ``holds_tm`` (out, to the TLB's ``tm_idle``): after this cycle's updates some entry
      still reads or writes TM (combinational, on the state the edge will register).
    """

    def __init__(self, config: SystemConfig):
        self._count = count = config.hts.tracker_entries
        region = region_layout(config)
        entry = tracker_entry_layout(config)
        super().__init__({
            "query_reads": In(region),
            "query_writes": In(region),
            "ignoring": In(count),
            "depends": Out(count),
            "branch_block": In(config.widths.phys_block),
            "writers": Out(count),
            "free_tag": Out(config.widths.tag),
            "has_free": Out(1),
            "alloc": In(1),
            "alloc_entry": In(entry),
            "release": In(count),
            "retarget": In(1),
            "retarget_tm": In(region),
            "retarget_home": In(region),
            "retarget_producer": In(config.widths.tag),
            "valid": Out(count),
            "entries": Out(data.ArrayLayout(entry, count)),
            "older": Out(data.ArrayLayout(count, count)),
            "holds_tm": Out(1),
        })
        self._home_blocks = config.memory.blocks

    def elaborate(self, platform):
        m = Module()
        count = self._count
        branch_region = Signal.like(self.query_reads)
        m.d.comb += [branch_region.base.eq(self.branch_block), branch_region.blocks.eq(1)]

        depends, writers = [], []
        for tag in range(count):
            entry = self.entries[tag]
            live = self.valid[tag] & ~self.ignoring[tag]
            depends.append(live & (overlaps(self.query_reads, entry.writes)
                                   | overlaps(self.query_writes, entry.reads)
                                   | overlaps(self.query_writes, entry.writes)))
            writers.append(live & overlaps(branch_region, entry.writes))
        m.d.comb += [self.depends.eq(Cat(*depends)), self.writers.eq(Cat(*writers))]

        # Lowest free tag: the last assignment in a descending scan wins.
        m.d.comb += self.has_free.eq(~self.valid.all())
        for tag in reversed(range(count)):
            with m.If(~self.valid[tag]):
                m.d.comb += self.free_tag.eq(tag)

        allocated = Signal(count)
        remaining = self.valid & ~self.release
        in_tm = []
        for tag in range(count):
            landing = Signal.like(self.alloc_entry, name=f"landing_{tag}")
            m.d.comb += landing.eq(self.entries[tag])
            with m.If(self.alloc & (self.free_tag == tag)):
                m.d.comb += landing.eq(self.alloc_entry)
            following = self._retargeted(m, tag, landing)
            m.d.sync += self.entries[tag].eq(following)
            stays = remaining[tag] | allocated[tag]
            in_tm.append(stays & (self._in_tm(following.reads) | self._in_tm(following.writes)))
        m.d.comb += self.holds_tm.eq(Cat(*in_tm).any())
        with m.If(self.alloc):
            m.d.comb += allocated.eq(1 << self.free_tag)
            for tag in range(count):
                # The new task is younger than every task staying, and older than none.
                with m.If(self.free_tag == tag):
                    m.d.sync += self.older[tag].eq(remaining)
                with m.Else():
                    m.d.sync += self.older[tag].eq(self.older[tag] & ~allocated)
        m.d.sync += self.valid.eq(remaining | allocated)
        return m

    def _in_tm(self, region):
        return (region.blocks != 0) & (region.base >= self._home_blocks)

    def _retargeted(self, m: Module, tag: int, entry):
        """``entry`` (for ``tag``) with this cycle's retarget applied.

        Entries not in use are rewritten too: their contents are never read, so the valid
        bit need not gate the rewrite.
        """
        result = Signal.like(self.alloc_entry, name=f"retargeted_{tag}")
        m.d.comb += result.eq(entry)
        with m.If(self.retarget):
            with m.If(entry.reads == self.retarget_tm):
                m.d.comb += result.reads.eq(self.retarget_home)
            with m.If(self.retarget_producer == tag):
                m.d.comb += result.writes.eq(self.retarget_home)
        return result
