"""Dispatch window: decoded tasks in age order, waiting for room in their station.

RTL of ``hts.models.window`` as ``models/hts.py`` drives it (``_issue``, ``_squash``,
``_confirm``, ``_end_of_cycle``, ``_apply_retarget``); see docs/microarchitecture.md for
its timing. The window and the reservation stations are the same kind of structure, an
age-ordered collapsing queue of ``task_layout`` records (entry 0 is the oldest, so a
position is an age), and share :class:`AgeQueue` defined here.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hts.config import SystemConfig

from .layouts import region_layout, task_layout

__all__ = ["AgeQueue", "DispatchWindow"]


def _end_of_cycle_ports(config: SystemConfig) -> dict:
    """What lands on every queued task at the clock edge, and the squash that removes some."""
    hts, region = config.hts, region_layout(config)
    return {
        "squash": In(hts.spec_ids),
        "squashed_tags": Out(hts.tracker_entries),
        "queued_tags": Out(hts.tracker_entries),
        "confirm": In(hts.spec_ids),
        "broadcast": In(hts.tracker_entries),
        "retarget": In(1),
        "retarget_tm": In(region),
        "retarget_home": In(region),
        "retarget_producer": In(config.widths.tag),
    }


def _count(bits):
    """How many of ``bits`` (1-bit values) are set; 0 for none."""
    return sum(bits, start=0)


class AgeQueue(wiring.Component):
    """A collapsing queue of ``capacity`` task records: entry 0 is the oldest.

    Every cycle some entries leave (squashed, or moved on as the subclass decides in
    ``_departures``), the others slide down over the gaps keeping their order, and the
    subclass's ``_arrivals`` land behind them. Every entry that stays or arrives gets the
    end-of-cycle updates of ``models/hts.py`` on its way into the register: the tags
    released this cycle leave its ``waits``, the confirmed speculation IDs leave its
    ``mask``, and a retarget rewrites its ranges.

    Ports common to the window and the stations:

    - ``room`` (out, to the stage that fills the queue): free entries at the start of
      the cycle;
    - ``squash`` (in, from the branch unit): speculation IDs mispredicted this cycle.
      Every entry whose ``mask`` meets it is removed at once: it neither moves on this
      cycle nor stays;
    - ``squashed_tags`` (out, to the top level): the tags of those entries, to free;
    - ``queued_tags`` (out, to the copy-back engine): the tags of every entry at the
      start of the cycle (their producers have not started writing back);
    - ``confirm`` (in, from the branch unit): speculation IDs predicted right, cleared
      from every mask at the edge;
    - ``broadcast`` (in, from the top level): every tag released this cycle (the CDB
      grants, and the tags squashed or aborted anywhere), cleared from every ``waits``
      at the edge;
    - ``retarget``, ``retarget_tm``, ``retarget_home``, ``retarget_producer`` (in, from
      the copy-back engine): at the edge the entry with tag ``retarget_producer`` writes
      ``retarget_home``, and every entry whose ``reads`` is exactly ``retarget_tm`` reads
      ``retarget_home``. (The model matches writes on the TM region rather than on the
      producer's tag: while the TLB entry lives, only its producer writes that region.)

    Registered state (not ports; read by the tests): ``entries`` and ``count``, the
    number of valid entries, which fill ``entries[0:count]``.
    """

    def __init__(self, config: SystemConfig, capacity: int, ports: dict):
        self._capacity = capacity
        self._task = task_layout(config)
        self._tags = config.hts.tracker_entries
        super().__init__({"room": Out(range(capacity + 1)), **ports, **_end_of_cycle_ports(config)})
        self.entries = Signal(data.ArrayLayout(self._task, capacity))
        self.count = Signal(range(capacity + 1))

    def _departures(self, m: Module, movable: list) -> list:
        """Drive the outputs to the next stage; one bit per entry that moves on at the edge.

        ``movable[i]``: entry ``i`` is valid and not squashed (start-of-cycle state).
        """
        raise NotImplementedError

    def _arrivals(self) -> list:
        """``(valid, record)`` pairs landing behind the survivors, oldest first."""
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        valid = [self.count > index for index in range(self._capacity)]
        squashed = [valid[index] & (entry.mask & self.squash).any() for index, entry in enumerate(self.entries)]
        m.d.comb += [
            self.room.eq(self._capacity - self.count),
            self.squashed_tags.eq(self._tag_set(squashed)),
            self.queued_tags.eq(self._tag_set(valid)),
        ]
        movable = [valid[index] & ~squashed[index] for index in range(self._capacity)]
        departing = self._departures(m, movable)
        staying = [movable[index] & ~departing[index] for index in range(self._capacity)]
        self._collapse(m, staying, self._arrivals())
        return m

    def _tag_set(self, selected: list):
        """One bit per tag: the tags of the selected entries."""
        return Cat(*(Cat(*(chosen & (entry.tag == tag) for chosen, entry in zip(selected, self.entries))).any()
                     for tag in range(self._tags)))

    def _collapse(self, m: Module, staying: list, arrivals: list):
        """Slide the staying entries down over the gaps, append the arrivals, apply the updates."""
        capacity = self._capacity
        # below[i]: staying entries older than entry i, which is where entry i goes.
        below = [Signal(range(capacity + 1), name=f"staying_below_{index}") for index in range(capacity + 1)]
        for index in range(capacity):
            m.d.comb += below[index + 1].eq(below[index] + staying[index])
        survivors = below[capacity]
        landing = [survivors + _count(valid for valid, _ in arrivals[:k]) for k in range(len(arrivals))]

        for slot in range(capacity):
            incoming = Signal(self._task, name=f"incoming_{slot}")
            for index in range(slot, capacity):
                with m.If(staying[index] & (below[index] == slot)):
                    m.d.comb += incoming.eq(self.entries[index])
            for (valid, record), place in zip(arrivals, landing):
                with m.If(valid & (place == slot)):
                    m.d.comb += incoming.eq(record)
            self._land(m, self.entries[slot], incoming)
        m.d.sync += self.count.eq(survivors + _count(valid for valid, _ in arrivals))

    def _land(self, m: Module, target, task):
        """Register ``task`` into ``target`` with this cycle's end-of-cycle updates."""
        m.d.sync += [
            target.eq(task),
            target.waits.eq(task.waits & ~self.broadcast),
            target.mask.eq(task.mask & ~self.confirm),
        ]
        with m.If(self.retarget):
            with m.If(task.tag == self.retarget_producer):
                m.d.sync += target.writes.eq(self.retarget_home)
            with m.If(task.reads == self.retarget_tm):
                m.d.sync += target.reads.eq(self.retarget_home)


class DispatchWindow(AgeQueue):
    """The ``hts.window`` decoded tasks; up to ``hts.dispatch_width`` move to their stations per cycle.

    Ports, besides those of :class:`AgeQueue` (``room``: decode appends only when it is
    non-zero):

    - ``append``, ``append_task`` (in, from decode): one decoded task, landing at the
      edge behind every task that stays. It is not squashed this cycle (its process
      cannot decode in the cycle its branch is squashed), but it does get the
      end-of-cycle updates: ``broadcast`` (decode ignores only the CDB's tags, not the
      squashed ones), ``confirm`` and the retarget;
    - ``station_room`` (in, from the stations): per accelerator class, the free entries
      its station had at the start of the cycle;
    - ``issue_valid``, ``issue_task`` (out, to the stations): the tasks moving this
      cycle, oldest first in the low positions (``issue_valid`` is a run of ones from bit
      0). They are the oldest unsquashed tasks whose station has room, room counted down
      per class as tasks are taken in age order, at most ``dispatch_width`` of them
      (``DispatchWindow.select``). They leave the window at the edge; the records are the
      start-of-cycle ones, so the station applies this cycle's updates as it inserts them.
    """

    def __init__(self, config: SystemConfig):
        hts, task = config.hts, task_layout(config)
        self._width = hts.dispatch_width
        super().__init__(config, hts.window, {
            "append": In(1),
            "append_task": In(task),
            "station_room": In(data.ArrayLayout(range(hts.rs_entries + 1), len(config.accelerators))),
            "issue_valid": Out(hts.dispatch_width),
            "issue_task": Out(data.ArrayLayout(task, hts.dispatch_width)),
        })

    def _arrivals(self) -> list:
        return [(self.append, self.append_task)]

    def _departures(self, m: Module, movable: list) -> list:
        capacity, width = self._capacity, self._width
        # issued_before[i]: tasks older than entry i that issue this cycle (its output position).
        issued_before = [Signal(range(width + 1), name=f"issued_before_{index}") for index in range(capacity + 1)]
        issued = []
        for index, entry in enumerate(self.entries):
            older_same_class = _count(went & (self.entries[older].accel_class == entry.accel_class)
                                      for older, went in enumerate(issued))
            goes = Signal(name=f"issues_{index}")
            m.d.comb += [
                goes.eq(movable[index] & (issued_before[index] < width)
                        & (older_same_class < self.station_room[entry.accel_class])),
                issued_before[index + 1].eq(issued_before[index] + goes),
            ]
            issued.append(goes)

        for position in range(width):
            m.d.comb += self.issue_valid[position].eq(issued_before[capacity] > position)
            for index in range(position, capacity):
                with m.If(issued[index] & (issued_before[index] == position)):
                    m.d.comb += self.issue_task[position].eq(self.entries[index])
        return issued
