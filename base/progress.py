"""Signs of life from steps that run for minutes without a word.

A Verilator build, a Yosys or nextpnr run, or the first start of a WebAssembly tool (which
compiles it first) can each sit silent for several minutes; a user cannot tell that from a
hang. :func:`heartbeat` wraps such a step: while it runs, a daemon thread reports the
step's name and the time it has taken every :data:`INTERVAL_S` seconds, through the
caller's own progress callback (which the commands point at stderr, so that the stdout
of ``--json`` stays one JSON object).
"""

import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["INTERVAL_S", "heartbeat", "is_heartbeat", "to_stderr", "duration_text"]

# The longest a long step goes without a line: the issue asks for one every 30 s at least.
# Read at each call, so that tests can shorten it for the steps the toolkit wraps.
INTERVAL_S = 30.0

# How a heartbeat's line ends (see :func:`_line`), for readers of stderr that look for
# other lines (e.g. tests that expect no warnings from a step that took a minute).
_ENDING = re.compile(r": still running, (\d+ min \d\d|\d+) s so far$")


def to_stderr(message: str) -> None:
    """Write one progress line to stderr.

    Parameters
    ----------
    message : str
        The line, without its newline.

    Notes
    -----
    The line and its newline go out in one write, so that a heartbeat and the main
    thread never splice their lines into each other.
    """
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def duration_text(seconds: float) -> str:
    """A duration as a person reads it: ``45 s``, ``3 min 05 s``.

    Parameters
    ----------
    seconds : float
        The duration; rounded down to whole seconds.

    Returns
    -------
    str
    """
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


def _line(step: str, seconds: float) -> str:
    return f"{step}: still running, {duration_text(seconds)} so far"


def is_heartbeat(line: str) -> bool:
    """Whether ``line`` (of a step's progress, without its newline) is a heartbeat's.

    Parameters
    ----------
    line : str

    Returns
    -------
    bool
    """
    return _ENDING.search(line) is not None


def _beat_until(stop: threading.Event, step: str, progress: Callable[[str], None], interval_s: float) -> None:
    """Report ``step`` at multiples of ``interval_s`` from now, until ``stop`` is set."""
    started = time.monotonic()
    beat = 0
    while True:
        # Aimed at multiples of the interval from the start, so that the lines do not drift
        # later by the time each report takes; one that a busy machine delays past the next
        # multiple replaces it, rather than two lines coming at once.
        beat = max(beat + 1, int((time.monotonic() - started) / interval_s) + 1)
        if stop.wait(max(0.0, started + beat * interval_s - time.monotonic())):
            return
        progress(_line(step, time.monotonic() - started))


@contextmanager
def heartbeat(step: str, progress: Callable[[str], None] = to_stderr,
              interval_s: float | None = None) -> Iterator[None]:
    """Report that ``step`` is still running, while the ``with`` block runs it.

    Parameters
    ----------
    step : str
        What runs, as the lines name it: ``"[cosim] Verilator model build"`` gives
        ``[cosim] Verilator model build: still running, 1 min 30 s so far``.
    progress : callable
        Takes each line. It is called from a thread of its own, while the block's thread
        waits for the step.
    interval_s : float, optional
        Seconds between lines (default :data:`INTERVAL_S`, as it is when the block starts).

    Yields
    ------
    None

    Notes
    -----
    The first line comes one interval after the block starts, so a step quicker than
    that prints nothing. The reporting thread is stopped and joined when the block
    ends, whether it returns, raises or is interrupted: no line follows the block.
    It is a daemon thread, so that it can never keep the process alive.
    """
    stop = threading.Event()
    beat = threading.Thread(target=_beat_until, name=f"heartbeat: {step}", daemon=True,
                            args=(stop, step, progress, INTERVAL_S if interval_s is None else interval_s))
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()
