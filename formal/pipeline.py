"""Formal harness of the back end as one: ready lists, dispatch arbiter, ASR, CDB and
accelerator shells, with the top level's queued tag sets, wired as ``hts.hdl.hts.HTS`` wires
them, checked for lost or duplicated task records, tags freed more than once, and tasks
left running under a squashed speculation ID."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.hdl._ir import Fragment
from amaranth.lib import data, wiring

from hts.hdl.accelerator import AcceleratorShell
from hts.hdl.asr import AcceleratorStatus
from hts.hdl.cdb import CommonDataBus
from hts.hdl.dispatch import DispatchArbiter
from hts.hdl.hts import connect_completion, connect_dispatch, queued_tag_sets
from hts.hdl.interfaces import core_signature, instance_numbering
from hts.hdl.primitives import index_set, popcount
from hts.hdl.ready_lists import ReadyLists

from .harness import Harness, PropertyGroup, free_inputs
from .ready_lists import ListShadow

__all__ = ["AnyLatencyCore", "PipelineHarness"]


class AnyLatencyCore(wiring.Component):
    """A core that finishes after any number of cycles: ``done`` rises in whichever cycle
    after the start a free input chooses and stays until the task leaves, as
    ``core_signature`` requires. It stands for every latency at once, so no counter state
    enters the induction. It writes back as it finishes and moves no data."""

    def __init__(self, config):
        super().__init__(core_signature(config))
        self.running = Signal()        # between its start and its release (for the harness)

    def elaborate(self, platform):
        m = Module()
        running, done = self.running, Signal()
        with m.If(self.start):
            m.d.sync += running.eq(1)
        with m.Elif(self.release):
            m.d.sync += running.eq(0)
        with m.If(self.start | self.release):
            m.d.sync += done.eq(0)
        with m.Elif(running & AnySeq(1)):
            m.d.sync += done.eq(1)
        m.d.comb += [self.done.eq(done), self.writeback.eq(done), self.dma.read.eq(0), self.dma.write.eq(0)]
        return m


class PipelineHarness(Harness):
    """Records from the queued tag sets to the shells and out through the CDB.

    Decode, the enqueue stage, the wake-up, the branch unit (``squash``, ``confirm``) and
    the memory tracker (``tasks``) are left free; tasks leave the enqueue stage with free
    tags, ready or not, and any tag may be woken. A *place* is a bit of the queued set
    (``queued_tag_sets``), a shell or a bit of the CDB's broadcast register (a tag granted
    last cycle); a record is a valid place and the tag it holds. The ready lists hold no
    records, only the tags of queued tasks and of dead ones; a :class:`ListShadow` follows
    them. ``released`` is the top level's set of tags freed this cycle: the CDB's
    broadcast, the squashed queued tags and the shells the squash hits.
    """

    # Depth 2 closes both inductions; the base cases are deeper so that a broken rule fails
    # from reset: in records, tasks appended in the first cycles fill both instances of a
    # class and a third is offered by the fourth, whose loss shows in the fifth.
    GROUPS = (PropertyGroup("records", "prove", 6), PropertyGroup("squash", "prove", 6))
    ASSUMPTIONS = ("appended_tag_free", "woken_not_listed")

    def build(self, m: Module):
        config = self.config
        self.lists = ReadyLists(config)
        m.submodules.lists = lists_fragment = Fragment.get(self.lists, None)
        self.arbiter = m.submodules.arbiter = DispatchArbiter(config)
        self.asr = m.submodules.asr = AcceleratorStatus(config)
        self.cdb = m.submodules.cdb = CommonDataBus(config)
        self.shells = shells = [AcceleratorShell(config, AnyLatencyCore(config)) for _ in instance_numbering(config)]
        for flat, shell in enumerate(shells):
            m.submodules[f"shell{flat}"] = shell
        self.squash, self.confirm = Signal(config.hts.spec_ids), Signal(config.hts.spec_ids)
        m.d.comb += [self.squash.eq(AnySeq(len(self.squash))), self.confirm.eq(AnySeq(len(self.confirm)))]
        self.aborted, self.broadcast, self.squashed, self.released = self._wire(m)
        self.shadow = ListShadow(m, config, self.lists, lists_fragment)

        tag_width = config.widths.tag
        places = [*((queued, Const(tag, tag_width)) for tag, queued in enumerate(self.queued)),
                  *((shell.busy, shell.current.tag) for shell in shells),
                  *((granted, Const(tag, tag_width)) for tag, granted in enumerate(self.cdb.broadcast_tags))]
        held = Signal(config.hts.tracker_entries)
        m.d.comb += held.eq(index_set([valid for valid, _ in places], [tag for _, tag in places], len(held)))
        self._assume_inputs(m, held)
        self._helpers(m, places)
        self._queued_sets(m)
        self._records(m, places, held)
        self._releases(m, held)
        self._squash(m)

    def _wire(self, m: Module):
        """The connections of ``HTS.elaborate`` among these blocks; returns the top level's
        sets of this cycle (aborted, broadcast, squashed, released)."""
        config, lists, arbiter = self.config, self.lists, self.arbiter
        # The top level's own wiring (so its mutants reach this harness); no enqueue stage here.
        self.appended = index_set([lists.append], [lists.append_task.tag], config.hts.tracker_entries)
        self.queued, self.under, squashed = queued_tag_sets(m, config, self.appended, lists.append_task.mask,
                                                            arbiter.last_granted_tags, self.squash, self.confirm)
        m.d.comb += [lists.queued.eq(self.queued), lists.squashed.eq(squashed), lists.under.eq(Cat(*self.under))]
        aborted, broadcast, released = connect_completion(m, config, self.cdb, self.asr, self.shells, self.squash,
                                                          squashed)
        for flat, shell in enumerate(self.shells):
            m.d.comb += [shell.granted.eq(self.cdb.grant[flat]), shell.abort.eq(aborted[flat]),
                         shell.power_enable.eq(1), shell.confirm.eq(self.confirm)]
            wiring.connect(m, arbiter.deliver[flat], shell.task)
            # The retarget (copy-back engine) and the memory port stay free: no tag depends on them.
            free_inputs(m, shell, wired=(shell.task.valid, shell.task.payload, shell.granted, shell.abort,
                                         shell.power_enable, shell.confirm))
        connect_dispatch(m, lists, arbiter, self.asr)
        # The task leaving the enqueue stage, the woken tag and the tracker's entries are free.
        free_inputs(m, lists, wired=(lists.queued, lists.squashed, lists.under, lists.take))
        free_inputs(m, arbiter, wired=(arbiter.offer_valid, arbiter.offer_task, arbiter.has_free,
                                       arbiter.free_instance))
        return aborted, broadcast, squashed, released

    def _assume_inputs(self, m: Module, held):
        config, lists = self.config, self.lists
        task = lists.append_task
        # Decode gave the task a tag free in the tracker, which holds every tag a place
        # holds, and which the lists hold (``tracker.held`` in hdl/hts.py).
        self.assume(m, "appended_tag_free", ~lists.append | ((task.tag < config.hts.tracker_entries)
                                                             & ~(held | lists.held).bit_select(task.tag, 1)))
        # The wake-up wakes a task once, and a task appended ready is never woken.
        self.assume(m, "woken_not_listed", ~lists.woken.valid | ~self.shadow.listed.bit_select(lists.woken.tag, 1))

    def _helpers(self, m: Module, places):
        """State no port of the pipeline shows, which the induction needs."""
        config, shells = self.config, self.shells
        # The lists' state is their shadow's (the ready lists' harness proves it), so that
        # no list overflows nor offers one tag from two classes at once.
        self.shadow.check_state(self, m, ("records", "squash"))
        self.check(m, "records", "held_tags_exist",
                   Cat(*(~valid | (tag < config.hts.tracker_entries) for valid, tag in places)).all())
        shell_busy = Cat(*(shell.busy for shell in shells))
        # A granted instance stays busy in the ASR through its broadcast's cycle.
        self.check(m, "records", "asr_busy_is_shells_busy_or_broadcasting",
                   self.asr.busy == (shell_busy | self.cdb.broadcast_instances))
        self.check(m, "records", "broadcasting_instances_are_idle", (shell_busy & self.cdb.broadcast_instances) == 0)
        self.check(m, ("records", "squash"), "tickets_only_of_done_shells",
                   (self.cdb.pending & ~Cat(*(shell.done for shell in shells))) == 0)
        # A task starts the cycle after its grant, in its busy shell; a core runs only there.
        self.check(m, ("records", "squash"), "starts_only_in_busy_shells",
                   Cat(*(~shell.core.start | shell.busy for shell in shells)).all())
        self.check(m, ("records", "squash"), "cores_run_only_in_busy_shells",
                   Cat(*(~shell.core.running | shell.busy for shell in shells)).all())
        self.check(m, ("records", "squash"), "cores_done_only_while_running",
                   Cat(*(~shell.core.done | shell.core.running for shell in shells)).all())

    def _queued_sets(self, m: Module):
        """The top level keeps the queued tags, in all and per ID, in registers, which must
        be the tasks that left the enqueue stage and were neither dispatched nor squashed
        since (``waiting``), and of those the ones under each ID, confirmed IDs aside; the
        lists offer only such tasks."""
        config, lists = self.config, self.lists
        tags, spec_ids = config.hts.tracker_entries, config.hts.spec_ids
        waiting = Signal(tags)
        masks = Signal(data.ArrayLayout(spec_ids, tags), reset_less=True)   # meaningful while waiting
        dispatched = index_set(self.arbiter.take, [offer.tag for offer in lists.offer_task], tags)
        hit = Cat(*((masks[tag] & self.squash).any() for tag in range(tags)))
        m.d.sync += waiting.eq(waiting & ~dispatched & ~hit | self.appended)
        for tag in range(tags):
            m.d.sync += masks[tag].eq(Mux(self.appended[tag], lists.append_task.mask, masks[tag]) & ~self.confirm)
        under = [waiting & Cat(*(masks[tag][spec_id] for tag in range(tags))) for spec_id in range(spec_ids)]
        self.check(m, "records", "queued_sets_are_the_waiting_tasks", (self.queued == waiting)
                   & Cat(*(kept == expected for kept, expected in zip(self.under, under))).all())
        self.check(m, "records", "offers_are_waiting_tasks", Cat(*(
            ~valid | waiting.bit_select(offer.tag, 1)
            for valid, offer in zip(lists.offer_valid, lists.offer_task))).all())

    def _records(self, m: Module, places, held):
        """No two places hold one tag, and records come and go only by arrivals and releases."""
        self.check(m, "records", "no_two_places_hold_one_tag", Cat(*(
            ~(valid_a & valid_b) | (tag_a != tag_b)
            for k, (valid_a, tag_a) in enumerate(places) for valid_b, tag_b in places[k + 1:])).all())
        count = popcount(valid for valid, _ in places)
        was_held, was_released, was_arriving = Signal.like(held), Signal.like(held), Signal.like(held)
        was_count = Signal(range(len(places) + 1))
        m.d.sync += [was_held.eq(held), was_released.eq(self.released), was_arriving.eq(self.appended),
                     was_count.eq(count)]
        # The registers read zero after reset, as every place does.
        self.check(m, "records", "held_tags_change_only_by_arrivals_and_releases",
                   held == (was_held & ~was_released | was_arriving))
        self.check(m, "records", "record_count_changes_only_by_arrivals_and_releases",
                   count + popcount(was_released) == was_count + popcount(was_arriving))

        shell_busy = Cat(*(shell.busy for shell in self.shells))
        self.cover(m, "records", "a_record_completes", self.cdb.grant.any())
        if self.config.hts.tracker_entries >= 3:   # else too few tags for three records
            listed = self.queued & self.lists.held
            self.cover(m, "records", "records_waiting_listed_and_running",
                       (self.queued & ~listed).any() & listed.any() & shell_busy.any())
        self.cover(m, "records", "a_squash_removes_a_queued_record", self.squashed.any())
        self.cover(m, "records", "a_squash_aborts_a_running_record", self.aborted.any())

    def _releases(self, m: Module, held):
        """A released tag is held, by one place (``no_two_places_hold_one_tag``), and
        released by one source: no tag is freed twice in a cycle, nor while not in flight.
        With the conservation above (records leave only by release), each allocation is
        freed exactly once, if its core finishes."""
        aborted_tags = index_set(self.aborted, [shell.current.tag for shell in self.shells], len(held))
        self.check(m, "records", "released_tags_are_held", (self.released & ~held) == 0)
        self.check(m, "records", "grants_and_squashes_disjoint", (self.broadcast & self.squashed) == 0)
        self.check(m, "records", "grants_and_aborts_disjoint", (self.broadcast & aborted_tags) == 0)
        self.check(m, "records", "squashes_and_aborts_disjoint", (self.squashed & aborted_tags) == 0)
        if len(held) >= 2:   # else one record at a time
            self.cover(m, "records", "a_grant_and_a_squash_in_one_cycle",
                       self.broadcast.any() & (self.squashed | aborted_tags).any())

    def _squash(self, m: Module):
        """The cycle after a squash no shell runs a task under a squashed ID: a busy shell
        under it is aborted or, if the CDB grants it in that cycle, leaves as completed;
        a task dispatched in that cycle is not under it, as the lists offer only live tasks."""
        shells = self.shells
        shell_busy = Cat(*(shell.busy for shell in shells))
        was_squash, was_busy = Signal.like(self.squash), Signal.like(shell_busy)
        m.d.sync += [was_squash.eq(self.squash), was_busy.eq(shell_busy)]
        self.check(m, "squash", "no_busy_shell_under_a_squashed_id",
                   Cat(*(~shell.busy | ((shell.current.mask & was_squash) == 0) for shell in shells)).all())

        def under_squash(shell):
            return shell.busy & (shell.current.mask & self.squash).any()

        self.cover(m, "squash", "a_squash_aborts_a_running_task", self.aborted.any())
        self.cover(m, "squash", "a_task_under_the_squash_completes_instead",
                   Cat(*(grant & under_squash(shell) for grant, shell in zip(self.cdb.grant, shells))).any())
        self.cover(m, "squash", "a_task_dispatched_in_a_squash_cycle",
                   self.squash.any() & Cat(*(shell.task.valid & shell.task.ready for shell in shells)).any())
        self.cover(m, "squash", "a_task_runs_on_past_a_squash", was_squash.any() & (was_busy & shell_busy).any())
