"""``hts mutate``: every catalogued RTL mutant against the verification stack; the kill matrix.

Each check runs in a subprocess with ``HTS_MUTANT`` set (:mod:`hts.hdl.mutation`), so the
mutant is elaborated wherever the check elaborates RTL, Verilator builds included (their
cache key holds the mutant). Checks run cheapest first; by default a mutant stops at the
first check that catches it. docs/verification.md has the catalogue and the matrix.
"""

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from hts.base.config import SystemConfig
from hts.base.errors import HTSError
from hts.base.processes import end_tree
from hts.hdl.mutation import CATALOGUE, ENVIRONMENT, Mutant, injected

__all__ = ["CHECKS", "Verdict", "changes_design", "run_check", "kill_matrix"]

CHECKS = ("formal", "block", "system", "fuzz")

# What a check's subprocess may take before it counts as hung (a verdict of its own).
CHECK_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Verdict:
    """One cell of the kill matrix: ``caught``, ``missed``, ``error`` or ``n/a``, and why."""

    status: str
    detail: str = ""
    seconds: float = 0.0


def _rtlil(config: SystemConfig, block: str, mutant: str | None) -> str:
    """The RTLIL of ``block`` (the whole scheduler for a block that is no synthesis unit)."""
    from amaranth.back import rtlil  # the RTL only when a mutant is run: the CLI lists CHECKS quickly

    from .synth import designs
    factories = designs(config)
    with injected(mutant):
        return rtlil.convert(factories.get(block, factories["hts"])(), name="top")


def changes_design(mutant: Mutant, config: SystemConfig, clean: dict[str, str]) -> bool:
    """Whether the mutant elaborates its block to other RTL than the clean one on ``config``
    (``clean`` caches the clean RTLIL by block). One that does not is never built there
    (its hook sits in logic the configuration leaves out), and no check could catch it.
    The comparison is of text, not logic: a different netlist may still be equivalent."""
    if mutant.block not in clean:
        clean[mutant.block] = _rtlil(config, mutant.block, None)
    return _rtlil(config, mutant.block, mutant.name) != clean[mutant.block]


def _pytest_command(paths: list[Path]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-x", "-q", "--tb=line", "-p", "no:cacheprovider", *map(str, paths)]


def _pytest_verdict(result: subprocess.CompletedProcess, seconds: float) -> Verdict:
    if result.returncode == 0:
        return Verdict("missed", seconds=seconds)
    failed = re.search(r"^FAILED (\S+)", result.stdout, re.MULTILINE)
    if result.returncode == 1 and failed:
        # --tb=line: one "file:line: message" line per failure, the assertion's own words.
        message = re.search(r"^\S+:\d+: (.*)$", result.stdout, re.MULTILINE)
        return Verdict("caught", f"{failed.group(1)}: {message.group(1)[:160] if message else ''}", seconds)
    return Verdict("error", _last_lines(result), seconds)


def _fuzz_verdict(result: subprocess.CompletedProcess, seconds: float) -> Verdict:
    if result.returncode == 0:
        return Verdict("missed", seconds=seconds)
    mismatch = re.search(r"^MISMATCH (\S+): (.*)$", result.stderr, re.MULTILINE)
    if result.returncode == 1 and mismatch:
        return Verdict("caught", f"seed {mismatch.group(1)}: {mismatch.group(2)[:160]}", seconds)
    return Verdict("error", _last_lines(result), seconds)


def _formal_verdict(result: subprocess.CompletedProcess, seconds: float) -> Verdict:
    try:
        proofs = json.loads(result.stdout)
    except json.JSONDecodeError:
        return Verdict("error", _last_lines(result), seconds)
    failing = [proof for proof in proofs if proof["result"] != "PASS"]
    if not failing:
        return Verdict("missed", seconds=seconds)
    first = failing[0]
    what = ", ".join(first["failed"]) or first["result"]
    return Verdict("caught", f"{first['config']} {first['block']} {first['group']}: {what}"[:200], seconds)


def _last_lines(result: subprocess.CompletedProcess) -> str:
    text = (result.stderr or result.stdout or "").strip().splitlines()
    return " | ".join(text[-3:])[:300] or f"exit status {result.returncode}"


def _block_tests(tests: Path, mutant: Mutant) -> list[Path]:
    path = tests / "hdl" / f"test_rtl_{mutant.block}.py"
    return [path] if path.is_file() else []


def run_check(check: str, mutant: Mutant, tests: Path | None, fuzz_seeds: int) -> Verdict:
    """Run one check on one mutant, in a subprocess with the mutant active."""
    if check == "formal":
        from .prove import BLOCKS as PROVED_BLOCKS
        if mutant.block not in PROVED_BLOCKS:
            return Verdict("n/a", f"no formal harness for {mutant.block}")
        command = [sys.executable, "-m", "hts", "prove", "--block", mutant.block, "--json"]
        judge, cwd = _formal_verdict, None
    elif check == "fuzz":
        command = [sys.executable, "-m", "hts", "fuzz", "--system", "small", "--seeds", str(fuzz_seeds),
                   "--batch", str(fuzz_seeds)]
        judge, cwd = _fuzz_verdict, None
    else:
        if tests is None:
            return Verdict("n/a", "no tests folder")
        paths = _block_tests(tests, mutant) if check == "block" else [tests / "hdl" / "test_rtl_hts.py"]
        if not paths:
            return Verdict("n/a", f"no block test for {mutant.block}")
        command, judge, cwd = _pytest_command(paths), _pytest_verdict, tests.parent
    start = time.monotonic()
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, ENVIRONMENT: mutant.name}) as process:
        try:
            stdout, stderr = process.communicate(timeout=CHECK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            # The check's own children too (a fuzz's Dask workers and simulators, the hts runs
            # of a pytest): killing the check alone would leave them running.
            end_tree(process.pid)
            process.communicate()
            return Verdict("error", f"no verdict within {CHECK_TIMEOUT_S} s", time.monotonic() - start)
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    return judge(result, time.monotonic() - start)


def kill_matrix(config: SystemConfig, names: list[str], checks: list[str], tests: Path | None, fuzz_seeds: int,
                every_check: bool, progress) -> list[dict]:
    """One row per mutant: its catalogue entry, whether it changes the design, and a verdict per check.

    Checks run in ``checks`` order; unless ``every_check``, the ones after the first catch
    are not run (``-``).
    """
    unknown = [name for name in names if name not in CATALOGUE]
    if unknown:
        raise HTSError(f"--mutant: unknown mutant {unknown[0]!r} (see hts mutate --list)")
    rows, clean = [], {}
    for index, name in enumerate(names, 1):
        mutant = CATALOGUE[name]
        progress(f"[mutate] {index}/{len(names)} {name}: {mutant.bug}")
        row = {**asdict(mutant), "changes_design": changes_design(mutant, config, clean), "verdicts": {}}
        caught = False
        for check in checks:
            if caught and not every_check:
                verdict = Verdict("-")
            elif not row["changes_design"]:
                verdict = Verdict("n/a", "elaborates to the clean design")
            else:
                verdict = run_check(check, mutant, tests, fuzz_seeds)
                progress(f"[mutate]   {check}: {verdict.status} ({verdict.seconds:.0f} s) {verdict.detail}")
            caught = caught or verdict.status == "caught"
            row["verdicts"][check] = asdict(verdict)
        row["killed"] = caught
        rows.append(row)
    return rows
