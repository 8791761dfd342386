"""Fan-outs on a real ``dask.distributed`` cluster started here: ``hts fuzz --scheduler``
gives the local run's per-seed results, and a worker killed mid-run loses no seed."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.cosim

pytest.importorskip("dask.distributed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def cluster():
    """A ``dask scheduler`` and two ``dask worker`` processes, as a user starts them."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                 "--dashboard-address", ":0", "--no-nanny"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
               for _ in range(2)]
    from dask.distributed import Client
    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    yield address, workers
    for process in [*workers, scheduler]:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)


def _fuzz(*args, timeout=7200):
    return subprocess.run([sys.executable, "-m", "hts", "fuzz", *args], capture_output=True, text=True,
                          timeout=timeout)


def _seeds(path):
    return {row["seed"]: row for row in json.loads(path.read_text())}


# The acceptance run of the issue (2,000 seeds, about an hour on two cores) on request.
@pytest.mark.parametrize("system, seeds, batch", [("one", 16, 4),
                                                  pytest.param("small", 2000, 100, marks=pytest.mark.slow)])
def test_fuzz_on_a_cluster_equals_the_local_run_even_when_a_worker_dies(tmp_path, cluster, system, seeds, batch):
    address, workers = cluster
    sweep = ["--system", system, "--seeds", str(seeds), "--batch", str(batch)]
    local = _fuzz(*sweep, "--json", tmp_path / "local.json")
    assert local.returncode == 0, local.stderr
    remote = subprocess.Popen([sys.executable, "-m", "hts", "fuzz", *sweep, "--scheduler", address,
                               "--json", tmp_path / "remote.json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    # Kill one worker once the first batch is back: its running batch must be redone elsewhere.
    deadline = time.monotonic() + 3600
    progress = ""
    while f"[fuzz] {batch}/{seeds}" not in progress and time.monotonic() < deadline and remote.poll() is None:
        progress += remote.stderr.readline()
    os.killpg(workers[0].pid, signal.SIGKILL)
    out, err = remote.communicate(timeout=7200)
    assert remote.returncode == 0, progress + err
    assert f"{seeds} of {seeds} random programs match the model" in out
    assert _seeds(tmp_path / "remote.json") == _seeds(tmp_path / "local.json")
    assert workers[0].poll() is not None                  # the kill happened before the run ended
