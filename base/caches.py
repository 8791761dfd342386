"""Cache folders named by an environment variable, checked before anything is written there.

The co-simulation builds (``$HTS_COSIM_CACHE``) and the exploration results
(``$HTS_EXPLORE_CACHE``) each live in a folder the user may point elsewhere. A variable
that names a regular file, or a folder this process cannot write in, would otherwise
surface as a traceback from deep inside a build (or a lock that waits forever); here it
is an :class:`~hts.base.errors.HTSError` that names the variable and the path.
"""

import os
import tempfile
from pathlib import Path

from .errors import HTSError

__all__ = ["cache_folder", "writable_cache"]


def cache_folder(variable: str, default: Path) -> Path:
    """The folder ``$variable`` names, or ``default`` when it is unset or empty (not checked)."""
    return Path(os.environ.get(variable) or default)


def _where(variable: str, folder: Path) -> str:
    return f"{variable}={folder}" if os.environ.get(variable) else f"{folder} (set {variable} to use another folder)"


def writable_cache(variable: str, default: Path, what: str) -> Path:
    """The cache folder of ``$variable`` (or ``default``), created if missing and checked
    writable by writing in it.

    Parameters
    ----------
    variable : str
        The environment variable that names the folder, e.g. ``HTS_COSIM_CACHE``.
    default : Path
        The folder when the variable is unset.
    what : str
        What the cache holds, as the error names it (``"co-simulation builds"``).

    Raises
    ------
    HTSError
        When the path is not a folder, cannot be created, or cannot be written in.
    """
    folder = cache_folder(variable, default)
    if folder.exists() and not folder.is_dir():
        raise HTSError(f"{_where(variable, folder)}: not a folder; the cache of {what} needs one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise HTSError(f"{_where(variable, folder)}: cannot create the cache of {what}: "
                       f"{err.strerror or err}") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-check-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise HTSError(f"{_where(variable, folder)}: cannot write in the cache of {what}: "
                       f"{err.strerror or err}") from None
    return folder
