"""A command ends cleanly on SIGTERM, SIGHUP and Ctrl-C: its processes ended, its files removed.

``timeout``, CI runners and job managers stop a command with SIGTERM (a closed terminal
sends SIGHUP). Python's default for both is to die on the spot: no ``finally`` runs, so
the temporary beside an output file (:func:`hts.base.output.atomic_path`) and every
scratch folder stay behind, and the command's own children (``make`` and the compilers
under it, the simulator, YoWASP tools, Dask workers) run on without a parent, writing
into caches.

:func:`ending_cleanly` wraps a command's run (``hts.cli.main``). While it is active:

- SIGTERM, SIGHUP and SIGINT each first end every descendant of this process
  (:func:`end_descendants`: SIGTERM, then SIGKILL after :data:`GRACE_S` seconds), then
  raise :class:`Terminated` (a ``KeyboardInterrupt``) in the main thread, so that every
  ``finally`` and context manager unwinds as on Ctrl-C: temporaries removed, scratch
  folders removed, file locks released;
- this process is a child subreaper (Linux), so that a grandchild whose parent dies
  (``c++`` under a killed ``make``) is re-parented here, where the next search finds it,
  rather than to init;
- ``TMPDIR`` (and :mod:`tempfile`'s folder) point at a scratch folder of the command's
  own, removed when it ends: what a child process creates there (a Dask worker's
  ``hts-cosim-*`` folder, a compiler's temporaries) goes even if that child is killed
  before it could clean up.

The command ends with one line on stderr and exit status 128 + the signal's number (130
for SIGINT, 143 for SIGTERM, 129 for SIGHUP), without a traceback. The process group is
never signalled: it may hold the user's shell or CI script.
"""

import ctypes
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "GRACE_S", "ending_cleanly", "on_stop", "descendants", "end_descendants", "end_tree"]

# How long ended processes get to clean up after SIGTERM before SIGKILL.
GRACE_S = 2.0

# The signals that stop a command, as SIGINT does; SIGHUP does not exist everywhere.
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37
# multiprocessing's resource tracker ignores SIGTERM and SIGINT by design and ends by
# itself when this process does (its pipe closes): it is not work to stop.
_SPARED_COMMANDS = (b"multiprocessing.resource_tracker",)


