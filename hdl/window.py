"""Dispatch window: decoded tasks in age order, waiting for room in their station.

RTL of ``hts.models.window`` as ``models/hts.py`` drives it (``_issue``, ``_squash``,
``_confirm``, ``_end_of_cycle``); see docs/microarchitecture.md for its timing. The
window and the reservation stations are the same kind of structure, a queue of
``queued_task_layout`` records searched oldest first, and share :class:`AgeQueue`
defined here. A queued record is the task's tag and what changes while it waits (mask,
waits); its regions, pid, pc, task ID and metadata are its tag's tracker entry, which
takes the retargets that the model applies to queued tasks (hdl/interfaces.py).
"""

from amaranth.hdl import Assert, Cat, Module, ResetSignal, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import queued_task_layout
from .mutation import mutable
from .primitives import oldest, popcount, select, update_age_matrix, wire

__all__ = ["AgeQueue", "DispatchWindow"]


def _end_of_cycle_ports(config: SystemConfig) -> dict:
    """What lands on every queued task at the clock edge, and the squash that removes some."""
    hts = config.hts
    return {
        "squash_next": In(hts.spec_ids),
        "confirm": In(hts.spec_ids),
        "broadcast": In(hts.tracker_entries),
    }


class AgeQueue(wiring.Component):
    """``capacity`` queued task records in fixed slots, with an age matrix saying which is older.

    A record is written into a free slot when it arrives and stays there until it leaves,
    so nothing moves: "the oldest" is found through the age matrix, as the memory tracker
    finds its oldest tag. (A collapsing queue, which keeps age by position, pays for a
    multiplexer over every younger position on every stored bit; on 145-bit records that
    was most of the stations' and the window's logic.) Every cycle some entries leave
    (squashed, or moved on as the subclass decides in ``_departures``) and the subclass's
    ``_arrivals`` are written into the slots that were free at the start of the cycle,
    lowest first, each younger than every entry staying and than the arrivals before it.
    Every entry that stays or arrives gets the end-of-cycle updates of ``models/hts.py``
    on its way into the register: the tags released this cycle leave its ``waits`` and
    the confirmed speculation IDs leave its ``mask`` (a retarget rewrites ranges, which
    are the tracker's).

    Ports common to the window and the stations:

    - ``room`` (out, to the stage that fills the queue): free entries at the start of
      the cycle; the filling stage never sends more arrivals than that;
    - ``squash_next`` (in, from the branch unit): the speculation IDs mispredicted this
      cycle, which the branch unit squashes next cycle. Every entry whose ``mask`` will
      meet that squash (the mask it will have, after this cycle's ``confirm``) is
      *doomed*, in a register: next cycle it is removed at once, neither moving on nor
      staying. The squash test is thus a flip-flop per slot, not a compare in front of
      the offers and the issue pick (docs/hardware.md, "Timing"). The top level keeps
      the tags removed, to free them, in registers of its own (``queued_tag_sets`` in
      ``hdl/hts.py``);
    - ``confirm`` (in, from the branch unit): speculation IDs predicted right, cleared
      from every mask at the edge;
    - ``broadcast`` (in, from the top level): every tag released this cycle (the CDB
      grants, and the tags squashed or aborted anywhere), cleared from every ``waits``
      at the edge.

    Registered state (not ports; the tests read it and order the valid slots by
    ``older``): ``valid`` (one bit per slot), ``entries`` (the records; a free slot's is
    meaningless), ``older`` (``older[i]`` bit ``j``: the entry in slot ``j`` arrived
    before the one in slot ``i``; meaningful only where both are valid) and ``doomed``
    (one bit per slot: its entry goes with this cycle's squash; meaningful only where
    ``valid``). Every simulation asserts that ``doomed`` equals the compare of each
    valid entry's ``mask`` with the squash it was computed for.
    """

    def __init__(self, config: SystemConfig, capacity: int, ports: dict):
        self._capacity = capacity
        self._task = queued_task_layout(config)
        super().__init__({"room": Out(range(capacity + 1)), **ports, **_end_of_cycle_ports(config)})
        self.valid = Signal(capacity)
        # Meaningful only where ``valid`` is set: no reset (record_register, hdl/primitives.py).
        self.entries = Signal(data.ArrayLayout(self._task, capacity), reset_less=True)
        self.older = Signal(data.ArrayLayout(capacity, capacity), reset_less=True)
        self.doomed = Signal(capacity, reset_less=True)

    def _departures(self, m: Module, movable: list) -> list:
        """Drive the outputs to the next stage; one bit per slot whose entry moves on at the edge.

        ``movable[i]``: slot ``i`` is valid and not squashed (start-of-cycle state).
        """
        raise NotImplementedError

    def _arrivals(self) -> list:
        """``(valid, record)`` pairs written into free slots, oldest first."""
        raise NotImplementedError

    def _register_slot(self, m: Module, slot: int, own, took: list):
        """Registers of the subclass kept per slot: ``own`` is the slot's record with this
        cycle's updates, ``took[k]`` that the slot takes arrival ``k`` instead."""

    def elaborate(self, platform):
        m = Module()
        capacity = self._capacity
        valid = list(self.valid)
        squashed = [valid[index] & self.doomed[index] for index in range(capacity)]
        self._check_doomed(m)
        m.d.comb += self.room.eq(capacity - popcount(valid))
        movable = [valid[index] & ~squashed[index] for index in range(capacity)]
        departing = self._departures(m, movable)
        staying = [movable[index] & ~departing[index] for index in range(capacity)]
        self._fill(m, staying, self._arrivals())
        return m

    def _fill(self, m: Module, staying: list, arrivals: list):
        """Write the arrivals into the free slots, age them, and update every slot's record."""
        capacity = self._capacity
        free = [~bit for bit in self.valid]
        # The k-th valid arrival takes the k-th slot free at the start of the cycle.
        free_below = [popcount(free[:slot]) for slot in range(capacity)]
        arrivals_before = [popcount(arrival_valid for arrival_valid, _ in arrivals[:k]) for k in range(len(arrivals))]
        takes = [[Signal(name=f"slot_{slot}_takes_{k}") for k in range(len(arrivals))] for slot in range(capacity)]
        arriving = Signal(capacity)
        for slot in range(capacity):
            for k, (arrival_valid, _) in enumerate(arrivals):
                m.d.comb += takes[slot][k].eq(free[slot] & arrival_valid & (free_below[slot] == arrivals_before[k]))
            m.d.comb += arriving[slot].eq(Cat(*takes[slot]).any())

        # The end-of-cycle updates are applied once per source (each slot's own record,
        # each arrival) and the slot then selects among updated records, not after it on
        # a deeper, multiplexed value.
        updated_arrivals = [self._updated(m, record, f"arrival_{k}") for k, (_, record) in enumerate(arrivals)]
        for slot in range(capacity):
            own = self._updated(m, self.entries[slot], f"slot_{slot}")
            following = Signal.like(own, name=f"following_{slot}")
            m.d.comb += following.eq(own)
            for took, record in zip(takes[slot], updated_arrivals):
                with m.If(took):
                    m.d.comb += following.eq(record)
            m.d.sync += [self.entries[slot].eq(following), self.doomed[slot].eq(self._dooms(following))]
            self._register_slot(m, slot, own, takes[slot])
        # An arrival is younger than every entry staying and than the arrivals before it.
        update_age_matrix(m, self.older, arriving,
                          [Cat(*staying) | self._earlier_arrivals(takes, slot) for slot in range(capacity)])
        m.d.sync += self.valid.eq(Cat(*staying) | arriving)

    def _dooms(self, record):
        """Whether next cycle's squash removes ``record`` (as it will be then)."""
        meets = record.mask & self.squash_next
        return mutable("queue_squash_first_id_only", meets.any(), meets[0])

    def _check_doomed(self, m: Module):
        """Simulation only: each valid slot's ``doomed`` is its mask against the squash
        (not under reset, where a formal harness starts from any state)."""
        squash = Signal.like(self.squash_next, name="squash")
        m.d.sync += squash.eq(self.squash_next)
        direct = Cat(*((entry.mask & squash).any() for entry in self.entries))
        m.d.sync += Assert(ResetSignal() | ((self.valid & (self.doomed ^ direct)) == 0),
                           "a doomed bit disagrees with the squash")

    @staticmethod
    def _earlier_arrivals(takes: list, slot: int):
        """One bit per slot: it takes an arrival that came before the one ``slot`` takes."""
        return Cat(*(Cat(*(takes[slot][k] & takes[other][j] for k in range(len(takes[slot])) for j in range(k))).any()
                     for other in range(len(takes))))

    def _updated(self, m: Module, task, name: str) -> Signal:
        """``task`` with this cycle's end-of-cycle updates, as a named signal."""
        result = Signal(self._task, name=f"updated_{name}")
        m.d.comb += [
            result.eq(task),
            result.waits.eq(task.waits & ~mutable("queue_broadcast_lost", self.broadcast, 0)),
            result.mask.eq(task.mask & ~self.confirm),
        ]
        return result


