"""Formal harness of the back end as one: window, stations, dispatch arbiter, ASR, CDB and
accelerator shells, wired as ``hts.hdl.hts.HTS`` wires them, checked for lost or
duplicated task records, tags freed more than once, and tasks left running under a
squashed speculation ID."""

from amaranth.asserts import AnySeq
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring

from hts.hdl.accelerator import AcceleratorShell
from hts.hdl.asr import AcceleratorStatus
from hts.hdl.cdb import CommonDataBus
from hts.hdl.dispatch import DispatchArbiter
from hts.hdl.hts import connect_completion, connect_issue_and_dispatch, gathered_tag_sets, queued_tag_sets
from hts.hdl.interfaces import core_signature, instance_numbering
from hts.hdl.primitives import fewer_than, index_set, popcount
from hts.hdl.reservation_station import ReservationStation
from hts.hdl.window import DispatchWindow

from .harness import Harness, PropertyGroup, free_inputs, strict_total_order

__all__ = ["AnyLatencyCore", "PipelineHarness"]


#: Cycles from reset of the bounded check where the induction does not close: records
#: appended in the first three cycles after reset fill both instances of a class and
#: offer a third task by the fifth, whose loss shows in the sixth. (On small the eighth
#: cycle alone costs the solver more than five minutes.)
BMC_DEPTH = 7


