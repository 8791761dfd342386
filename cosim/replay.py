"""A cocotb run replayed on the same Verilated model from C++ alone: the speed reference.

The fair yardstick for the co-simulation's speed is the same build (Verilog, Verilator
flags, compiled model) doing the same work without Python. With ``Job(record=True)`` the
testbench records a :class:`Stimulus` per run: every input it wrote and when, and what
the RTL showed in each cycle that raised ``wake``. ``replay.cpp`` is a C++ ``main`` linked
against the model objects of the cocotb build; it applies the writes at their simulation
steps while the wrapper's clock runs. The inputs the testbench computed from the RTL's
outputs (accelerator ``done``, read data) are replayed as recorded, which reproduces the
run because it is deterministic; :func:`replay` checks that by comparing the wake cycles
the replay saw with the recorded ones, so a diverging replay yields no number.
"""

import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hts.base.errors import HTSError
from hts.base.toolchain import tool_env

from .top import CLOCKED

__all__ = ["Stimulus", "stimulus_text", "replay_binary", "replay"]

# Linked from the objects of the cocotb build (Vtop.mk's own flags and model archive),
# less cocotb's main and its VPI library.
# .DELETE_ON_ERROR: a link cut off (the command stopped by a signal) leaves no binary that
# looks up to date.
_MAKEFILE = """\
include Vtop.mk
.DELETE_ON_ERROR:
hts_replay: hts_replay.o $(VK_GLOBAL_OBJS) $(VM_PREFIX)__ALL.a
\t$(LINK) $^ -pthread -o $@
hts_replay.o: {source}
\t$(CXX) $(CXXFLAGS) $(CPPFLAGS) $(OPT_FAST) -c -o $@ $<
"""


@dataclass
class Stimulus:
    """One recorded run: enough to replay it without Python, and to check the replay."""
    writes: list[tuple[int, str, int]]     # (simulation step, input port, value), from time 0
    start: int                             # step of the run's first cycle (programs loaded)
    end: int                               # step of the last falling edge the testbench read
    observed: list[tuple[int, int]]        # (cycle, events) of every cycle of the run with wake high


def stimulus_text(stimulus: Stimulus) -> str:
    """The file ``hts_replay`` reads (format in ``replay.cpp``)."""
    lines = [f"{CLOCKED} {stimulus.start} {stimulus.end}"]
    lines += [f"{step} {port} {value:x}" for step, port, value in stimulus.writes]
    return "\n".join(lines) + "\n"


def replay_binary(folder: Path) -> Path:
    """``hts_replay`` for the cocotb build in ``folder`` (see :func:`hts.cosim.run.build`), made if out of date.

    The source is copied into the build folder (when it changed): the compiler's
    dependency file names the source's path, and the cached build outlives the checkout
    or installation it was first made from.
    """
    source = resources.files("hts.cosim").joinpath("replay.cpp").read_text()
    local = folder / "replay.cpp"
    if not local.exists() or local.read_text() != source:
        local.write_text(source)
    (folder / "replay.mk").write_text(_MAKEFILE.format(source=local.name))
    made = subprocess.run(["make", "-C", str(folder), "-f", "replay.mk", "hts_replay"],
                          env=tool_env(), capture_output=True, text=True)
    if made.returncode:
        raise HTSError(f"building the C++ replay failed:\n{made.stderr[-2000:]}")
    return folder / "hts_replay"


def _parse(output: str) -> tuple[list[tuple[int, int]], float]:
    """The wake cycles and the seconds ``hts_replay`` printed."""
    observed, seconds = [], None
    for line in output.splitlines():
        kind, *values = line.split()
        if kind == "wake":
            observed.append((int(values[0]), int(values[1], 16)))
        elif kind == "seconds":
            seconds = float(values[0])
    if seconds is None:
        raise HTSError(f"the C++ replay printed no time:\n{output[-2000:]}")
    return observed, seconds


def replay(folder: Path, stimulus: Stimulus) -> float:
    """Wall seconds the C++ replay of ``stimulus`` on the build in ``folder`` took over the run.

    Raises :class:`HTSError` if the replay's wake cycles or events differ from the recorded ones.
    """
    binary = replay_binary(folder)
    with tempfile.NamedTemporaryFile("w", prefix="hts-stimulus-", suffix=".txt") as file:
        file.write(stimulus_text(stimulus))
        file.flush()
        ran = subprocess.run([str(binary), file.name], capture_output=True, text=True)
    if ran.returncode:
        raise HTSError(f"the C++ replay failed:\n{ran.stderr[-2000:]}")
    observed, seconds = _parse(ran.stdout)
    if observed != stimulus.observed:
        first = next((index for index, (mine, theirs) in enumerate(zip(observed, stimulus.observed))
                      if mine != theirs), min(len(observed), len(stimulus.observed)))
        raise HTSError(f"the C++ replay diverged from the cocotb run at wake {first} "
                       f"({len(observed)} wake cycles replayed, {len(stimulus.observed)} recorded)")
    return seconds
