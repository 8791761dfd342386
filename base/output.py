"""Writing result files whole or not at all: a failed run leaves no partial output behind.

Every output goes through :func:`atomic_path`: written to a temporary beside its
destination, moved into place when the enclosing :func:`all_or_none` block (``hts`` wraps
every command in one) ends without an error. :func:`check_files` refuses, before any work,
outputs that would overwrite an input, each other, or a directory.
"""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import HTSError, Location, display_path

__all__ = ["atomic_path", "all_or_none", "check_files"]

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


def _paths(paths) -> list[Path]:
    return [Path(path) for path in paths if path is not None]


def _check_output(output: Path, inputs: list[Path]) -> None:
    where = Location(display_path(output))
    if output.is_dir():
        raise HTSError("output is a directory; name a file", where)
    directory = output.resolve().parent
    if not directory.is_dir():
        raise HTSError(f"no such directory: {display_path(directory)}", where)
    if not os.access(directory, os.W_OK):
        raise HTSError(f"cannot write into {display_path(directory)}", where)
    for source in inputs:
        if _same_file(output, source):
            raise HTSError(f"output would overwrite the input {display_path(source)}; name another file", where)


def check_files(outputs, inputs, output_directories=()) -> None:
    """Refuse, before any work: an output that is a directory, lies in a missing or
    read-only directory, is one of the inputs (also through a link), or is named twice;
    an output directory that is an input or a file.

    ``None`` entries (a file not asked for) are skipped.
    """
    inputs, outputs = _paths(inputs), _paths(outputs)
    for index, output in enumerate(outputs):
        _check_output(output, inputs)
        for earlier in outputs[:index]:
            if _same_file(output, earlier):
                raise HTSError(f"two outputs name the same file {display_path(earlier)}; name another file",
                               Location(display_path(output)))
    for directory in _paths(output_directories):
        where = Location(display_path(directory))
        if directory.exists() and not directory.is_dir():
            raise HTSError("not a directory", where)
        for source in inputs:
            if _same_file(directory, source):
                raise HTSError(f"output directory is the input {display_path(source)}", where)


@contextmanager
def atomic_path(path: str | Path, defer: bool = True):
    """Yield a temporary path beside ``path``; on success it is renamed to ``path``.

    Inside :func:`all_or_none` (and ``defer``), the rename waits for the block to end.
    A cache entry, useful even if the command later fails, passes ``defer=False``.
    """
    path = Path(path)
    if path.is_dir():
        raise HTSError("output is a directory; name a file", Location(display_path(path)))
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
        if _groups and defer:
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
    or none does (an error, Ctrl-C or SIGTERM in between leaves the old files and no
    temporaries). A block inside another hands its files to the outer one."""
    group: list[tuple[Path, Path]] = []
    _groups.append(group)
    try:
        yield
        _groups.pop()
        if _groups:
            _groups[-1].extend(group)
            group = []
        else:
            for tmp, path in group:
                os.replace(tmp, path)
    finally:
        if _groups and _groups[-1] is group:
            _groups.pop()
        for tmp, _ in group:
            if tmp.exists():
                tmp.unlink()
