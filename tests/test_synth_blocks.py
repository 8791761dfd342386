"""`python -m hts.flows.synth_blocks`: the grouping of Yosys' modules into the blocks of hdl/hts.py,
on hand-made ``stat -json`` data, and one real run on tiny. That run takes 20 s to a minute and a
half (the first YoWASP Yosys run on a machine compiles it), so it is marked slow: the default run
stays under its 15 minutes."""

import json
import subprocess
import sys
from collections import Counter

import pytest
from amaranth.hdl import Fragment

from hts.flows import synth_blocks
from hts.flows.synth import TARGETS, yosys_script
from hts.hdl.hts import HTS

ECP5 = TARGETS["ecp5"]


def synth_blocks_command(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hts.flows.synth_blocks", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=1800)


def _module(cells: dict) -> dict:
    return {"num_cells": sum(cells.values()), "num_cells_by_type": cells}


# A top with glue, two numbered instances of one kind (each with a nested core), and a
# block with a nested module instantiated twice; named as Yosys names them.
HAND_MADE_STAT = {
    "modules": {
        "\\hts": _module({"LUT4": 5, "TRELLIS_FF": 1, "hts.shell0": 1, "hts.shell1": 1, "hts.decode": 1}),
        "\\hts.shell0": _module({"LUT4": 10, "CCU2C": 2, "hts.shell0.core": 1}),
        "\\hts.shell0.core": _module({"LUT4": 3, "TRELLIS_FF": 4}),
        "\\hts.shell1": _module({"LUT4": 10, "CCU2C": 2, "hts.shell1.core": 1}),
        "\\hts.shell1.core": _module({"LUT4": 3, "TRELLIS_FF": 4}),
        "\\hts.decode": _module({"LUT4": 7, "DP16KD": 1, "MULT18X18D": 1, "hts.decode.gpr0": 2}),
        "\\hts.decode.gpr0": _module({"LUT4": 100, "TRELLIS_FF": 8}),
    },
    "design": {"num_cells_by_type": {"LUT4": 238, "CCU2C": 4, "TRELLIS_FF": 25, "DP16KD": 1, "MULT18X18D": 1,
                                     "hts.shell0": 1, "hts.shell1": 1, "hts.decode": 1}},
}


def test_block_of_names_the_submodule_of_the_top_without_its_number():
    assert synth_blocks.block_of("hts") == "hts"
    assert synth_blocks.block_of("hts.tracker") == "tracker"
    assert synth_blocks.block_of("hts.shell12") == "shell"
    assert synth_blocks.block_of("hts.shell3.core") == "shell"
    assert synth_blocks.block_of("hts.decode.gpr0") == "decode"
    assert synth_blocks.block_of("hts.copy_back.buffer") == "copy_back"


def test_nested_modules_count_in_their_block_as_often_as_they_occur():
    rows = {row["block"]: row for row in synth_blocks.group_blocks(HAND_MADE_STAT, ECP5)}
    assert set(rows) == {"hts", "shell", "decode"}
    shell = rows["shell"]
    assert shell["instances"] == 2
    assert shell["modules"] == ["hts.shell0", "hts.shell0.core", "hts.shell1", "hts.shell1.core"]
    assert (shell["luts"], shell["carry_cells"], shell["lut_sites"], shell["ffs"]) == (26, 4, 34, 8)
    # decode instantiates its GPR bank twice: 2 x 100 LUT4s, and no submodule counted as a cell.
    assert rows["decode"]["instances"] == 1
    assert rows["decode"]["cells"] == {"DP16KD": 1, "LUT4": 207, "MULT18X18D": 1, "TRELLIS_FF": 16}
    assert rows["hts"]["instances"] == 1 and rows["hts"]["luts"] == 5 and rows["hts"]["ffs"] == 1
    assert [row["block"] for row in synth_blocks.group_blocks(HAND_MADE_STAT, ECP5)] == ["decode", "shell", "hts"]


def test_the_blocks_add_up_to_the_total_of_the_design():
    rows = synth_blocks.group_blocks(HAND_MADE_STAT, ECP5)
    total = synth_blocks.design_total(HAND_MADE_STAT, ECP5)
    assert total["cells"] == {"CCU2C": 4, "DP16KD": 1, "LUT4": 238, "MULT18X18D": 1, "TRELLIS_FF": 25}
    for key in ("luts", "carry_cells", "lut_rams", "lut_sites", "ffs", "brams", "dsps"):
        assert sum(row[key] for row in rows) == total[key], key


def _expected_blocks(config) -> dict[str, int]:
    """Block -> instances, from the configuration alone."""
    single = ("decode", "enqueue", "tracker", "wakeup", "tlb", "ready_lists", "arbiter", "asr", "cdb", "branch_unit",
              "copy_back")
    return {"hts": 1, "queue": config.hts.processes, "shell": sum(acc.count for acc in config.accelerators),
            **dict.fromkeys(single, 1)}


def test_every_submodule_of_the_top_level_is_a_known_block(default_config):
    """The names hdl/hts.py gives its submodules, grouped as the Yosys modules named after them."""
    names = [name for _, name, _ in Fragment.get(HTS(default_config), None).subfragments]
    grouped = Counter(synth_blocks.block_of(f"hts.{name}") for name in names)
    assert {"hts": 1, **grouped} == _expected_blocks(default_config)


def test_yosys_script_without_flattening_keeps_the_rest_of_the_flow():
    flat = yosys_script(ECP5, "hts.v", "hts", "hts.stat.json").splitlines()
    kept = yosys_script(ECP5, "hts.v", "hts", "hts.stat.json", flatten=False).splitlines()
    assert [line for line in kept if "-noflatten" in line] == [
        "synth_ecp5 -top hts -noflatten -run begin:map_luts", "synth_ecp5 -top hts -noflatten -run map_cells:"]
    assert [line.replace(" -noflatten", "") for line in kept] == flat


def test_a_bad_configuration_is_reported_at_its_line_before_any_tool_runs(tmp_path):
    cfg = tmp_path / "system.yaml"
    cfg.write_text("accelerators:\n  - {name: real_fir, latency: 921}\nhts:\n  tracker_entries: 0\n")
    result = synth_blocks_command("-c", cfg, cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "system.yaml:4:20: hts.tracker_entries: must be >= 1, got 0\n"


def test_an_unknown_configuration_is_refused():
    result = synth_blocks_command("-c", "no_such_preset")
    assert result.returncode == 1
    assert result.stderr.startswith("no_such_preset: no such configuration file or preset")
    assert "Traceback" not in result.stderr


def test_a_plot_into_a_missing_directory_is_refused_before_any_tool_runs(tmp_path):
    result = synth_blocks_command("-c", "tiny", "--plot", tmp_path / "missing" / "blocks.png", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.endswith(": no such directory: missing\n")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One real run on tiny, with its plot."""
    tmp = tmp_path_factory.mktemp("synth_blocks")
    result = synth_blocks_command("-c", "tiny", "--json", "--plot", "blocks.png", cwd=tmp)
    assert result.returncode == 0, result.stderr
    return tmp, result


@pytest.mark.slow
def test_tiny_has_every_block_with_its_number_of_instances(tiny_run, tiny_config):
    _, result = tiny_run
    report = json.loads(result.stdout)
    assert {row["block"]: row["instances"] for row in report["blocks"]} == _expected_blocks(tiny_config)
    assert all(row["luts"] > 0 for row in report["blocks"])
    assert "-noflatten" in report["note"] and "yosys: synth_ecp5 -noflatten" in result.stderr


@pytest.mark.slow
def test_tiny_counts_add_up(tiny_run):
    _, result = tiny_run
    report = json.loads(result.stdout)
    total = report["total"]
    for row in [*report["blocks"], total]:
        assert row["lut_sites"] == row["luts"] + 2 * row["carry_cells"] + 6 * row["lut_rams"]
    assert total["ffs"] > 0 and total["luts"] > 0
    # The total is Yosys' own sum over the hierarchy: every module's cells are in one block.
    for key in ("ffs", "luts", "carry_cells", "lut_rams", "brams", "dsps"):
        assert sum(row[key] for row in report["blocks"]) == total[key], key


@pytest.mark.slow
def test_tiny_plot_is_written_whole(tiny_run):
    tmp, result = tiny_run
    assert json.loads(result.stdout)["plot"] == "blocks.png"
    assert (tmp / "blocks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(path.name for path in tmp.iterdir()) == ["blocks.png"]
