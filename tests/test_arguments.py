"""Every command declares its files once, and one check refuses a bad set before any work.

The reproductions are the ones a hostile user found: each once overwrote an input, or left
one output of several, with exit status 0.
"""

import argparse
import hashlib
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from hts.base.arguments import role_of
from hts.cli import build_parser, main

EXAMPLES = resources.files("hts.examples")
DEFAULT = resources.files("hts.base.presets").joinpath("default.yaml").read_text()


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _free_form(action: argparse.Action) -> bool:
    """An argument whose value is any string: it may name a file."""
    return action.nargs != 0 and action.type in (None, str) and action.choices is None \
        and not isinstance(action, (argparse._HelpAction, argparse._VersionAction))


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_every_free_form_argument_says_whether_it_names_a_file(command):
    undeclared = [action.dest for action in _subparsers()[command]._actions
                  if _free_form(action) and role_of(action) is None]
    assert undeclared == [], f"hts {command}: declare a Role (hts.base.arguments) for {undeclared}"


def test_the_walk_finds_an_undeclared_argument():
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", metavar="FILE")
    assert [action.dest for action in parser._actions if _free_form(action) and role_of(action) is None] \
        == ["report"]


def _digests(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A folder with a program, a configuration and a sweep file naming the program."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.s").write_text(EXAMPLES.joinpath("paper_independent.s").read_text())
    (tmp_path / "cfg.yaml").write_text(DEFAULT)
    (tmp_path / "sweep.yaml").write_text("keys:\n  hts.queue_depth: [4, 8]\nprograms: [p.s]\n")
    return tmp_path


