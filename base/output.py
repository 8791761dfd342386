"""Writing result files whole or not at all: a failed run leaves no partial output behind."""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import HTSError, Location, display_path

__all__ = ["atomic_path", "all_or_none", "check_outputs", "check_plot_directory"]

# Open ``all_or_none`` groups, innermost last: the files written in it, as (temporary, final).
_groups: list[list[tuple[Path, Path]]] = []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:                     # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def check_outputs(outputs, inputs) -> None:
    """Refuse, before any work, an output path that is a directory or one of the inputs.

    ``None`` entries (an output not asked for) are skipped.
    """
    inputs = [Path(path) for path in inputs if path is not None]
    for output in (Path(path) for path in outputs if path is not None):
        if output.is_dir():
            raise HTSError("output is a directory; name a file", Location(display_path(output)))
        for source in inputs:
            if _same_file(output, source):
                raise HTSError(f"output would overwrite the input {display_path(source)}; name another file",
                               Location(display_path(output)))


def check_plot_directory(plot: str | Path) -> None:
    """Refuse ``--plot`` into a directory that does not exist, before a long run rather than after it."""
    check_outputs([plot], [])
    directory = Path(plot).resolve().parent
    if not directory.is_dir():
        raise HTSError("--plot: no such directory", Location(display_path(directory)))


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; on success it is renamed to ``path``."""
    path = Path(path)
    check_outputs([path], [])
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=directory)
    except OSError as err:
        raise HTSError(f"cannot write: {err.strerror}", Location(display_path(path))) from None
    os.close(fd)
    deferred = False
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes files private; results are not
        if _groups:
            _groups[-1].append((Path(tmp), path))
            deferred = True
        else:
            os.replace(tmp, path)
    finally:
        if not deferred and os.path.exists(tmp):
            os.unlink(tmp)


@contextmanager
def all_or_none():
    """Files written with :func:`atomic_path` inside appear together when the block ends,
    or none does (an error or Ctrl-C in between leaves the old files and no temporaries)."""
    group: list[tuple[Path, Path]] = []
    _groups.append(group)
    try:
        yield
        for tmp, path in group:
            os.replace(tmp, path)
    finally:
        _groups.pop()
        for tmp, _ in group:
            if tmp.exists():
                tmp.unlink()
