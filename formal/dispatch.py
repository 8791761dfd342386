"""Formal harness of the dispatch arbiter (``hts.hdl.dispatch``) in front of the real ASR."""

from amaranth.hdl import Cat, Module, Mux, Signal

from hts.hdl.asr import AcceleratorStatus
from hts.hdl.dispatch import DispatchArbiter
from hts.hdl.interfaces import flat_instance
from hts.hdl.primitives import popcount

from .harness import Harness, PropertyGroup, free_inputs

__all__ = ["DispatchHarness"]


class DispatchHarness(Harness):
    """The arbiter and the ASR wired as the top level wires them (has_free, free_instance
    one way, occupy the other), with the stations, the memory tracker and the CDB left
    free."""

    GROUPS = (PropertyGroup("dispatch", "prove", 3),)
    ASSUMPTIONS = ("offers_of_their_class",)

    def build(self, m: Module):
        config, width = self.config, self.config.hts.dispatch_width
        classes = range(len(config.accelerators))
        arbiter = m.submodules.arbiter = DispatchArbiter(config)
        asr = m.submodules.asr = AcceleratorStatus(config)
        m.d.comb += [arbiter.has_free.eq(asr.has_free), arbiter.free_instance.eq(asr.free_instance),
                     asr.occupy.eq(arbiter.occupy)]
        free_inputs(m, arbiter, wired=(arbiter.has_free, arbiter.free_instance))
        free_inputs(m, asr, wired=(asr.occupy,))
        offers = arbiter.offer_valid

        # The top level routes a task to the station of its class (insert_valid, hdl/hts.py).
        self.assume(m, "offers_of_their_class", Cat(*(~offers[c] | (arbiter.offer_task[c].accel_class == c)
                                                      for c in classes)).all())

        eligible = offers & asr.has_free
        granted = popcount(arbiter.take)
        self.check(m, "dispatch", "grants_only_offers_with_a_free_instance", (arbiter.take & ~eligible) == 0)
        self.check(m, "dispatch", "at_most_dispatch_width", granted <= width)
        self.check(m, "dispatch", "grants_as_many_as_it_may",
                   granted == Mux(popcount(eligible) < width, popcount(eligible), width))
        self.check(m, "dispatch", "grants_the_lowest_classes", Cat(*(
            ~(arbiter.take[d] & eligible[c] & ~arbiter.take[c]) for c in classes for d in classes if c < d)).all())
        # Liveness within the cycle: the lowest eligible class never waits.
        self.check(m, "dispatch", "lowest_eligible_offer_is_granted", Cat(*(
            ~eligible[c] | arbiter.take[c] | eligible[:c].any() for c in classes)).all())
        self._check_instances(m, arbiter, asr)
        self.cover(m, "dispatch", "full_width", granted == width)
        if len(classes) > width:   # else every eligible offer is granted
            self.cover(m, "dispatch", "an_eligible_offer_waits", (eligible & ~arbiter.take).any())
        self.cover(m, "dispatch", "an_offer_waits_for_a_busy_class", (offers & ~asr.has_free).any())

    def _check_instances(self, m: Module, arbiter, asr):
        """Every task goes to a free instance of its class, one task per instance."""
        config = self.config
        for c, acc in enumerate(config.accelerators):
            request = arbiter.occupy[c]
            first = flat_instance(config, c, 0)
            self.check(m, "dispatch", f"class_{c}_dispatches_to_a_free_instance",
                       ~request.valid | ((request.instance < acc.count)
                                         & ~asr.busy[first:first + acc.count].bit_select(request.instance, 1)))
        delivered = Cat(*(port.valid for port in arbiter.deliver))
        self.check(m, "dispatch", "deliveries_only_to_free_instances", (delivered & asr.busy) == 0)
        self.check(m, "dispatch", "one_delivery_per_grant", popcount(delivered) == popcount(arbiter.take))
        # The trace shows last cycle's grants.
        slots = list(arbiter.trace)
        grants_before = Signal.like(popcount(arbiter.take))
        m.d.sync += grants_before.eq(popcount(arbiter.take))
        self.check(m, "dispatch", "trace_slots_one_per_grant", popcount(Cat(*(s.valid for s in slots)))
                   == grants_before)
        if len(slots) > 1:
            self.check(m, "dispatch", "trace_slots_distinct_instances", Cat(*(
                ~(a.valid & b.valid) | (a.task.accel_class != b.task.accel_class) | (a.instance != b.instance)
                for k, a in enumerate(slots) for b in slots[k + 1:])).all())
