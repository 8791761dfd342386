"""The command line, fuzzed: hypothesis draws a subcommand, arguments for it from its own
parser, and hostile files for them; ``hts`` must keep four promises whatever it gets.

1. Exit status 0 or 1: an error is a message, never a traceback.
2. Every file that existed before and is not a named output is byte-identical after.
3. A command that stopped on an error leaves no new file; one that finished leaves only
   files it names as outputs.
4. No temporary is left, beside an output or in the temporary folder.

The engines behind the commands (Verilator, Yosys, nextpnr, SymbiYosys, the Dask cluster,
the benchmark sweeps, matplotlib) are replaced by stand-ins that write their outputs the way
the real ones do, through :func:`hts.base.output.atomic_path`, and sometimes fail half-way:
what is under test is everything in front of them. The argument parsing, the file checks,
the reading of every input and the model runs are the real ones.

The default tier runs a small budget; ``pytest -m slow tests/test_cli_fuzz.py`` runs
``HTS_CLI_FUZZ_CASES`` cases (default 10,000).
"""

import argparse
import contextlib
import hashlib
import inspect
import os
import shutil
import signal
import tempfile
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hts import cli
from hts.base.arguments import Role, role_of
from hts.base.errors import HTSError
from hts.base.output import atomic_path
from hts.cosim.scoreboard import RunOutcome

EXAMPLES = resources.files("hts.examples")
DEFAULT = resources.files("hts.base.presets").joinpath("default.yaml").read_text()
HANG_S = 60                    # one command line, stand-ins and all, takes well under a second
SLOW_CASES = int(os.environ.get("HTS_CLI_FUZZ_CASES", "10000"))


# ---- the hostile files -------------------------------------------------------------

def _write_files(folder: Path) -> None:
    program = EXAMPLES.joinpath("paper_independent.s").read_text()
    texts = {
        "p.s": program,
        "cfg.yaml": DEFAULT,
        "sweep.yaml": "keys:\n  hts.queue_depth: [4, 8]\nprograms: [p.s]\n",
        "bad_sweep.yaml": "keys:\n  hts.queue_depth: 4\nprograms: 5\n",
        "garbage.s": "this is not a program\n",
        "registers.s": "ld r300 0\nld r70000 0\nld r" + "9" * 5000 + " 0\n",
        "empty.s": "",
        "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
            for i in range(8)),
        "deep.yaml": "hts: " + "[" * 5000 + "]" * 5000 + "\n",
    }
    for name, text in texts.items():
        (folder / name).write_text(text)
    (folder / "bom_nul.s").write_bytes("\ufeff".encode() + program.encode()[:20] + b"\x00\x1b[31m\n")
    (folder / "latin1.s").write_bytes(program.encode()[:30] + b"\xe9\xff\n")
    (folder / "latin1.yaml").write_bytes(b"keys:\n  hts.queue_depth: [4]\n# \xe9\xff\n")
    (folder / "dir").mkdir()
    os.mkfifo(folder / "fifo")
    (folder / "zero").symlink_to("/dev/zero")
    assert cli.main(["asm", "p.s", "-o", "p.hex"]) == 0


# The valid files come up more often, so that commands get past their inputs to their outputs.
VALID = ["p.s", "p.hex", "cfg.yaml", "sweep.yaml"]
INPUTS = [*VALID * 3, "bad_sweep.yaml", "garbage.s", "registers.s", "empty.s", "bomb.yaml", "deep.yaml",
          "bom_nul.s", "latin1.s", "latin1.yaml", "dir", "fifo", "zero", "missing.s"]
# New names; the inputs, often; a folder, a folder that does not exist, a FIFO, a device.
OUTPUTS = ["out.json", "out.png", "out.v", "out.hex", "dir/out.txt", *VALID * 2, "dir", "nodir/out.json", "fifo",
           "zero"]
TEXTS = ["hts.queue_depth=4,8", "hts.queue_depth=2..8", "nosuch.key=1", "hts.queue_depth=", "x", "", "\x00\x1b", "r" + "9" * 300,
         "tcp://127.0.0.1:1", "tracker", "cdb", "vector_add", "bogus"]
NUMBERS = ["1", "2", "3"] * 3 + ["0", "-1", "x", "1.5", "9" * 30, "1,2", ""]


# ---- command lines -----------------------------------------------------------------

def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _value(action: argparse.Action):
    role = role_of(action)
    if role in (Role.INPUT, Role.INPUT_DIRECTORY):
        return st.sampled_from(INPUTS)
    if role is Role.CONFIGURATION:
        return st.sampled_from(["tiny", "default", "small", "cfg.yaml", "bomb.yaml", "deep.yaml", "latin1.yaml",
                                "fifo", "zero", "dir", "missing.yaml", "p.s"])
    if role in (Role.OUTPUT, Role.OUTPUT_DIRECTORY):
        return st.sampled_from(OUTPUTS)
    if action.choices is not None:
        return st.one_of(st.sampled_from(sorted(map(str, action.choices))), st.just("bogus"))
    if role is Role.NO_FILE:
        return st.sampled_from(TEXTS)
    return st.sampled_from(NUMBERS)


