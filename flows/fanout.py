"""Long fan-outs as Dask tasks: on a ``LocalCluster`` here, or on an existing cluster.

:func:`fan_out` submits one task per item and yields each result as it finishes. A task
that raises yields its error instead, and the others go on. A task whose worker dies is
run again on another worker (``dask.distributed`` reschedules it), so losing a worker
loses no item. With ``workers=0`` and no scheduler the items run one after another in
this process, with no cluster: for a debugger, and for tests that patch what a task calls.
"""

import argparse
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hts.base.arguments import Role, add_argument
from hts.base.errors import HTSError, shown
from hts.base.processes import on_stop

__all__ = ["fan_out", "client_for", "add_arguments", "CONNECT_TIMEOUT_S", "MAX_WORKERS"]

# How long connecting to a --scheduler may take (Dask's default is 30 s).
CONNECT_TIMEOUT_S = 5
# Worker processes of a LocalCluster on this machine: more would only take turns on its cores.
MAX_WORKERS = 64


def add_arguments(parser: argparse.ArgumentParser):
    """``--scheduler`` and ``--workers``, as every command that fans out takes them."""
    add_argument(parser, Role.NO_FILE, "--scheduler", metavar="tcp://HOST:PORT",
                 help="run the tasks on an existing dask.distributed scheduler (default: a LocalCluster here)")
    parser.add_argument("--workers", type=_worker_count, default=2,
                        help=f"LocalCluster worker processes (default 2, at most {MAX_WORKERS}; 0: no cluster, one "
                             "task after another here)")


def _worker_count(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be 0 to {MAX_WORKERS}, got {shown(text)}")
    return value


@contextmanager
def client_for(scheduler_address: str | None, workers: int):
    """A ``dask.distributed`` client: of the scheduler at ``scheduler_address``, or of a
    ``LocalCluster`` of ``workers`` single-threaded processes, closed on exit."""
    from dask.distributed import Client, LocalCluster

    if scheduler_address:
        _check_reachable(scheduler_address)
        try:
            client = Client(scheduler_address, timeout=CONNECT_TIMEOUT_S)
        except Exception as error:              # whatever answered there is no Dask scheduler we can use
            raise HTSError(f"--scheduler {scheduler_address}: cannot connect to a Dask scheduler there "
                           f"({type(error).__name__}: {error})") from None
        with client:
            yield client
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            on_stop(lambda: _no_restarts(cluster)), Client(cluster) as client:
        yield client


def _no_restarts(cluster):
    """Stop ``cluster``'s nannies from restarting their workers, which SIGTERM is about to
    end (:func:`hts.base.processes.on_stop`): each closes once its worker has gone, and
    the cluster's own close then finds nothing left to do."""
    from distributed.core import Status
    for nanny in list(cluster.workers.values()):
        if getattr(nanny, "status", None) == Status.running:
            nanny.status = Status.closing_gracefully


def _check_reachable(address: str):
    """Refuse, at once, an address that is malformed or where nothing listens: Dask's own
    client would retry for 30 s, then end on a long traceback."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except (ValueError, TypeError) as error:
        raise HTSError(f"--scheduler {address}: not a Dask scheduler's address ({error}); "
                       "give one as tcp://HOST:PORT") from None
    if scheme not in ("tcp", "tls"):
        return                                  # (inproc://, ucx://): left to Dask
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise HTSError(f"--scheduler {address}: no Dask scheduler answers there ({reason})") from None


def fan_out(function: Callable, items: list, scheduler_address: str | None = None,
            workers: int = 2) -> Iterator[tuple[object, object, str | None]]:
    """``(item, result, None)`` or ``(item, None, error)`` for every item, as each finishes."""
    if workers == 0 and not scheduler_address:
        yield from _in_process(function, items)
        return
    from dask.distributed import as_completed

    with client_for(scheduler_address, workers) as client:
        futures = {client.submit(function, item, pure=False): item for item in items}
        for future in as_completed(futures):
            try:
                result = future.result()
            except Exception as error:          # one item's failure is reported; the others go on
                yield futures[future], None, f"{type(error).__name__}: {error}"
            else:
                yield futures[future], result, None


def _in_process(function: Callable, items: list) -> Iterator[tuple[object, object, str | None]]:
    for item in items:
        try:
            yield item, function(item), None
        except Exception as error:              # as on a cluster: reported, and the others go on
            yield item, None, f"{type(error).__name__}: {error}"
