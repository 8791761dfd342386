"""Writing result files whole or not at all: a failed run leaves no partial output behind."""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import HTSError, Location, display_path

__all__ = ["atomic_path"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; on success it is renamed to ``path``."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=directory)
    except OSError as err:
        raise HTSError(f"cannot write: {err.strerror}", Location(display_path(path))) from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes files private; results are not
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
