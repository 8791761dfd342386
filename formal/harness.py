"""What every formal harness shares: reset, named assumptions, checks, covers, age orders.

A harness instantiates one real block (or two that are wired together in the scheduler),
leaves its inputs undriven, so that they become free top-level inputs (any value in
every cycle), and narrows them with named assumptions. docs/verification.md ("Formal
proofs") explains the reset and the choice of properties.
"""

from collections.abc import Callable
from dataclasses import dataclass

from amaranth.asserts import AnySeq, Initial
from amaranth.hdl import Assert, Assume, Cat, ClockDomain, Cover, Elaboratable, Module, Value
from amaranth.hdl._ir import Fragment
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from hts.base.config import SystemConfig

__all__ = ["PropertyGroup", "Harness", "elaborated_with", "registers", "free_inputs", "strict_total_order"]


@dataclass(frozen=True)
class PropertyGroup:
    """One proof: the properties of ``name`` in a harness, and how sby checks them.

    ``mode`` is ``prove`` (k-induction of ``depth`` steps, with a base case as deep) or
    ``bmc`` (every trace of ``depth`` cycles from reset); ``mode`` and ``depth`` are each
    a value or a function of the configuration. Covers are searched to ``cover_depth``
    cycles from reset (a value or a function of the configuration). ``runs_on`` leaves the group out of configurations where its proof
    does not finish in reasonable time (docs/verification.md says which).
    """
    name: str
    mode: str | Callable[[SystemConfig], str]
    depth: int | Callable[[SystemConfig], int]
    cover_depth: int | Callable[[SystemConfig], int] = 8
    runs_on: Callable[[SystemConfig], bool] = lambda config: True

    def mode_for(self, config: SystemConfig) -> str:
        return self.mode(config) if callable(self.mode) else self.mode

    def depth_for(self, config: SystemConfig) -> int:
        return self.depth(config) if callable(self.depth) else self.depth

    def cover_depth_for(self, config: SystemConfig) -> int:
        return self.cover_depth(config) if callable(self.cover_depth) else self.cover_depth


class Harness(Elaboratable):
    """Base of the harnesses: subclasses build the block in ``build`` and state properties.

    ``group`` chooses which assertions are emitted (the assumptions and covers are always
    there); ``drop`` names assumptions to leave out, to show that a proof needs them.
    Assertions and covers are not checked in the reset cycle (below).
    """

    #: The property groups this harness proves, by name.
    GROUPS: tuple[PropertyGroup, ...] = ()
    #: The names of its assumptions (``drop`` must name some of these).
    ASSUMPTIONS: tuple[str, ...] = ()

    def __init__(self, config: SystemConfig, group: str, drop=frozenset()):
        unknown = set(drop) - set(self.ASSUMPTIONS)
        if unknown:
            self._MustUse__silence = True   # refused, not forgotten: no "never used" warning
            raise ValueError(f"{type(self).__name__} has no assumption {', '.join(sorted(unknown))} "
                             f"(it has: {', '.join(self.ASSUMPTIONS)})")
        if group not in {g.name for g in self.GROUPS}:
            self._MustUse__silence = True
            raise ValueError(f"{type(self).__name__} has no property group {group!r}")
        self.config = config
        self.group = group
        self.drop = frozenset(drop)
        # The clock is the harness's only port: the block's inputs are driven inside it.
        self.domain = ClockDomain("sync")
        self._running = None
        self._uses = {}

    def elaborate(self, platform):
        m = Module()
        # Power-up state is left arbitrary (the prove flow strips every register's initial
        # value), reset is high in the first cycle only, and properties hold from the cycle
        # after: what the scheduler sees after its own reset, whatever ran before.
        m.domains.sync = self.domain
        first_cycle = Initial()
        m.d.comb += self.domain.rst.eq(first_cycle)
        self._running = ~first_cycle
        self.build(m)
        return m

    def build(self, m: Module):
        raise NotImplementedError

    def assume(self, m: Module, name: str, condition):
        """Constrain the free inputs (from the cycle after reset) unless ``name`` is dropped."""
        assert name in self.ASSUMPTIONS, name
        if name not in self.drop:
            self._property(m, Assume, name, condition)

    def check(self, m: Module, groups, name: str, condition):
        """Assert ``condition`` when proving ``groups`` (a name or a tuple of names: a
        property another group's induction needs is asserted there too)."""
        if self.group in ((groups,) if isinstance(groups, str) else groups):
            self._property(m, Assert, name, condition)

    def cover(self, m: Module, group: str, name: str, condition):
        """A state that shows ``group``'s properties are not vacuous."""
        if group == self.group:
            self._property(m, Cover, name, condition)

    def _property(self, m: Module, kind, name: str, condition):
        """``kind(condition)`` from the cycle after reset, in a submodule named ``name``, so
        that sby's reports name the property."""
        uses = self._uses[name] = self._uses.get(name, 0) + 1
        holder = m.submodules[name if uses == 1 else f"{name}_{uses}"] = Module()
        with holder.If(self._running):
            holder.d.comb += kind(condition, name)


def free_inputs(m: Module, component: wiring.Component, wired=()):
    """Drive every input port of ``component`` with a free value (any value, new every
    cycle), except the ports in ``wired``, which the harness connects to another block."""
    wired = {id(Value.cast(port)) for port in wired}   # a struct port and its Value both name it
    for _, member, port in component.signature.flatten(component):
        port = Value.cast(port)
        if member.flow == In and id(port) not in wired:
            m.d.comb += port.eq(AnySeq(port.shape()))


def elaborated_with(component: wiring.Component, name: str):
    """``component`` elaborated, and the register ``name`` it keeps inside ``elaborate``
    (state no port shows, which an induction may need to constrain).

    The fragment replaces the component as the harness's submodule; its ports are the
    component's own signals.
    """
    fragment = Fragment.get(component, None)
    return fragment, registers(fragment, name)[name]


def registers(fragment: Fragment, *names: str) -> dict[str, Value]:
    """The registers ``names`` that an elaborated block (``fragment``) keeps inside
    ``elaborate``, by name."""
    found = {signal.name: signal for statement in fragment.statements.get("sync", [])
             for signal in statement._lhs_signals() if signal.name in names}
    missing = set(names) - set(found)
    if missing:
        raise LookupError(f"{type(fragment.origins[0]).__name__} keeps no register named {', '.join(sorted(missing))}")
    return found


def strict_total_order(valid, older) -> dict[str, Value]:
    """The conditions under which ``older`` (``older[i]`` bit ``j``: slot ``j`` is older than
    slot ``i``) is a strict total order over the valid slots, by name; those that a
    queue too small for them would state about nothing are left out.

    Irreflexive, and exactly one of two valid slots the older (total and antisymmetric),
    make the relation a tournament; transitive makes that tournament an order.
    """
    count = len(older)
    valid = Cat(valid)

    def both(*slots):
        return Cat(*(valid[slot] for slot in slots)).all()

    conditions = {"irreflexive": Cat(*(~(valid[i] & older[i][i]) for i in range(count))).all()}
    if count > 1:
        conditions["total_antisymmetric"] = Cat(*(~both(i, j) | (older[i][j] ^ older[j][i])
                                                  for i in range(count) for j in range(i + 1, count))).all()
    if count > 2:
        conditions["transitive"] = Cat(*(~(both(i, j, k) & older[i][j] & older[j][k]) | older[i][k]
                                         for i in range(count) for j in range(count) for k in range(count)
                                         if len({i, j, k}) == 3)).all()
    return conditions
