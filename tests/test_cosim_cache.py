"""The co-simulation cache checks itself (hts.cosim.run), and so does the exploration cache.

A build is made in a fresh folder and renamed into place when complete, with a stamp
holding its simulator's digest; a cached build whose simulator does not run is built
again once; an unusable cache location is an error naming its variable. Here cocotb's
runner is a stand-in that "builds" a few bytes and "simulates" as each test asks, so
these tests need no Verilator; the last ones (cosim tier) damage a real build.
"""

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from hts.base.config import load_config
from hts.base.errors import HTSError
from hts.cosim import run as cosim_run
from hts.cosim.run import build, build_key, cosimulate, is_built
from hts.cosim.scoreboard import Job
from hts.cosim.top import CLOCKED

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROGRAM = str(EXAMPLES / "paper_independent.s")


def _hts(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "hts", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


class FakeVerilator:
    """cocotb's runner, as far as hts.cosim.run uses it. ``runs`` are what each simulation
    does in turn: None succeeds, an exception is raised as the runner raises it."""

    def __init__(self, runs=(), during_build=None):
        self.builds: list[list[str]] = []
        self.build_dirs: list[Path] = []
        self.runs = list(runs)
        self.during_build = during_build

    def build(self, build_dir, **_):
        build_dir = Path(build_dir)
        self.builds.append(sorted(path.name for path in build_dir.iterdir()))
        self.build_dirs.append(build_dir)
        if self.during_build:
            self.during_build(build_dir)
        (build_dir / CLOCKED).write_bytes(f"simulator {len(self.builds)}".encode())

    def test(self, build_dir, extra_env, **_):
        outcome = self.runs.pop(0) if self.runs else None
        if outcome is not None:
            raise outcome
        Path(extra_env["HTS_COSIM_JOB"]).with_suffix(".out").write_bytes(pickle.dumps([]))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty HTS_COSIM_CACHE, and the tiny configuration's folder in it. Verilog
    conversion is stubbed out: the stand-in runner does not read it."""
    monkeypatch.setenv("HTS_COSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cosim_run.amaranth_verilog, "convert", lambda *args, **kwargs: "module hts_cosim; endmodule")
    monkeypatch.setattr(cosim_run, "clocked_wrapper", lambda verilog: "module hts_cosim_clocked; endmodule")
    config = load_config("tiny")
    return config, tmp_path / "cache" / build_key(config, False)


@pytest.fixture
def verilator(monkeypatch):
    def install(**kwargs):
        fake = FakeVerilator(**kwargs)
        monkeypatch.setattr("cocotb_tools.runner.get_runner", lambda name: fake)
        return fake
    return install


def _quiet(message):
    pass


def _hidden(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.parent.iterdir() if path.name.startswith("."))


# ---- the stamp ------------------------------------------------------------------------------

def test_a_build_is_stamped_with_its_simulator_s_digest_and_left_nothing_beside_it(cache, verilator):
    config, folder = cache
    fake = verilator()
    assert build(config, progress=_quiet) == folder
    assert fake.build_dirs[0].parent == folder.parent and fake.build_dirs[0] != folder    # built beside, renamed
    assert (folder / "built").read_text().startswith("ok\nsha256 ")
    assert is_built(folder) and _hidden(folder) == []
    assert build(config, progress=_quiet) == folder and len(fake.builds) == 1             # then cached


def test_a_folder_without_its_stamp_is_built_again_from_nothing(cache, verilator):
    config, folder = cache
    folder.mkdir(parents=True)
    (folder / "leftover.o").write_text("half a build, from a release that built in place")
    fake = verilator()
    build(config, progress=_quiet)
    assert fake.builds == [sorted([f"{CLOCKED}.sv", "hts_cosim.v"])]
    assert not (folder / "leftover.o").exists() and is_built(folder) and _hidden(folder) == []


def test_a_damaged_simulator_does_not_count_as_built(cache, verilator):
    config, folder = cache
    fake = verilator()
    build(config, progress=_quiet)
    (folder / CLOCKED).write_bytes(b"\0" * 16)           # a disk error, a copy cut short
    assert not is_built(folder)
    build(config, progress=_quiet)
    assert len(fake.builds) == 2 and is_built(folder)


def test_a_missing_simulator_does_not_count_as_built(cache, verilator):
    config, folder = cache
    verilator()
    build(config, progress=_quiet)
    (folder / CLOCKED).unlink()
    assert not is_built(folder)


def test_a_stamp_of_an_earlier_release_is_trusted_if_its_simulator_is_there(cache, verilator):
    config, folder = cache
    folder.mkdir(parents=True)
    (folder / CLOCKED).write_bytes(b"simulator")
    (folder / "built").write_text("ok\n")
    fake = verilator()
    assert build(config, progress=_quiet) == folder and fake.builds == []


def test_a_build_cut_off_leaves_no_folder_and_frees_its_lock(cache, verilator):
    config, folder = cache

    def interrupted(build_dir):
        (build_dir / "Vtop__ALL.a").write_bytes(b"half an archive")
        raise KeyboardInterrupt           # Ctrl-C, or SIGTERM through hts.base.processes

    verilator(during_build=interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(config, progress=_quiet)
    assert not folder.exists()
    assert [path.name for path in folder.parent.iterdir()] == [f"{folder.name}.lock"]
    with FileLock(folder.with_name(f"{folder.name}.lock"), timeout=1):
        pass


def test_what_a_killed_build_left_beside_the_folder_is_removed_by_the_next(cache, verilator):
    config, folder = cache
    folder.parent.mkdir(parents=True)
    (folder.parent / f".{folder.name}.abc123.building").mkdir()         # SIGKILL: no unwinding
    (folder.parent / f".{folder.name}.abc123.building" / "Vtop.o").write_text("x")
    verilator()
    build(config, progress=_quiet)
    assert _hidden(folder) == [] and is_built(folder)


def test_a_failed_build_quotes_its_log_and_leaves_no_folder(cache, verilator):
    config, folder = cache

    def fails(build_dir):
        (build_dir / "build.log").write_text("%Error: something Verilator says\n")
        raise RuntimeError("Command failed with return code: 1")

    verilator(during_build=fails)
    with pytest.raises(HTSError, match="(?s)Verilator build failed.*something Verilator says"):
        build(config, progress=_quiet)
    assert not folder.exists() and _hidden(folder) == []


# ---- a cached build that does not run ----------------------------------------------------------

def _job(config):
    return Job(config, ())


@pytest.mark.parametrize("failure", [
    RuntimeError("Command failed with return code: -11"),                 # SIGSEGV
    RuntimeError("Command failed with return code: -7"),                  # SIGBUS
    RuntimeError("Command failed with return code: 127"),                 # a library it needs has moved
    FileNotFoundError(2, "No such file or directory"),
    OSError(8, "Exec format error"),
], ids=["SIGSEGV", "SIGBUS", "127", "missing", "not-an-executable"])
def test_a_cached_build_that_does_not_run_is_built_again_once(cache, verilator, failure):
    config, folder = cache
    fake = verilator(runs=[failure, None])
    build(config, progress=_quiet)
    lines = []
    assert cosimulate(_job(config), progress=lines.append) == []
    assert len(fake.builds) == 2 and is_built(folder)
    assert lines[0].startswith(f"[cosim] the cached build in {folder} does not run (")
    assert lines[0].endswith("; building it again")


def test_a_build_that_still_does_not_run_names_the_folder_to_delete(cache, verilator):
    config, folder = cache
    crash = RuntimeError("Command failed with return code: -11")
    fake = verilator(runs=[crash, crash])
    with pytest.raises(HTSError, match=f"died of SIGSEGV, in a fresh build; delete {folder} "):
        cosimulate(_job(config), progress=_quiet)
    assert len(fake.builds) == 2


def test_a_simulation_that_fails_otherwise_is_not_blamed_on_the_build(cache, verilator):
    config, folder = cache
    fake = verilator(runs=[RuntimeError("Command failed with return code: 1")])
    with pytest.raises(HTSError, match="the cocotb simulation failed"):
        cosimulate(_job(config), progress=_quiet)
    assert len(fake.builds) == 1


def test_a_build_another_process_already_replaced_is_not_built_a_third_time(cache, verilator):
    config, folder = cache
    fake = verilator()
    build(config, progress=_quiet)
    seen = cosim_run._identity(folder)
    build(config, progress=_quiet, rebuild=seen)          # this one builds again...
    build(config, progress=_quiet, rebuild=seen)          # ...a second process that saw the same one does not
    assert len(fake.builds) == 2


# ---- where the cache is ----------------------------------------------------------------------

def test_a_file_as_hts_cosim_cache_is_an_error_naming_it(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    result = _hts("cosim", "-c", "tiny", PROGRAM, env={"HTS_COSIM_CACHE": str(not_a_folder)})
    assert result.returncode == 1
    assert result.stderr == (f"HTS_COSIM_CACHE={not_a_folder}: not a folder; the cache of co-simulation builds "
                             "needs one\n")


def _read_only_folder(tmp_path) -> Path:
    """An empty folder this process cannot write in (root writes in any chmod 555 folder:
    then an empty sysfs folder)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o555)
        return folder
    for candidate in (Path("/sys/kernel/software_nodes"), Path("/sys/kernel/iommu_groups")):
        if candidate.is_dir() and not any(candidate.iterdir()):
            return candidate
    pytest.skip("no read-only empty folder for root")