def _argument(action: argparse.Action):
    """Strategy for the words one argument contributes (possibly none)."""
    flag = action.option_strings[0] if action.option_strings else None
    if action.nargs == 0:
        return st.sampled_from([[], [flag]])
    # One program mostly: the presets run one process.
    count = {None: (1, 1), "?": (0, 1), "*": (0, 1), "+": (1, 1)}.get(action.nargs, (1, 1))
    values = st.lists(_value(action), min_size=count[0], max_size=count[1])
    if flag is None:
        return values
    optional = not action.required
    appended = isinstance(action, argparse._AppendAction)
    one = values.map(lambda words: [flag, *words[:1]] if words else [flag])
    if appended:
        return st.lists(one, max_size=2).map(lambda groups: [word for group in groups for word in group])
    return st.one_of(st.just([]), one) if optional else one


def _values_of(words: list[str], action: argparse.Action) -> list[int]:
    """Where in ``words`` (one argument's) its values are."""
    return list(range(1 if action.option_strings else 0, len(words)))


@st.composite
def command_lines(draw):
    parsers = _subparsers()
    name = draw(st.sampled_from(sorted(parsers)))
    words, inputs, outputs = [name], [], []
    for action in parsers[name]._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        mine = draw(_argument(action))
        at = [len(words) + index for index in _values_of(mine, action)]
        if role_of(action) in (Role.INPUT, Role.CONFIGURATION):
            inputs += at
        elif role_of(action) is Role.OUTPUT:
            outputs += at
        words += mine
    if inputs and outputs and draw(st.booleans()):      # the attack: an output onto an input of its own
        words[draw(st.sampled_from(outputs))] = words[draw(st.sampled_from(inputs))]
    if draw(st.integers(0, 9)) == 0:           # now and then, a word out of place
        words.insert(draw(st.integers(1, len(words))), draw(st.sampled_from(["--bogus", "-", "--", "x"])))
    return words


# ---- stand-ins for the engines ----------------------------------------------------

class EngineFails(HTSError):
    """What a stand-in raises half-way through, after writing some of its output."""


def _write(path, text="stand-in\n"):
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)


class Engines:
    """Stand-ins that write like the real engines and fail when ``fail`` says so."""

    def __init__(self, fail: bool):
        self.fail = fail

    def maybe_fail(self):
        if self.fail:
            raise EngineFails("the engine stand-in failed")

    def write_verilog(self, config, block, output):
        _write(output, "module stand_in; endmodule\n")
        self.maybe_fail()
        return "module stand_in; endmodule\n", []

    def write_soc_top(self, scheduler, output):
        _write(output, "module hts_axi_top; endmodule\n")
        return []

    def synthesize(self, config, block, target="ecp5", freq_mhz=100.0, progress=None, place=True):
        self.maybe_fail()
        return {"block": block, "module": f"hts_{block}", "config": config.source, "device": "LFE5U-85F",
                "target": target, "luts": 1, "carry_cells": 0, "lut_rams": 0, "lut_sites": 1, "ffs": 1,
                "brams": 0, "dsps": 0, "placed": False, "fits": True, "fmax_mhz": None,
                "fmax_constraint_mhz": freq_mhz, "logic_levels": {"histogram": {1: 1}, "by_block": {block: {1: 1}},
                                                              "deep_routes": {"from_levels": 1, "routes": {}}}}

    def outcome(self, name="stand-in", trace=None):
        return RunOutcome(name=name, match=True, difference=None, cycles=10, model_cycles=10,
                          memory_digest="0" * 16, reproduce="", trace=trace)

    def cosimulate(self, job, waves=None, progress=print):
        if waves is not None:
            _write(waves, "$enddefinitions $end\n")
        self.maybe_fail()
        return [self.outcome(trace=[]) for _ in job.runs]

    def run_batch(self, batch):
        self.maybe_fail()
        return [self.outcome() for _ in range(batch.count)]

    def fan_out(self, function, items, scheduler_address=None, workers=2):
        if scheduler_address:
            raise HTSError(f"cannot reach the Dask scheduler {scheduler_address} (stand-in)")
        for item in items:
            try:
                yield item, function(item), None
            except HTSError as error:
                yield item, None, str(error)

    def run_case(self, case):
        self.maybe_fail()
        return {"benchmark": case.name, "naive": 4, "runtime": 3, "hts-nospec": 2, "hts": 1, "sequential": 4,
                "naive_over_hts": 4.0, "memory_matches_sequential": True}

    def scaling(self, config, program, bands, instances, scheduler):
        self.maybe_fail()
        return [{"bands": b, "instances": n, "cycles": 1} for b in bands for n in instances]

    def prove(self, configs, blocks, timeout_s=600.0, trace_dir=None, **kwargs):
        self.maybe_fail()
        return []

    def kill_matrix(self, config, names, checks, tests, fuzz_seeds, every_check, progress=print):
        self.maybe_fail()
        return []

    def reference_schedules(self, graph, machine, time_limit, optimal_max_tasks):
        return {}

    def plot(self, real):
        """A stand-in for the chart ``real`` draws, written to the same path."""
        def draw(*args, **kwargs):
            _write(inspect.signature(real).bind(*args, **kwargs).arguments["path"], "PNG stand-in\n")
            self.maybe_fail()
        return draw