class Terminated(KeyboardInterrupt):
    """The command was stopped by a signal (``signum``); raised in the main thread.

    A ``KeyboardInterrupt``, so that code written for Ctrl-C cleans up the same way.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


# ---- finding and ending processes ---------------------------------------------------------

# A process, told apart from a later one that reuses its pid: (pid, start time).
Identity = tuple[int, int]


def _process_table() -> dict[int, tuple[int, int, bytes]]:
    """pid -> (parent pid, start time, state) of every process, read from /proc."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as file:
                stat = file.read()
        except OSError:                 # ended meanwhile
            continue
        # The command name (field 2) is in parentheses and may hold spaces and ')'.
        fields = stat[stat.rindex(b")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), int(fields[19]), fields[0])
    return table


def _psutil_table() -> dict[int, tuple[int, int, bytes]]:
    """The same, through psutil (a dependency of dask.distributed), where there is no /proc."""
    import psutil
    table = {}
    for process in psutil.process_iter(["ppid", "create_time", "status"]):
        info = process.info
        state = b"Z" if info["status"] == psutil.STATUS_ZOMBIE else b"R"
        table[process.pid] = (info["ppid"] or 0, int((info["create_time"] or 0) * 1000), state)
    return table


def _table() -> dict[int, tuple[int, int, bytes]]:
    return _process_table() if os.path.isdir("/proc/self") else _psutil_table()


def _spared(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            command = file.read()
    except OSError:
        return False
    return any(name in command for name in _SPARED_COMMANDS)


def descendants(root: int | None = None, spare: frozenset[Identity] = frozenset(),
                table: dict | None = None) -> list[Identity]:
    """Every living (not zombie) descendant of ``root`` (default: this process), parents
    before children; ``spare`` and their descendants left out."""
    table = _table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, queue = [], [os.getpid() if root is None else root]
    while queue:
        for pid in children.get(queue.pop(0), []):
            _, started, state = table[pid]
            if (pid, started) in spare:
                continue
            queue.append(pid)
            if state not in (b"Z", b"X"):
                found.append((pid, started))
    return found


def _signal(identities, signum: int, table: dict) -> None:
    for pid, started in identities:
        if table.get(pid, (0, None))[1] != started:
            continue                    # ended, and its pid perhaps reused
        try:
            os.kill(pid, signum)
            if signum == signal.SIGTERM and hasattr(signal, "SIGCONT"):
                os.kill(pid, signal.SIGCONT)    # a stopped process acts on SIGTERM only once continued
        except (ProcessLookupError, PermissionError):
            pass


def _living(identities, table: dict) -> list[Identity]:
    return [(pid, started) for pid, started in identities
            if table.get(pid, (0, None, b"Z"))[1] == started and table[pid][2] not in (b"Z", b"X")]


def _end(find, grace_s: float) -> int:
    """SIGTERM whatever ``find(table)`` lists, again as new ones appear, until none is left
    or ``grace_s`` has passed; then SIGKILL what is left. The number of processes ended.

    A process once signalled is followed until it ends, even if it leaves the tree (its
    parent ended and it was re-parented elsewhere)."""
    deadline = time.monotonic() + grace_s
    signalled: dict[Identity, None] = {}

    def alive(table):
        found = dict.fromkeys(find(table))
        found.update(dict.fromkeys(_living(signalled, table)))
        return [identity for identity in found if not _spared(identity[0])]

    while True:
        table = _table()
        running = alive(table)
        if not running:
            return len(signalled)
        if time.monotonic() >= deadline:
            break
        fresh = [identity for identity in running if identity not in signalled]
        _signal(fresh, signal.SIGTERM, table)
        signalled.update(dict.fromkeys(fresh))
        time.sleep(0.02)
    for _ in range(250):                # a process in uninterruptible sleep takes a moment even so
        _signal(running, signal.SIGKILL, table)
        signalled.update(dict.fromkeys(running))
        time.sleep(0.02)
        table = _table()
        running = alive(table)
        if not running:
            break
    return len(signalled)


def end_descendants(grace_s: float = GRACE_S, spare: frozenset[Identity] = frozenset()) -> int:
    """End every descendant of this process (but ``spare``'s subtrees): SIGTERM, and SIGKILL
    for those still running after ``grace_s`` seconds. Returns how many there were.

    The whole tree is collected before any of it is signalled, and again while it ends,
    so that grandchildren (``c++`` under ``make``) are found even when their parent dies
    first. Zombies count as ended; their parents reap them.
    """
    return _end(lambda table: descendants(spare=spare, table=table), grace_s)


def end_tree(pid: int, grace_s: float = GRACE_S) -> None:
    """End process ``pid`` and all its descendants, as :func:`end_descendants` does.

    For a child that runs too long: ``Popen.kill`` alone would leave its children running.
    """
    table = _table()
    if pid not in table:
        return
    root = (pid, table[pid][1])

    def find(table):
        if table.get(pid, (0, None))[1] != root[1]:
            return []                   # ended and reaped: what it left is followed by _end
        return [*_living([root], table), *descendants(pid, table=table)]

    _end(find, grace_s)


# ---- the command's session -----------------------------------------------------------------

def _prctl(option: int, value: int = 0) -> int | None:
    """prctl(2), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if option == _PR_GET_CHILD_SUBREAPER:
            flag = ctypes.c_int(0)
            return flag.value if libc.prctl(option, ctypes.byref(flag), 0, 0, 0) == 0 else None
        return libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return None


_active = False
# What a signal calls before it ends the processes, innermost last (see on_stop).
_before_ending: list[Callable[[], None]] = []


@contextmanager
def on_stop(callback: Callable[[], None]) -> Iterator[None]:
    """While the ``with`` block runs, a signal that stops the command first calls ``callback``
    (in the main thread), then ends the processes.

    For a supervisor in this process that would start again what is ended: a Dask
    nanny restarts a worker process that dies. ``callback`` must not block; its errors
    are ignored.
    """
    _before_ending.append(callback)
    try:
        yield
    finally:
        _before_ending.remove(callback)


def _quiet() -> None:
    """Nothing more on stderr but the last line: the process is ending. Warnings from
    objects the unwinding leaves half made (Amaranth's "created but never used"), log
    records and errors of libraries whose work was cut off (Dask's cluster shutting
    down), and exceptions ignored at exit would bury it."""
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    sys.unraisablehook = lambda unraisable: None


@contextmanager
def ending_cleanly(grace_s: float = GRACE_S, label: str = "hts") -> Iterator[None]:
    """Run the ``with`` block as a command that SIGTERM, SIGHUP and Ctrl-C end cleanly.

    See the module's description. A signal ends the descendants started in the block,
    then raises :class:`Terminated` in the main thread; when the block has unwound, its
    remaining descendants are ended (also after an error or a normal end: no process it
    started outlives the command), its scratch folder is removed, and, after a signal,
    one line goes to stderr and ``SystemExit(128 + signal)`` is raised instead of
    whatever the unwinding raised.

    Outside the main thread, or nested in another, the block just runs.
    """
    global _active
    if _active or threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()
    spare = frozenset(descendants())     # what ran before (a test's helpers): not the command's
    received: list[int] = []
    unwinding = []

    def handler(signum, frame):
        if os.getpid() != owner:         # a forked child that inherited the handler: the default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if received or unwinding:        # already ending: noted, and the cleanup goes on
            received[:1] = received[:1] or [signum]
            return
        received.append(signum)
        _quiet()
        for callback in reversed(_before_ending):
            try:
                callback()
            except Exception:           # a supervisor that cannot be told: its processes end anyway
                pass
        end_descendants(grace_s, spare)
        raise Terminated(signum)

    previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}
    was_subreaper = _prctl(_PR_GET_CHILD_SUBREAPER)
    if was_subreaper == 0:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    old_tmpdir, old_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir
    scratch = tempfile.mkdtemp(prefix=f"{label}-{owner}-")
    os.environ["TMPDIR"] = tempfile.tempdir = scratch
    _active = True
    try:
        yield
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt) and not received:   # a Ctrl-C before the handler was in place
            received.append(getattr(error, "signum", signal.SIGINT))
            _quiet()
        if not received:
            raise
        # After a signal, what the unwinding raised (a child's error as it was killed) is
        # not the command's outcome: the signal is.
    finally:
        unwinding.append(True)
        try:
            # Zombies are left to their owners (a Popen reaped behind its back would report
            # exit status 0); orphans adopted as subreaper go with this process.
            end_descendants(grace_s, spare)
        finally:
            _active = False
            if old_tmpdir is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = old_tmpdir
            tempfile.tempdir = old_tempdir
            shutil.rmtree(scratch, ignore_errors=True)
            if was_subreaper == 0:
                _prctl(_PR_SET_CHILD_SUBREAPER, 0)
            for signum, action in previous.items():
                signal.signal(signum, action)
    if received:
        sys.stderr.write(f"{label}: stopped by {signal.Signals(received[0]).name}\n")
        sys.stderr.flush()
        raise SystemExit(128 + received[0])
