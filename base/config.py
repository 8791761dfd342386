"""System configuration: one frozen dataclass tree, read from ``system.yaml`` or a preset.

Every parameter of the scheduler and of the system around it comes from
:class:`SystemConfig`; the assembler, the models and the RTL take it as their only source
of sizes. Each field below carries its default, its legal range and a one-line meaning in
its metadata, so validation, the defaults and ``hts config`` all read the same
declaration. Widths derived from the sizes are computed once, in :class:`Widths`.

Errors name the file, line and dotted key path, e.g.::

    system.yaml:7:18: hts.queue_depth: must be >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from hts.isa import FIELDS, FIRST_RESERVED_ACCEL_ID, RESERVED_KEYNAMES

from .errors import ConfigError, HTSError, Location, display_path, shown
from .files import CONFIG_BYTES, load_yaml, read_text

__all__ = [
    "MemoryConfig", "AcceleratorClass", "SchedulerConfig", "TimingConfig", "SystemConfig", "Window",
    "Widths", "PRESETS", "DEFAULT_STEP_LIMIT", "MAX_STEP_LIMIT", "MAX_INSTANCES", "MAX_PROGRAM_WORDS", "load_config",
    "parse_config", "bits_for",
    "with_value", "with_values",
    "config_yaml",
]

# Instructions one process may execute in a run, on every scheduler (``--max-steps``): a
# loop that never exits stops within seconds on the cycle model, far above what any
# benchmark or example executes.
DEFAULT_STEP_LIMIT = 200_000
# The most ``--max-steps`` may raise it to: minutes on the cycle model.
MAX_STEP_LIMIT = 10_000_000
# Instances of one accelerator class.
MAX_INSTANCES = 64

PRESETS = ("default", "tiny", "large", "inflight128")

# The most instructions any configuration's program memory holds (hts.program_words).
MAX_PROGRAM_WORDS = 1 << 16

_KEYNAME = re.compile(r"[a-z_][a-z0-9_]*\Z")


def param(default=dataclasses.MISSING, *, lo=None, hi=None, doc: str):
    """A configuration field: default, inclusive range [lo, hi] and meaning."""
    return field(default=default, metadata={"lo": lo, "hi": hi, "doc": doc})


def bits_for(count: int) -> int:
    """Bits needed to index ``count`` things (at least 1, so a signal always exists)."""
    return max(1, (count - 1).bit_length())


@dataclass(frozen=True)
class MemoryConfig:
    block_words: int = param(64, lo=1, hi=1 << 16, doc="32-bit words per memory block (a power of two)")
    blocks: int = param(4096, lo=1, hi=1 << 16, doc="home memory size in blocks (A and C are 16-bit block indices)")

    def validate(self, key: str):
        if self.block_words & (self.block_words - 1):
            raise _InvalidValue(f"{key}.block_words", f"must be a power of two, got {self.block_words}")


@dataclass(frozen=True)
class AcceleratorClass:
    name: str = param(doc="assembly keyname of the class, e.g. fft_256")
    latency: int = param(lo=1, hi=(1 << 32) - 1, doc="cycles one task occupies an instance")
    count: int = param(1, lo=1, hi=MAX_INSTANCES, doc="instances of the class")
    id: int | None = param(None, lo=0, hi=FIRST_RESERVED_ACCEL_ID - 1,
                           doc="accelerator ID in instructions (auto-assigned when absent)")
    function: str | None = param(None, doc="function it computes, from hts.models.dsp (default: its name)")

    @property
    def computes(self) -> str:
        return self.function or self.name

    def validate(self, key: str):
        if not _KEYNAME.match(self.name):
            raise _InvalidValue(f"{key}.name", f"{shown(repr(self.name))} is not a keyname (lower-case letters, digits, _)")
        if self.name in RESERVED_KEYNAMES:
            raise _InvalidValue(f"{key}.name", f"{self.name!r} is reserved for the scheduler's own instructions")


@dataclass(frozen=True)
class SchedulerConfig:
    program_words: int = param(1024, lo=1, hi=MAX_PROGRAM_WORDS, doc="program memory of one process, in instructions")
    queue_depth: int = param(4, lo=1, hi=1024, doc="task queue entries per process")
    tracker_entries: int = param(16, lo=1, hi=1024, doc="memory tracker entries (in-flight output regions)")
    tracker_lanes: int = param(8, lo=1, hi=1024, doc="tracker entries a search compares per cycle: a search "
                               "takes ceil(tracker_entries / tracker_lanes) cycles")
    successor_slots: int = param(16, lo=2, hi=1024, doc="slots of a producer's successor list (tasks waiting for "
                                 "it); decode starts no task while a list in flight has fewer than two free")
    tlb_entries: int = param(8, lo=1, hi=1024, doc="Task Lookup Buffer entries (speculative region mappings)")
    tm_blocks: int = param(256, lo=1, hi=1 << 16, doc="transactional memory size in blocks")
    gprs: int = param(16, lo=1, hi=1 << 16, doc="general-purpose registers per process")
    loop_depth: int = param(4, lo=1, hi=64, doc="loop stack entries per process (deepest nesting)")
    dispatch_width: int = param(1, lo=1, hi=16, doc="tasks dispatched per cycle, the heads of as many classes' ready lists")
    cdb_width: int = param(1, lo=1, hi=16, doc="completions broadcast per cycle on the common data bus")
    processes: int = param(1, lo=1, hi=16, doc="processes running programs at once (PID is 4 bits)")
    speculation: bool = param(True, doc="speculate branches marked speculative (K bit 2)")
    spec_ids: int = param(4, lo=1, hi=32, doc="speculated branches unresolved at once (speculation IDs)")
    copyback_words_per_cycle: int = param(
        4, lo=1, hi=64, doc="words a memory port moves per cycle: copy-back, and an accelerator's write-back")

    @property
    def tracker_rows(self) -> int:
        """Cycles of one tracker search: rows of ``tracker_lanes`` entries, the last row maybe short."""
        return -(-self.tracker_entries // self.tracker_lanes)

    @property
    def search_lanes(self) -> int:
        """Entries compared per cycle: ``tracker_lanes``, or every entry if there are fewer."""
        return min(self.tracker_lanes, self.tracker_entries)


@dataclass(frozen=True)
class TimingConfig:
    interrupt_latency: int = param(876, lo=0, hi=1 << 24,
                                   doc="cycles from accelerator done to CPU notified by interrupt")
    l2_latency: int = param(23, lo=0, hi=1 << 16, doc="cycles of one L2-hit memory access by the CPU")
    memory_latency: int = param(23, lo=1, hi=1 << 16,
                                doc="cycles for the scheduler to read a word of memory (MR and BR branches)")


@dataclass(frozen=True)
class Window:
    """The home blocks one process may touch: ``[base, base + blocks)``, in absolute block numbers."""
    base: int = param(lo=0, hi=(1 << 16) - 1, doc="first home block of the process's window")
    blocks: int = param(lo=1, hi=1 << 16, doc="home blocks in the window")
    shared: bool = param(False, doc="may overlap other shared windows (buffers processes share)")

    @property
    def end(self) -> int:
        return self.base + self.blocks

    def holds(self, base: int, blocks: int) -> bool:
        """Whether the region ``(base, blocks)`` lies inside; an empty region touches nothing."""
        return blocks == 0 or (self.base <= base and base + blocks <= self.end)


@dataclass(frozen=True)
class Widths:
    """Signal widths derived from the sizes; computed here and nowhere else."""
    gpr_index: int
    pid: int
    accel_class: int
    instance: int
    phys_block: int
    home_end: int       # a home block number, or the end of home memory (window bounds)
    tag: int            # memory-tracker entry index
    pc: int             # program-memory address of one process
    region_blocks: int  # size field of a region (B and D of Table I)


@dataclass(frozen=True)
class SystemConfig:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    accelerators: tuple[AcceleratorClass, ...] = ()
    hts: SchedulerConfig = field(default_factory=SchedulerConfig)
    timing: TimingConfig = field(default_factory=TimingConfig)
    # Per process; empty: every process's window is the whole home memory, shared.
    windows: tuple[Window, ...] = ()
    source: str = field(default="<built-in>", compare=False)
    # Where each key path was written, so that a later check names the line too.
    marks: dict[str, Location] = field(default_factory=dict, compare=False, repr=False)

    def location_of(self, key: str) -> Location:
        """The line of ``key`` (a dotted path), or of its closest enclosing key in the file."""
        return _nearest_mark(self.marks, key, self.source)

    def accelerator(self, keyname: str) -> AcceleratorClass | None:
        return self._by_name.get(keyname)

    def window(self, pid: int) -> Window:
        """The home memory process ``pid`` may touch."""
        return self.windows[pid] if self.windows else Window(0, self.memory.blocks, shared=True)

    def accelerator_by_id(self, accel_id: int) -> AcceleratorClass | None:
        return self._by_id.get(accel_id)

    @cached_property
    def _by_name(self):
        return {acc.name: acc for acc in self.accelerators}

    @cached_property
    def _by_id(self):
        return {acc.id: acc for acc in self.accelerators}

    @cached_property
    def widths(self) -> Widths:
        return Widths(
            gpr_index=bits_for(self.hts.gprs),
            pid=bits_for(self.hts.processes),
            accel_class=bits_for(len(self.accelerators)),
            instance=bits_for(max(acc.count for acc in self.accelerators)),
            # Home memory first, transactional memory right above it.
            phys_block=bits_for(self.memory.blocks + self.hts.tm_blocks),
            home_end=bits_for(self.memory.blocks + 1),
            tag=bits_for(self.hts.tracker_entries),
            pc=bits_for(self.hts.program_words),
            region_blocks=next(width for name, _, width in FIELDS if name == "b"),
        )


# Which dataclass each section of the file maps to.
_SECTIONS = {"memory": MemoryConfig, "hts": SchedulerConfig, "timing": TimingConfig}


class _InvalidValue(Exception):
    """Raised inside validation; turned into a ConfigError with the key's location."""

    def __init__(self, key: str, message: str):
        self.key, self.message = key, message


