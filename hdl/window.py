"""Dispatch window: decoded tasks in age order, waiting for room in their station.

RTL of ``hts.models.window``. The window and the stations share :class:`AgeQueue`
(docs/microarchitecture.md, "Issue's cycle").
"""

from amaranth.hdl import Assert, Cat, Module, ResetSignal, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.base.config import SystemConfig

from .interfaces import queued_task_layout
from .mutation import mutable
from .primitives import oldest, popcount, select, update_age_matrix, wire

__all__ = ["AgeQueue", "DispatchWindow"]


def _end_of_cycle_ports(config: SystemConfig) -> dict:
    """What lands on every queued task at the edge, and the squash that removes some."""
    hts = config.hts
    return {
        "squash_next": In(hts.spec_ids),
        "confirm": In(hts.spec_ids),
        "woken": In(data.StructLayout({"valid": 1, "tag": config.widths.tag})),
    }


class AgeQueue(wiring.Component):
    """``capacity`` queued task records in fixed slots, with an age matrix saying which is older.

    A record stays in its slot; arrivals take the lowest free slots, younger than every
    record staying. Subclasses say what leaves (``_departures``) and arrives (``_arrivals``).

    Parameters
    ----------
    config : SystemConfig
    capacity : int
    ports : dict
        The subclass's own ports.

    Attributes
    ----------
    room : Out
        Free slots at the start of the cycle.
    squash_next, confirm, woken : In
        IDs mispredicted now (a slot they hit is ``doomed``); IDs cleared at the edge; the tag
        the wake-up makes ready at the edge.
    valid, entries, older, doomed : Signal
        The slots, their records, the order matrix, the squash bits; read by the tests.
    """

    #: Whether this cycle's wake-up reaches the records arriving at the edge.
    WAKES_ARRIVALS = True

    def __init__(self, config: SystemConfig, capacity: int, ports: dict):
        self._capacity = capacity
        self._task = queued_task_layout(config)
        super().__init__({"room": Out(range(capacity + 1)), **ports, **_end_of_cycle_ports(config)})
        self.valid = Signal(capacity)
        # No reset: meaningful only where ``valid`` is set.
        self.entries = Signal(data.ArrayLayout(self._task, capacity), reset_less=True)
        self.older = Signal(data.ArrayLayout(capacity, capacity), reset_less=True)
        self.doomed = Signal(capacity, reset_less=True)

    def _departures(self, m: Module, movable: list) -> list:
        """Drive the outputs; one bit per slot (of the ``movable`` ones) whose entry leaves at the edge."""
        raise NotImplementedError

    def _arrivals(self) -> list:
        """``(valid, record)`` pairs written into free slots, oldest first."""
        raise NotImplementedError

    def _update_order(self, m: Module, staying: list, arriving, takes: list):
        """The order matrix at the edge: an arrival is younger than every entry staying and
        than the arrivals before it."""
        update_age_matrix(m, self.older, arriving,
                          [Cat(*staying) | self._earlier_arrivals(takes, slot) for slot in range(self._capacity)])

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

        # The end-of-cycle updates are applied once per source (each slot's record, each
        # arrival), before the slot's select rather than after it.
        updated_arrivals = [self._updated(m, record, f"arrival_{k}", wakes=self.WAKES_ARRIVALS)
                            for k, (_, record) in enumerate(arrivals)]
        for slot in range(capacity):
            own = self._updated(m, self.entries[slot], f"slot_{slot}")
            following = Signal.like(own, name=f"following_{slot}")
            m.d.comb += following.eq(own)
            for took, record in zip(takes[slot], updated_arrivals):
                with m.If(took):
                    m.d.comb += following.eq(record)
            m.d.sync += [self.entries[slot].eq(following), self.doomed[slot].eq(self._dooms(following))]
        self._update_order(m, staying, arriving, takes)
        m.d.sync += self.valid.eq(Cat(*staying) | arriving)

    def _dooms(self, record):
        meets = record.mask & self.squash_next
        return mutable("queue_squash_first_id_only", meets.any(), meets[0])

    def _check_doomed(self, m: Module):
        """Simulation only: each valid slot's ``doomed`` is its mask against the squash."""
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

    def _woken(self, task) -> Value:
        """Whether the wake-up makes ``task`` ready at this edge."""
        return mutable("queue_wake_lost", self.woken.valid, 0) & (self.woken.tag == task.tag)

    def _updated(self, m: Module, task, name: str, wakes: bool = True) -> Signal:
        result = Signal(self._task, name=f"updated_{name}")
        m.d.comb += [
            result.eq(task),
            result.ready.eq(task.ready | self._woken(task) if wakes else task.ready),
            result.mask.eq(task.mask & ~self.confirm),
        ]
        return result


class DispatchWindow(AgeQueue):
    """The ``hts.window`` decoded tasks; up to ``hts.dispatch_width`` move to their stations per cycle.

    Parameters
    ----------
    config : SystemConfig

    Attributes
    ----------
    append, append_task : In
        From the enqueue stage: one task, landing at the edge, with its readiness after the
        edge (the wake-up's ``waiter_ready``, this cycle's decrement included): the wake-up
        is not applied to it.
    station_room : In, per class
        Free slots each station had at the start of the cycle.
    issue_valid, issue_task : Out, per way
        The oldest tasks whose station has room, oldest from bit 0; they leave at the edge.
    issue_to : Out, per way
        Each issued task's station, one-hot. Its ``ready`` is the registered one: the
        station applies this cycle's wake-up to it.
    """

    WAKES_ARRIVALS = False

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
        })

    def _arrivals(self) -> list:
        return [(self.append, self.append_task)]

    def _older_than(self, index: int, bits: list):
        return Cat(*bits) & self.older[index]

    def _departures(self, m: Module, movable: list) -> list:
        capacity, width, entries = self._capacity, self._width, self.entries
        # has_room[i]: entry i's station still has room once older tasks of its class have
        # gone; with one way only the oldest such entry matters, so the station's room is enough.
        has_room = []
        # With one way each room is tested before the class selects it: a bit-select
        # rather than a compare behind a multiplexer of the counts.
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
        for output in range(width):
            in_output = [goes & (at == output) for goes, at in zip(issued, position)]
            m.d.comb += [self.issue_valid[output].eq(popcount(has_room) > output),
                         self.issue_task[output].eq(select(in_output, entries)),
                         self.issue_to[output].eq(select(in_output, class_bits))]
        return issued