def _one_entry_queues(config) -> bool:
    """Whether the window and the stations hold one entry each (tiny), where the records'
    k-induction closes in seconds; on small (four entries, two dispatch ways) it did not
    close in ten minutes, so there it is a bounded check from reset."""
    return config.hts.window == 1 and config.hts.rs_entries == 1


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
    """Records from the window to the shells and out through the CDB.

    Decode, the enqueue stage, the branch unit (``squash``, ``confirm``) and the memory
    tracker (``tasks``) are left free; tasks enter the window with free tags.
    A *place* is a window slot, a station slot, a shell or a bit of the CDB's broadcast
    register (a tag granted last cycle); a record is a valid place and the tag it holds.
    ``released`` is the top level's set of tags freed this cycle: the CDB's broadcast,
    the squashed queue entries and the shells the squash hits.
    """

    GROUPS = (PropertyGroup("records", lambda config: "prove" if _one_entry_queues(config) else "bmc",
                            lambda config: 2 if _one_entry_queues(config) else BMC_DEPTH),
              PropertyGroup("squash", "prove", 6))
    ASSUMPTIONS = ("append_only_with_room", "append_not_squashed", "appended_tag_free", "appended_class_exists",
                   "woken_meets_one_slot")

    def build(self, m: Module):
        config = self.config
        self.window = window = m.submodules.window = DispatchWindow(config)
        self.stations = stations = [ReservationStation(config) for _ in config.accelerators]
        for class_index, station in enumerate(stations):
            m.submodules[f"station{class_index}"] = station
        self.arbiter = m.submodules.arbiter = DispatchArbiter(config)
        self.asr = m.submodules.asr = AcceleratorStatus(config)
        self.cdb = m.submodules.cdb = CommonDataBus(config)
        self.shells = shells = [AcceleratorShell(config, AnyLatencyCore(config)) for _ in instance_numbering(config)]
        for flat, shell in enumerate(shells):
            m.submodules[f"shell{flat}"] = shell
        self.squash, self.aborted, self.broadcast, self.squashed, self.released = self._wire(m)

        places = [*zip(window.valid, (entry.tag for entry in window.entries)),
                  *((valid, entry.tag) for station in stations for valid, entry in zip(station.valid, station.entries)),
                  *((shell.busy, shell.current.tag) for shell in shells),
                  *((granted, tag) for tag, granted in enumerate(self.cdb.broadcast_tags))]
        held = Signal(config.hts.tracker_entries)
        m.d.comb += held.eq(index_set([valid for valid, _ in places], [tag for _, tag in places], len(held)))
        self._assume_inputs(m, held)
        self._helpers(m, places)
        self._records(m, places, held)
        self._releases(m, held)
        self._squash(m)

    def _wire(self, m: Module):
        """The connections of ``HTS.elaborate`` among these blocks; returns the
        ``squash`` (registered from a free ``squash_next``) and the top level's sets of
        this cycle (aborted, broadcast, squashed, released)."""
        config = self.config
        window, stations, arbiter, asr, cdb, shells = (self.window, self.stations, self.arbiter, self.asr,
                                                       self.cdb, self.shells)
        # The branch unit's squash is a register of its ``squash_next``.
        squash_next, squash = Signal(config.hts.spec_ids), Signal(config.hts.spec_ids)
        confirm = Signal(config.hts.spec_ids)
        m.d.comb += [squash_next.eq(AnySeq(len(squash_next))), confirm.eq(AnySeq(len(confirm)))]
        m.d.sync += squash.eq(squash_next)
        # The top level's own wiring (so its mutants reach this harness); no enqueue stage here.
        appended = index_set([window.append], [window.append_task.tag], config.hts.tracker_entries)
        queued, under, squashed = queued_tag_sets(m, config, appended, window.append_task.mask,
                                                  arbiter.last_granted_tags, squash, confirm)
        self.kept_tag_sets = Cat(queued, *under)
        aborted, broadcast, released = connect_completion(m, config, cdb, asr, shells, squash, squashed)
        for flat, shell in enumerate(shells):
            m.d.comb += [shell.granted.eq(cdb.grant[flat]), shell.abort.eq(aborted[flat]),
                         shell.power_enable.eq(1), shell.confirm.eq(confirm)]
            wiring.connect(m, arbiter.deliver[flat], shell.task)
            # The retarget (copy-back engine) and the memory port stay free: no tag depends on them.
            free_inputs(m, shell, wired=(shell.task.valid, shell.task.payload, shell.granted, shell.abort,
                                         shell.power_enable, shell.confirm))
        # The wake-up is free: any tag woken in any cycle, one at a time, as the walker wakes them.
        woken = Signal.like(window.woken)
        m.d.comb += woken.eq(AnySeq(len(woken.as_value())))
        for queue in [window, *stations]:
            m.d.comb += [queue.squash_next.eq(squash_next), queue.confirm.eq(confirm), queue.woken.eq(woken)]
        # A tag names one task in flight (``no_two_places_hold_one_tag``, in ``records``): the
        # walker's tag meets one queued slot at most, which the squash's induction needs too.
        meets = [valid & (entry.tag == woken.tag) for queue in [window, *stations]
                 for valid, entry in zip(queue.valid, queue.entries)]
        self.assume(m, "woken_meets_one_slot", ~woken.valid | fewer_than(Cat(*meets), 2))
        connect_issue_and_dispatch(m, window, stations, arbiter, asr)
        # Decode's task and the tracker's entries are free.
        free_inputs(m, window, wired=(window.squash_next, window.confirm, window.woken, window.station_room))
        free_inputs(m, arbiter, wired=(arbiter.offer_valid, arbiter.offer_task, arbiter.has_free,
                                       arbiter.free_instance))
        return squash, aborted, broadcast, squashed, released

    def _assume_inputs(self, m: Module, held):
        config, window = self.config, self.window
        task = window.append_task
        # Decode appends only when the window reports room (step 8).
        self.assume(m, "append_only_with_room", ~window.append | (window.room != 0))
        # The enqueue stage drops a task under a squashed ID instead (hdl/enqueue.py).
        self.assume(m, "append_not_squashed", ~window.append | ((task.mask & self.squash) == 0))
        # Decode gave the task a tag free in the tracker, and the tracker holds every tag
        # a place holds.
        self.assume(m, "appended_tag_free", ~window.append | ((task.tag < config.hts.tracker_entries)
                                                              & ~held.bit_select(task.tag, 1)))
        # Decode builds tasks of the configured classes only.
        self.assume(m, "appended_class_exists", ~window.append | (task.accel_class < len(config.accelerators)))

    def _helpers(self, m: Module, places):
        """State no port of the pipeline shows, which the induction needs."""
        config, window, shells = self.config, self.window, self.shells
        # The squash's induction needs the orders too: with two ways, two window slots
        # taking one issue position merge their records. A station orders its ready slots.
        ordered = [("window", window, window.valid)]
        ordered += [(f"station{c}", station, Cat(*(valid & entry.ready for valid, entry in
                                                   zip(station.valid, station.entries))))
                    for c, station in enumerate(self.stations)]
        for queue_name, queue, slots in ordered:
            for name, holds in strict_total_order(slots, queue.older).items():
                self.check(m, ("records", "squash"), f"{queue_name}_age_{name}", holds)
        self.check(m, "records", "window_tasks_of_existing_classes",
                   Cat(*(~valid | (entry.accel_class < len(config.accelerators))
                         for valid, entry in zip(window.valid, window.entries))).all())
        # The top level keeps the queued tags (and those under each ID) in registers.
        self.check(m, "records", "kept_tag_sets_are_the_queues",
                   self.kept_tag_sets == gathered_tag_sets(config, [window, *self.stations]))
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

    def _records(self, m: Module, places, held):
        """No two places hold one tag, and records come and go only by arrivals and releases."""
        window = self.window
        self.check(m, "records", "no_two_places_hold_one_tag", Cat(*(
            ~(valid_a & valid_b) | (tag_a != tag_b)
            for k, (valid_a, tag_a) in enumerate(places) for valid_b, tag_b in places[k + 1:])).all())
        count = popcount(valid for valid, _ in places)
        arriving = index_set([window.append], [window.append_task.tag], len(held))
        was_held, was_released, was_arriving = Signal.like(held), Signal.like(held), Signal.like(held)
        was_count = Signal(range(len(places) + 1))
        m.d.sync += [was_held.eq(held), was_released.eq(self.released), was_arriving.eq(arriving),
                     was_count.eq(count)]
        # The registers read zero after reset, as every place does.
        self.check(m, "records", "held_tags_change_only_by_arrivals_and_releases",
                   held == (was_held & ~was_released | was_arriving))
        self.check(m, "records", "record_count_changes_only_by_arrivals_and_releases",
                   count + popcount(was_released) == was_count + popcount(was_arriving))

        shell_busy = Cat(*(shell.busy for shell in self.shells))
        self.cover(m, "records", "a_record_completes", self.cdb.grant.any())
        if self.config.hts.tracker_entries >= 3:   # else too few tags for three records
            self.cover(m, "records", "records_in_window_station_and_shell",
                       window.valid.any() & Cat(*(s.valid.any() for s in self.stations)).any() & shell_busy.any())
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
        a task dispatched in that cycle is not under it, as stations offer no squashed task."""
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