def test_a_read_only_hts_cosim_cache_is_an_error_naming_it(tmp_path, monkeypatch, cache, verilator):
    config, _ = cache
    read_only = _read_only_folder(tmp_path)
    monkeypatch.setenv("HTS_COSIM_CACHE", str(read_only))
    fake = verilator()
    with pytest.raises(HTSError) as error:
        build(config, progress=_quiet)
    assert str(error.value) == (f"HTS_COSIM_CACHE={read_only}: cannot write in the cache of co-simulation "
                                "builds: Permission denied")
    assert fake.builds == []


def test_a_cache_that_cannot_be_created_is_an_error_naming_it(tmp_path, monkeypatch, cache, verilator):
    config, _ = cache
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HTS_COSIM_CACHE", str(tmp_path / "file" / "cache"))
    verilator()
    with pytest.raises(HTSError, match=f"^HTS_COSIM_CACHE={tmp_path}/file/cache: cannot create the cache"):
        build(config, progress=_quiet)


def test_hts_explore_checks_its_cache_before_any_work(tmp_path, monkeypatch):
    from hts.flows import explore as explore_flow
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    monkeypatch.setenv("HTS_EXPLORE_CACHE", str(not_a_folder))
    monkeypatch.setattr(explore_flow, "fan_out", lambda *args: pytest.fail("work started"))
    points = explore_flow.points(load_config("tiny"), explore_flow.SweepSpec({"hts.queue_depth": (4,)},
                                                                             {"p": Path(PROGRAM).read_text()}), False)
    with pytest.raises(HTSError, match=f"^HTS_EXPLORE_CACHE={not_a_folder}: not a folder"):
        explore_flow.explore(points, workers=0, progress=_quiet)
    read_only = _read_only_folder(tmp_path)
    monkeypatch.setenv("HTS_EXPLORE_CACHE", str(read_only))
    with pytest.raises(HTSError, match=f"^HTS_EXPLORE_CACHE={read_only}: cannot write in"):
        explore_flow.explore(points, workers=0, progress=_quiet)