def _install(monkeypatch, engines: Engines):
    from hts.cosim import fuzz, run
    from hts.flows import bench, explore, fanout, mutate, plots, prove, soc_top, synth
    from hts.models import report
    for module, names in ((synth, ["write_verilog", "synthesize"]), (soc_top, ["write_soc_top"]),
                          (run, ["cosimulate"]), (fuzz, ["run_batch"]), (fanout, ["fan_out"]),
                          (bench, ["run_case", "fan_out"]), (explore, ["fan_out"]), (report, ["scaling", "reference_schedules"]), (prove, ["prove"]),
                          (mutate, ["kill_matrix"])):
        for name in names:
            monkeypatch.setattr(module, name, getattr(engines, name))
    for name in dir(plots):
        if name.startswith("plot_"):
            monkeypatch.setattr(plots, name, engines.plot(getattr(plots, name)))


# ---- the promises ------------------------------------------------------------------

def _snapshot(folder: Path) -> dict[str, str]:
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.is_fifo():
            files[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_symlink() or path.is_fifo():
            files[str(path.relative_to(folder))] = "special"
    return files


def _declared_files(argv: list[str], folder: Path) -> tuple[set[str], set[str]]:
    """The inputs and the outputs the command line names, as paths relative to ``folder``."""
    try:
        args = cli.build_parser().parse_args(argv)
        files = args.files(args)
    except (SystemExit, HTSError):
        return set(), set()

    def relative(paths):
        return {os.path.relpath(os.path.abspath(path), folder) for path in paths}
    return relative(files.inputs), relative(files.outputs + files.output_directories)


def _under(path: str, outputs: set[str]) -> bool:
    return any(path == out or path.startswith(out.rstrip("/") + "/") for out in outputs)


@contextlib.contextmanager
def _spy_on_all_or_none(monkeypatch):
    """Records whether the command ran to its end (its all-or-none block ended without an error)."""
    real = cli.all_or_none
    ran = {"to_the_end": False}

    @contextlib.contextmanager
    def spy():
        with real():
            yield
            ran["to_the_end"] = True

    monkeypatch.setattr(cli, "all_or_none", spy)
    yield ran


@contextlib.contextmanager
def _no_hang(argv, seconds=HANG_S):
    def hung(signum, frame):
        raise AssertionError(f"hts {' '.join(argv)!r} still ran after {seconds} s")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_promises(argv, fail, template: Path, monkeypatch, capsys):
    with tempfile.TemporaryDirectory(prefix="hts-cli-fuzz-") as root, monkeypatch.context() as patch:
        folder, scratch = Path(root) / "work", Path(root) / "tmp"
        shutil.copytree(template, folder, symlinks=True, ignore=lambda _, names: [n for n in names if n == "fifo"])
        os.mkfifo(folder / "fifo")
        scratch.mkdir()
        patch.chdir(folder)
        patch.setattr(tempfile, "tempdir", str(scratch))
        before = _snapshot(folder)
        inputs, outputs = _declared_files(argv, folder)
        _install(patch, Engines(fail))
        with _spy_on_all_or_none(patch) as ran, _no_hang(argv):
            status = cli.main(argv)           # promise 1: any exception fails the test here
        err = capsys.readouterr().err
        after = _snapshot(folder)
        context = f"hts {' '.join(argv)!r} (engines {'fail' if fail else 'succeed'}): status {status}\n{err[-2000:]}"
        assert status in (0, 1), context
        assert "Traceback" not in err, context
        changed = [path for path in before if path not in after or after[path] != before[path]]
        new = [path for path in after if path not in before]
        assert [path for path in changed if path in inputs] == [], context                       # 2
        if ran["to_the_end"]:
            assert [path for path in changed + new if not _under(path, outputs)] == [], context  # 2, 3
        else:
            assert changed + new == [], context                                                # 2, 3
        assert [path for path in after if Path(path).name.startswith(".")] == [], context       # 4
        assert list(scratch.iterdir()) == [], context                                             # 4


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        _write_files(folder)
    finally:
        os.chdir(cwd)
    return folder


def _fuzz(cases: int):
    @settings(max_examples=cases, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(argv=command_lines(), fail=st.booleans())
    def fuzz(template, monkeypatch, capsys, argv, fail):
        check_promises(argv, fail, template, monkeypatch, capsys)
    return fuzz


def test_the_command_line_keeps_its_promises(template, monkeypatch, capsys):
    _fuzz(150)(template, monkeypatch, capsys)


@pytest.mark.slow
def test_the_command_line_keeps_its_promises_long(template, monkeypatch, capsys):
    _fuzz(SLOW_CASES)(template, monkeypatch, capsys)
