"""A --scheduler where no Dask scheduler answers is one line of error at once (hts.flows.fanout),
where Dask's own client retried for 30 s and ended on a 40-line traceback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hts.base.errors import HTSError
from hts.flows.fanout import fan_out

PROGRAM = str(Path(__file__).resolve().parents[1] / "examples" / "paper_independent.s")


@pytest.mark.parametrize("address, reason", [
    ("tcp://127.0.0.1:1", "no Dask scheduler answers there (Connection refused)"),
    ("nonsense", "not a Dask scheduler's address"),
])
def test_an_unreachable_scheduler_is_one_line_at_once(address, reason):
    started = time.monotonic()
    with pytest.raises(HTSError, match=f"^--scheduler {address}: " + reason.replace("(", r"\(").replace(")", r"\)")):
        list(fan_out(abs, [1], address))
    assert time.monotonic() - started < 3


def test_hts_explore_on_an_unreachable_scheduler_exits_1_with_one_line(tmp_path):
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "hts", "explore", PROGRAM, "--key", "hts.queue_depth=4,8",
                             "--scheduler", "tcp://127.0.0.1:1"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HTS_EXPLORE_CACHE": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == ("--scheduler tcp://127.0.0.1:1: no Dask scheduler answers there "
                                              "(Connection refused)")
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 20           # Python and the imports included; Dask alone took 30 s