REFUSED = {
    "run --timeline onto the program": (["run", "p.s", "--timeline", "p.s"], "overwrite the input"),
    "run --timeline-png onto the program": (["run", "p.s", "--timeline", "t.json", "--timeline-png", "p.s"],
                                            "overwrite the input"),
    "run --trace onto the configuration": (["run", "p.s", "-c", "cfg.yaml", "--trace", "cfg.yaml"],
                                           "overwrite the input"),
    "run, trace and timeline the same file": (["run", "p.s", "--trace", "t.json", "--timeline", "t.json"],
                                              "two outputs name the same file"),
    "run --timeline into a missing folder": (["run", "p.s", "--trace", "t.jsonl", "--timeline", "nodir/t.json"],
                                             "no such directory"),
    "cosim --timeline onto the program": (["cosim", "-c", "tiny", "p.s", "--timeline", "p.s"],
                                          "overwrite the input"),
    "explore --csv onto the program": (["explore", "p.s", "--key", "hts.queue_depth=4,8", "--csv", "p.s"],
                                       "overwrite the input"),
    "explore --json onto the sweep file": (["explore", "--sweep", "sweep.yaml", "--json", "sweep.yaml"],
                                           "overwrite the input"),
    "explore --plot onto a program the sweep lists": (["explore", "--sweep", "sweep.yaml", "--plot", "p.s"],
                                                      "overwrite the input"),
    "explore --csv and --json the same file": (["explore", "--sweep", "sweep.yaml", "--csv", "o", "--json", "o"],
                                               "two outputs name the same file"),
    "verilog --soc-top onto the configuration": (["verilog", "-c", "cfg.yaml", "--block", "axi_hts", "-o", "a.v",
                                                  "--soc-top", "cfg.yaml"], "overwrite the input"),
    "verilog -o and --soc-top the same file": (["verilog", "-c", "tiny", "--block", "axi_hts", "-o", "ax.v",
                                                "--soc-top", "ax.v"], "two outputs name the same file"),
    "asm -o onto the source": (["asm", "p.s", "-o", "p.s"], "overwrite the input"),
    "compare --plot onto the program": (["compare", "p.s", "--plot", "p.s"], "overwrite the input"),
    "bench --plot into a folder": (["bench", "--plot", "."], "output is a directory"),
    "examples into a file": (["examples", "p.s"], "not a directory"),
    "mutate --json onto its plot": (["mutate", "--json", "m.png", "--plot", "m.png"],
                                    "two outputs name the same file"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_bad_set_of_files_is_refused_before_any_work_and_nothing_changes(workspace, capsys, name):
    argv, message = REFUSED[name]
    before = _digests(workspace)
    assert main(argv) == 1
    assert message in capsys.readouterr().err
    assert _digests(workspace) == before


def test_a_link_to_an_input_is_the_input(workspace, capsys):
    (workspace / "link.s").symlink_to(workspace / "p.s")
    assert main(["run", "p.s", "--trace", "link.s"]) == 1
    assert "overwrite the input" in capsys.readouterr().err


def test_outputs_appear_together_or_not_at_all(workspace, monkeypatch):
    """The trace is complete when the timeline fails: neither is left."""
    from hts.base.errors import HTSError
    from hts.flows import timeline

    def failing_timeline(*args, **kwargs):
        raise HTSError("the timeline failed")

    monkeypatch.setattr(timeline, "write_timeline", failing_timeline)
    before = _digests(workspace)
    assert main(["run", "p.s", "--trace", "t.jsonl", "--timeline", "t.json"]) == 1
    assert _digests(workspace) == before
    assert sorted(os.listdir(workspace)) == ["cfg.yaml", "p.s", "sweep.yaml"]


def test_outputs_of_a_finished_command_all_appear(workspace):
    assert main(["run", "p.s", "--trace", "t.jsonl", "--timeline", "t.json"]) == 0
    assert {"t.jsonl", "t.json"} <= set(os.listdir(workspace))


def test_asm_writes_nothing_beside_a_source_in_the_installed_package(workspace):
    package = Path(str(EXAMPLES))
    before = sorted(os.listdir(package))
    assert main(["asm", str(package / "paper_loop.s")]) == 0
    assert sorted(os.listdir(package)) == before
    assert (workspace / "paper_loop.hex").exists()


def test_a_usage_error_exits_with_1(capsys):
    assert main(["run"]) == 1
    assert "the following arguments are required" in capsys.readouterr().err


def _hts_into(reader: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``hts ARGV | READER``, with hts's own exit status."""
    command = " ".join([sys.executable, "-m", "hts", *argv])
    return subprocess.run(["bash", "-c", f"{command} | {reader}; exit ${{PIPESTATUS[0]}}"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _long_image(folder: Path) -> list[str]:
    """A configuration and an image whose listing is far more than a pipe holds."""
    (folder / "long.yaml").write_text(DEFAULT.replace("program_words: 1024", "program_words: 16384"))
    line = EXAMPLES.joinpath("paper_independent.s").read_text().splitlines()[0]
    (folder / "long.s").write_text((line + "\n") * 12000)
    assert main(["asm", "-c", "long.yaml", "long.s", "-o", "long.hex"]) == 0
    return ["disasm", "-c", "long.yaml", "long.hex"]


def test_a_reader_that_stops_early_ends_the_listing_quietly(workspace):
    result = _hts_into("head -3", _long_image(workspace), workspace)
    assert (result.returncode, result.stderr, len(result.stdout.splitlines())) == (0, "", 3)


PRINTING = {
    "asm": ["asm", "p.s", "-o", "p.hex"],
    "run": ["run", "p.s"],
    "run --json": ["run", "p.s", "--json"],
    "config": ["config", "-c", "large"],
    "tools": ["tools"],
    "examples": ["examples", "copied"],
    "compare": ["compare", "p.s", "--time-limit", "1"],
    "hts --help": ["--help"],
    "hts run --help": ["run", "--help"],
    "hts --version": ["--version"],
}


@pytest.mark.parametrize("name", PRINTING)
def test_a_reader_that_reads_nothing_gets_no_traceback(workspace, name):
    result = _hts_into("true", PRINTING[name], workspace)
    assert (result.returncode, result.stderr) == (0, "")