class DispatchWindow(AgeQueue):
    """The ``hts.window`` decoded tasks; up to ``hts.dispatch_width`` move to their stations per cycle.

    Ports, besides those of :class:`AgeQueue` (``room``: decode appends only when it is
    non-zero):

    - ``append``, ``append_task`` (in, from decode): one decoded task, landing at the
      edge behind every task that stays. It is not squashed this cycle (its process
      cannot decode in the cycle its branch is squashed), but it does get the
      end-of-cycle updates: ``broadcast`` (decode ignores only the CDB's tags, not the
      squashed ones) and ``confirm``;
    - ``station_room`` (in, from the stations): per accelerator class, the free entries
      its station had at the start of the cycle;
    - ``issue_valid``, ``issue_task`` (out, to the stations): the tasks moving this
      cycle, oldest first in the low positions (``issue_valid`` is a run of ones from bit
      0). They are the oldest unsquashed tasks whose station has room, room counted down
      per class as tasks are taken in age order, at most ``dispatch_width`` of them
      (``DispatchWindow.select``). They leave the window at the edge; the records are the
      start-of-cycle ones, so the station applies this cycle's updates as it inserts them;
    - ``issue_to`` (out, to the stations): per output position, one bit per class: the
      station that position's task goes to (its ``accel_class`` one-hot; 0 where
      ``issue_valid`` is not set);
    - ``issue_waits_clear`` (out, to the stations): per output position, that task's
      ``waits`` is empty once this cycle's ``broadcast`` is cleared from it. It is
      reduced here, once per window slot beside the pick, so that no station reduces the
      selected record again (each did, and the flattened netlist copied the window's
      select into every station: docs/results.md).
    """

    def __init__(self, config: SystemConfig):
        hts, task = config.hts, queued_task_layout(config)
        self._width = hts.dispatch_width
        super().__init__(config, hts.window, {
            "append": In(1),
            "append_task": In(task),
            "station_room": In(data.ArrayLayout(range(hts.rs_entries + 1), len(config.accelerators))),
            "issue_valid": Out(hts.dispatch_width),
            "issue_task": Out(data.ArrayLayout(task, hts.dispatch_width)),
            "issue_to": Out(data.ArrayLayout(len(config.accelerators), hts.dispatch_width)),
            "issue_waits_clear": Out(hts.dispatch_width),
        })

    def _arrivals(self) -> list:
        return [(self.append, self.append_task)]

    def _older_than(self, index: int, bits: list):
        """Which of ``bits`` (one per slot) belong to entries older than slot ``index``'s."""
        return Cat(*bits) & self.older[index]

    def _departures(self, m: Module, movable: list) -> list:
        capacity, width, entries = self._capacity, self._width, self.entries
        # has_room[i]: the station of entry i still has room once the older tasks of its
        # class have gone. With one task a cycle only the oldest such entry matters, and
        # for it no older task of its class can be waiting, so its station's room is enough.
        has_room = []
        # With one way each room is tested before the class selects it: a bit-select of
        # ten bits rather than a compare behind a multiplexer of the counts.
        stations_with_room = Cat(*(room != 0 for room in self.station_room))
        for index, entry in enumerate(entries):
            room = self.station_room[entry.accel_class]
            if width == 1:
                fits = stations_with_room.bit_select(entry.accel_class, 1)
            else:
                same_class_older = self._older_than(index, [movable[other] & (entries[other].accel_class
                                                                              == entry.accel_class)
                                                            for other in range(capacity)])
                fits = popcount(same_class_older) < room
            has_room.append(Signal(name=f"has_room_{index}"))
            m.d.comb += has_room[index].eq(movable[index] & fits)
        # Entry i goes if fewer than ``width`` older entries can; that number is its output position.
        order = mutable("window_issues_youngest", self.older, [Cat(*(row[index] for row in self.older))
                                                              for index in range(capacity)])
        issued = [wire(m, goes, f"issues_{index}") for index, goes in enumerate(oldest(has_room, order, width))]
        position = [popcount(self._older_than(index, has_room)) if width > 1 else 0 for index in range(capacity)]
        # Each slot's class one-hot, decoded from the register, so that a station's
        # ``insert_valid`` is a bit of the selected one-hot, not a compare behind the select.
        classes = len(self.station_room)
        class_bits = [wire(m, Cat(*(entry.accel_class == c for c in range(classes))), f"class_of_{index}")
                      for index, entry in enumerate(entries)]
        waits_clear = [wire(m, ~self._updated(m, entry, f"issuing_{index}").waits.any(), f"waits_clear_{index}")
                       for index, entry in enumerate(entries)]
        for output in range(width):
            in_output = [goes & (at == output) for goes, at in zip(issued, position)]
            m.d.comb += [self.issue_valid[output].eq(popcount(has_room) > output),
                         self.issue_task[output].eq(select(in_output, entries)),
                         self.issue_to[output].eq(select(in_output, class_bits)),
                         self.issue_waits_clear[output].eq(select(in_output, waits_clear))]
        return issued