def test_a_damaged_explore_cache_entry_is_run_again(tmp_path, monkeypatch):
    from hts.flows import explore as explore_flow
    monkeypatch.setenv("HTS_EXPLORE_CACHE", str(tmp_path))
    points = explore_flow.points(load_config("tiny"), explore_flow.SweepSpec({"hts.queue_depth": (4,)},
                                                                             {"p": Path(PROGRAM).read_text()}), False)
    first = explore_flow.explore(points, workers=0, progress=_quiet)
    [entry] = tmp_path.glob("*.json")
    entry.write_text(entry.read_text()[:10])             # cut short by hand
    again = explore_flow.explore(points, workers=0, progress=_quiet)
    assert again.jobs_reused == 0 and [o.row for o in again.outcomes] == [o.row for o in first.outcomes]


# ---- a real build, damaged (cosim tier: one Verilator build) -----------------------------------

@pytest.mark.cosim
def test_a_damaged_cached_simulator_is_rebuilt_and_the_run_matches(tmp_path, warm_tiny_build):
    """The warm build of tiny, linked into a cache of its own with a stamp of an earlier
    release (no digest) and its simulator zeroed: the run finds it does not start, builds
    it again, and matches."""
    key = warm_tiny_build.name
    cache = tmp_path / "cache"
    shutil.copytree(warm_tiny_build, cache / key, copy_function=os.link)           # hard links: cheap; never written through
    (cache / key / CLOCKED).unlink()
    (cache / key / CLOCKED).write_bytes(b"\0" * 4096)
    (cache / key / CLOCKED).chmod(0o755)
    (cache / key / "built").unlink()
    (cache / key / "built").write_text("ok\n")
    result = _hts("cosim", "-c", "tiny", PROGRAM, "--json", env={"HTS_COSIM_CACHE": str(cache)}, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"[cosim] the cached build in {cache / key} does not run (cannot start {CLOCKED}: Exec format error)" \
        in result.stderr
    assert '"match": true' in result.stdout
    assert is_built(cache / key) and (cache / key / "built").read_text().startswith("ok\nsha256 ")
    assert sorted(path.name for path in cache.iterdir()) == sorted([key, f"{key}.lock"])
