"""Signs of life from long silent steps (hts.base.progress): one line per interval while a
step runs, none after it, however it ends. The intervals here are milliseconds."""

import threading
import time

import pytest

from hts.base import progress
from hts.base.progress import duration_text, heartbeat

INTERVAL_S = 0.05


class Recorder:
    """A progress callback that notes each line and when it arrived.

    ``slow_s`` makes each call take that long before the line counts as written, as a
    blocked stderr would: a line still being written when the step ends must be finished
    before the ``with`` block is left, not after.
    """

    def __init__(self, slow_s: float = 0.0):
        self.slow_s = slow_s
        self.lines: list[tuple[float, str]] = []

    def __call__(self, message: str):
        time.sleep(self.slow_s)
        self.lines.append((time.monotonic(), message))

    def messages(self) -> list[str]:
        return [message for _, message in self.lines]


def _heartbeat_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("heartbeat")]


def test_a_long_step_is_reported_once_per_interval_with_its_name_and_elapsed_time():
    record = Recorder()
    started = time.monotonic()
    with heartbeat("yosys (block)", record, interval_s=INTERVAL_S):
        time.sleep(10.5 * INTERVAL_S)
    # Ten are due; a loaded machine may delay some (each then stands for the ones it
    # passed), never add any: the n-th comes n intervals after the start, or later.
    assert 5 <= len(record.lines) <= 10
    assert all(message == "yosys (block): still running, 0 s so far" for message in record.messages())
    assert all(when - started >= number * INTERVAL_S * 0.99
               for number, (when, _) in enumerate(record.lines, start=1))


def test_no_line_follows_the_step_even_one_being_written_as_it_ends():
    record = Recorder(slow_s=INTERVAL_S)       # the thread is mostly inside the callback
    with heartbeat("nextpnr", record, interval_s=INTERVAL_S / 5):
        time.sleep(4 * INTERVAL_S)
    left = time.monotonic()
    count = len(record.lines)
    time.sleep(4 * INTERVAL_S)
    assert count >= 1
    assert len(record.lines) == count and all(when <= left for when, _ in record.lines)
    assert not _heartbeat_threads()


def test_the_heartbeat_stops_when_the_step_raises():
    record = Recorder()
    with pytest.raises(RuntimeError, match="the tool failed"), heartbeat("yosys", record, interval_s=INTERVAL_S):
        time.sleep(3.5 * INTERVAL_S)
        raise RuntimeError("the tool failed")
    count = len(record.lines)
    time.sleep(4 * INTERVAL_S)
    assert count >= 1 and len(record.lines) == count
    assert not _heartbeat_threads()


def test_a_step_shorter_than_the_interval_says_nothing_and_is_not_held_up():
    record = Recorder()
    started = time.monotonic()
    with heartbeat("Verilog", record, interval_s=30.0):
        pass
    assert time.monotonic() - started < 1.0
    assert record.lines == []


def test_the_interval_is_read_when_the_step_starts(monkeypatch):
    """The toolkit's steps take the default, which tests shorten as here."""
    monkeypatch.setattr(progress, "INTERVAL_S", INTERVAL_S)
    record = Recorder()
    with heartbeat("[cosim] Verilator model build", record):
        time.sleep(3.5 * INTERVAL_S)
    assert len(record.lines) >= 1


def test_the_default_interval_keeps_the_issue_s_promise():
    assert progress.INTERVAL_S <= 30.0


def test_the_default_callback_writes_to_stderr_only(capsys):
    with heartbeat("yosys", interval_s=INTERVAL_S):
        time.sleep(2.5 * INTERVAL_S)
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("yosys: still running, ")
    assert all(line.startswith("yosys: still running, ") for line in err.splitlines())


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (45.9, "45 s"), (60, "1 min 00 s"), (185, "3 min 05 s"),
                                           (3725, "62 min 05 s")])
def test_durations_read_as_minutes_and_seconds(seconds, text):
    assert duration_text(seconds) == text
