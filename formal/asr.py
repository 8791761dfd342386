"""Formal harness of the accelerator status register (``hts.hdl.asr``)."""

from amaranth.hdl import Cat, Module, Signal

from hts.hdl.asr import AcceleratorStatus
from hts.hdl.interfaces import flat_instance, instance_numbering

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["AsrHarness"]


class AsrHarness(Harness):
    """The ASR with the dispatch arbiter and the CDB left free. The dispatch harness
    proves, with the real arbiter in front of it, what ``occupy_only_free`` assumes here."""

    GROUPS = (PropertyGroup("status", "prove", 2),)
    ASSUMPTIONS = ("occupy_only_free", "release_only_busy")

    def build(self, m: Module):
        config = self.config
        asr = m.submodules.asr = AcceleratorStatus(config)
        free_inputs(m, asr)
        occupied = Signal(len(instance_numbering(config)))
        m.d.comb += occupied.eq(Cat(*(asr.occupy[c].valid & (asr.occupy[c].instance == i)
                                      for c, i in instance_numbering(config))))
        for c, acc in enumerate(config.accelerators):
            first = flat_instance(config, c, 0)
            busy = asr.busy[first:first + acc.count]
            request = asr.occupy[c]
            # The dispatch arbiter sends a task only to the instance the ASR reports free
            # (proved in the dispatch harness).
            self.assume(m, "occupy_only_free", ~request.valid | (asr.has_free[c] & (request.instance
                                                                                     == asr.free_instance[c])))
            lowest_free = Cat(*(~busy[i] & busy[:i].all() if i else ~busy[0] for i in range(acc.count)))
            self.check(m, "status", f"class_{c}_has_free_iff_an_instance_is_free", asr.has_free[c] == ~busy.all())
            self.check(m, "status", f"class_{c}_free_instance_is_the_lowest_free",
                       ~asr.has_free[c] | ((asr.free_instance[c] < acc.count)
                                           & lowest_free.bit_select(asr.free_instance[c], 1)))
        # The CDB grants and the squash's aborts name instances running a task.
        self.assume(m, "release_only_busy", (asr.release & ~asr.busy) == 0)

        # Busy bits change only by a dispatch (busy from the next cycle) or a release
        # (free from the next cycle).
        was_busy, was_occupied, was_released = Signal.like(asr.busy), Signal.like(occupied), Signal.like(asr.release)
        m.d.sync += [was_busy.eq(asr.busy), was_occupied.eq(occupied), was_released.eq(asr.release)]
        after_reset = Signal()
        m.d.sync += after_reset.eq(1)
        self.check(m, "status", "dispatched_instance_becomes_busy", ~after_reset | ((was_occupied & ~asr.busy) == 0))
        self.check(m, "status", "released_instance_becomes_free", ~after_reset | ((was_released & asr.busy) == 0))
        self.check(m, "status", "busy_changes_only_by_dispatch_or_release",
                   ~after_reset | (((was_busy ^ asr.busy) & ~(was_occupied | was_released)) == 0))
        self.cover(m, "status", "every_instance_busy", asr.busy.all())
        self.cover(m, "status", "busy_instance_released", after_reset & (was_released != 0))