def _yaml_with_marks(text: str, filename: str) -> tuple[Any, dict[str, Location]]:
    """Parse YAML, returning the data and the location of every key path."""
    document = load_yaml(text, filename, "configuration", error=ConfigError)
    return document.data, document.marks


def _type_name(annotation: str) -> str:
    return {"int": "an integer", "bool": "true or false", "str": "a string",
            "int | None": "an integer", "str | None": "a string"}.get(annotation, annotation)


def _check_value(key: str, value, spec: dataclasses.Field):
    annotation = spec.type
    if annotation == "bool":
        ok = isinstance(value, bool)
    elif annotation in ("int", "int | None"):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation in ("str", "str | None"):
        ok = isinstance(value, str)
    else:  # pragma: no cover - a new field type needs a branch above
        raise TypeError(f"no validation for field type {annotation}")
    if not ok:
        raise _InvalidValue(key, f"must be {_type_name(annotation)}, got {shown(repr(value))}")
    lo, hi = spec.metadata["lo"], spec.metadata["hi"]
    if lo is not None and value < lo:
        raise _InvalidValue(key, f"must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise _InvalidValue(key, f"must be <= {hi}, got {value}")


def _build(cls, key: str, raw):
    """Instantiate ``cls`` from a mapping, checking keys, types and ranges."""
    if not isinstance(raw, dict):
        raise _InvalidValue(key, f"must be a mapping of {', '.join(f.name for f in dataclasses.fields(cls))}")
    specs = {f.name: f for f in dataclasses.fields(cls)}
    for name in raw:
        if name not in specs:
            raise _InvalidValue(f"{key}.{name}", f"unknown key (known: {', '.join(specs)})")
    for name, spec in specs.items():
        if name in raw:
            _check_value(f"{key}.{name}", raw[name], spec)
        elif spec.default is dataclasses.MISSING:
            raise _InvalidValue(key, f"missing required key '{name}'")
    instance = cls(**raw)
    if hasattr(instance, "validate"):
        instance.validate(key)
    return instance


def _build_accelerators(raw) -> tuple[AcceleratorClass, ...]:
    if not isinstance(raw, list) or not raw:
        raise _InvalidValue("accelerators", "must be a non-empty list of {name, latency, count, id}")
    classes = [_build(AcceleratorClass, f"accelerators[{i}]", entry) for i, entry in enumerate(raw)]
    names, ids = {}, {}
    for i, acc in enumerate(classes):
        if acc.name in names:
            raise _InvalidValue(f"accelerators[{i}].name", f"{acc.name!r} already named accelerators[{names[acc.name]}]")
        names[acc.name] = i
        if acc.id is not None:
            if acc.id in ids:
                raise _InvalidValue(f"accelerators[{i}].id", f"{acc.id:#x} already taken by accelerators[{ids[acc.id]}]")
            ids[acc.id] = i
    # Auto-assign the lowest free IDs, in the order the classes are listed.
    free = (n for n in range(FIRST_RESERVED_ACCEL_ID) if n not in ids)
    assigned = []
    for i, acc in enumerate(classes):
        if acc.id is None:
            try:
                acc = dataclasses.replace(acc, id=next(free))
            except StopIteration:
                raise _InvalidValue(f"accelerators[{i}]", "no accelerator ID left to assign") from None
        assigned.append(acc)
    return tuple(assigned)


# Words of home memory and TM the simulators may hold: each run keeps a few copies of it.
MAX_MEMORY_WORDS = 1 << 26


def _check_memory_size(memory: MemoryConfig, hts: SchedulerConfig):
    """Refuse, before anything is allocated, a memory the simulators cannot hold."""
    words = (memory.blocks + hts.tm_blocks) * memory.block_words
    if words > MAX_MEMORY_WORDS:
        raise _InvalidValue("memory.block_words", f"(memory.blocks + hts.tm_blocks) x memory.block_words = "
                            f"{words:,} words ({words * 4 / 2**30:.1f} GiB) is more than the simulators hold "
                            f"({MAX_MEMORY_WORDS:,} words, {MAX_MEMORY_WORDS * 4 // 2**20} MiB)")


def _build_windows(raw, memory: MemoryConfig, hts: SchedulerConfig) -> tuple[Window, ...]:
    """One window per process, inside home memory, overlapping only where both are shared."""
    if not isinstance(raw, list) or len(raw) != hts.processes:
        raise _InvalidValue("windows", f"must list one window {{base, blocks}} per process "
                                       f"(hts.processes = {hts.processes})")
    windows = [_build(Window, f"windows[{i}]", entry) for i, entry in enumerate(raw)]
    for i, window in enumerate(windows):
        if window.end > memory.blocks:
            raise _InvalidValue(f"windows[{i}].blocks", f"the window [{window.base:#x}, {window.end:#x}) passes "
                                                         f"the end of home memory (memory.blocks = {memory.blocks:#x})")
        for j, other in enumerate(windows[:i]):
            if window.base < other.end and other.base < window.end and not (window.shared and other.shared):
                raise _InvalidValue(f"windows[{i}].base", f"overlaps windows[{j}]; windows overlap only when "
                                                           "both say shared: true")
    return tuple(windows)


def parse_config(text: str, filename: str = "<string>") -> SystemConfig:
    """Validate a configuration given as YAML text."""
    raw, marks = _yaml_with_marks(text, filename)
    try:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise _InvalidValue("", "the configuration must be a mapping with keys "
                                    "memory, accelerators, hts, timing, windows")
        known = set(_SECTIONS) | {"accelerators", "windows"}
        for name in raw:
            if name not in known:
                raise _InvalidValue(str(name), f"unknown key (known: {', '.join(sorted(known))})")
        if "accelerators" not in raw:
            raise _InvalidValue("accelerators", "missing: list the accelerator classes of the system")
        sections = {name: _build(cls, name, raw.get(name, {})) for name, cls in _SECTIONS.items()}
        _check_memory_size(sections["memory"], sections["hts"])
        windows = _build_windows(raw["windows"], sections["memory"], sections["hts"]) if "windows" in raw else ()
        return SystemConfig(accelerators=_build_accelerators(raw["accelerators"]), windows=windows,
                            source=filename, marks=marks, **sections)
    except _InvalidValue as err:
        raise ConfigError(err.key, err.message, _nearest_mark(marks, err.key, filename)) from None


def _parent_key(key: str) -> str:
    """``hts.queue_depth`` -> ``hts``; ``accelerators[2]`` -> ``accelerators``; ``hts`` -> ``""``."""
    if key.endswith("]"):
        return key[:key.rindex("[")]
    return key.rpartition(".")[0]


def _nearest_mark(marks: dict[str, Location], key: str, filename: str) -> Location:
    """Location of ``key``, or of its closest enclosing key that is in the file."""
    while key and key not in marks:
        key = _parent_key(key)
    return marks.get(key, Location(filename))


def load_config(spec: str | Path | None = None) -> SystemConfig:
    """A configuration by preset name (one of :data:`PRESETS`) or YAML file path."""
    spec = "default" if spec is None else str(spec)
    if spec in PRESETS:
        text = resources.files("hts.base.presets").joinpath(f"{spec}.yaml").read_text()
        return parse_config(text, f"<preset {spec}>")
    path = Path(spec)
    try:
        text = read_text(path, CONFIG_BYTES, "configuration file")
    except HTSError as err:
        if not os.path.lexists(path):
            raise ConfigError("", f"no such configuration file or preset (presets: {', '.join(PRESETS)})",
                              err.location) from None
        raise ConfigError("", err.message, err.location) from None
    return parse_config(text, display_path(path))


def describe(config: SystemConfig) -> list[tuple[str, Any, str]]:
    """(key path, value, meaning) of every parameter, for ``hts config`` and the docs."""
    rows = []
    for section in ("memory", "hts", "timing"):
        obj = getattr(config, section)
        for spec in dataclasses.fields(obj):
            rows.append((f"{section}.{spec.name}", getattr(obj, spec.name), spec.metadata["doc"]))
    for pid in range(config.hts.processes):
        window = config.window(pid)
        rows.append((f"windows[{pid}]", f"[{window.base:#x}, {window.end:#x})" + (" shared" * window.shared),
                     "home blocks the process may touch" + ("" if config.windows else " (no windows: all memory)")))
    return rows


def config_yaml(config: SystemConfig) -> str:
    """``config`` as a configuration file that :func:`load_config` reads back to an equal one."""
    return yaml.safe_dump(_file_form(config))


def _file_form(config: SystemConfig) -> dict:
    raw = dataclasses.asdict(config)
    del raw["source"], raw["marks"]           # where it came from, not what it sets
    # Optional keys left unset are None here, and a configuration file leaves them out.
    raw["accelerators"] = [{field: setting for field, setting in acc.items() if setting is not None}
                           for acc in raw["accelerators"]]
    if not raw["windows"]:
        del raw["windows"]                    # none: all of memory, which a file says by leaving it out
    return raw


def with_value(config: SystemConfig, key: str, value) -> SystemConfig:
    """``config`` with ``key`` set to ``value``, validated like a file. ``key`` is
    ``section.name``, ``accelerators.FIELD`` (every class) or ``accelerators.CLASS.FIELD``."""
    return with_values(config, {key: value})


def with_values(config: SystemConfig, values: dict[str, Any]) -> SystemConfig:
    """``config`` with every key of ``values`` set (keys as for :func:`with_value`), validated
    once, as a file that sets them all."""
    raw = _file_form(config)
    for key, value in values.items():
        _set_key(raw, key, value)
    changes = ", ".join(f"{key}={value}" for key, value in values.items())
    return parse_config(yaml.dump(raw, Dumper=_PlainDumper), f"{config.source} with {shown(changes, 200)}")


class _PlainDumper(yaml.SafeDumper):
    """Writes a value set in several places (``accelerators.count`` sets every class) out
    in full each time: the loader refuses aliases."""

    def ignore_aliases(self, data):
        return True


def _set_key(raw: dict, key: str, value):
    section, _, name = key.partition(".")
    if section == "accelerators" and name:
        _set_accelerator_field(raw["accelerators"], key, name, value)
    elif isinstance(raw.get(section), dict) and name:
        raw[section][name] = value
    else:
        sections = ", ".join(k for k, v in raw.items() if isinstance(v, dict))
        raise ConfigError(key, f"not a configuration key (section.name with sections {sections}; "
                               f"accelerators.FIELD; or accelerators.CLASS.FIELD)")


def _set_accelerator_field(accelerators: list[dict], key: str, name: str, value):
    class_name, _, field = name.rpartition(".")
    chosen = [acc for acc in accelerators if not class_name or acc["name"] == class_name]
    if not chosen:
        raise ConfigError(key, f"no accelerator class {shown(repr(class_name))} (classes: "
                               f"{', '.join(acc['name'] for acc in accelerators)})")
    for acc in chosen:
        acc[field] = value
