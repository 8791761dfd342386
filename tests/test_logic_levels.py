"""``hts.flows.logic_levels`` on small hand-made Yosys netlists: how many levels each register
input has in front of it, and which block it is charged to."""

import json
import subprocess
import sys

from hts.cli import main
from hts.flows import synth
from hts.flows.logic_levels import logic_levels
from hts.flows.plots import plot_logic_levels

DIRECTIONS = {
    "TRELLIS_FF": {"CLK": "input", "DI": "input", "CE": "input", "LSR": "input", "Q": "output"},
    "LUT4": {"A": "input", "B": "input", "C": "input", "D": "input", "Z": "output"},
    "PFUMX": {"ALUT": "input", "BLUT": "input", "C0": "input", "Z": "output"},
    "CCU2C": {**{f"{pin}{half}": "input" for pin in "ABCD" for half in "01"}, "CIN": "input",
              "S0": "output", "S1": "output", "COUT": "output"},
    "TRELLIS_DPR16X4": {"DI": "input", "WAD": "input", "WRE": "input", "WCK": "input", "RAD": "input",
                        "DO": "output"},
    "$scopeinfo": {},
}


def cell(kind: str, **pins) -> dict:
    """A cell of ``kind`` with nets (an int, a list of ints, or the constant "1") on its pins."""
    connections = {pin: net if isinstance(net, list) else [net] for pin, net in pins.items()}
    return {"type": kind, "port_directions": DIRECTIONS[kind], "connections": connections}


def ff(d, q, **pins) -> dict:
    return cell("TRELLIS_FF", CLK=1, DI=d, Q=q, **pins)


def levels_of(cells: dict, block: str = "hts") -> dict:
    return logic_levels({"modules": {"harness": {"cells": cells}}}, "harness", block)


def test_a_lut_is_a_level_and_a_pfumx_behind_it_none():
    result = levels_of({
        "src": ff(2, 10),
        "lut_a": cell("LUT4", A=10, B="1", Z=11),
        "lut_b": cell("LUT4", A=10, Z=12),
        "mux": cell("PFUMX", ALUT=11, BLUT=12, C0=10, Z=13),   # a LUT5: still one level
        "lut_c": cell("LUT4", A=13, B=10, Z=14),
        "dst": ff(14, 20, CE="1"),                             # a constant enable is no endpoint
    })
    assert result["histogram"] == {0: 1, 2: 1}                 # src's DI (net 2, from nothing), dst's DI


def test_the_longest_of_several_paths_counts():
    result = levels_of({
        "src": ff(2, 10),
        "first": cell("LUT4", A=10, Z=11),
        "second": cell("LUT4", A=11, Z=12),
        "third": cell("LUT4", A=12, B=10, Z=13),               # also straight from the register
        "dst": ff(13, 20, CE=11),
    })
    assert result["histogram"] == {0: 1, 1: 1, 3: 1}           # src, dst's enable, dst's data
    assert result["deepest"] == {"ports": ["src", "first", "second", "third", "dst"]}


def test_a_carry_chain_is_one_level_from_its_inputs_and_none_along_it():
    result = levels_of({
        "src": ff(2, 10),
        "bit0": cell("CCU2C", A0=10, B0=10, CIN="1", S0=30, S1=31, COUT=40),
        "bit1": cell("CCU2C", A0=10, CIN=40, S0=32, S1=33, COUT=41),
        "bit2": cell("CCU2C", A0=10, CIN=41, S0=34, S1=35, COUT=42),
        "after": cell("LUT4", A=35, Z=50),
        "sum": ff(35, 60),
        "flag": ff(50, 61),
    })
    assert result["histogram"] == {0: 1, 1: 1, 2: 1}


def test_a_distributed_ram_read_is_a_level_and_its_write_pins_are_endpoints():
    result = levels_of({
        "src": ff(2, 10),
        "address": cell("LUT4", A=10, Z=11),
        "ram": cell("TRELLIS_DPR16X4", DI=[10, 10, 10, 10], WAD=[11, 10, 10, 10], WRE=11, WCK=1,
                    RAD=[11, 10, 10, 10], DO=[20, 21, 22, 23]),
        "dst": ff(20, 30),
    })
    # src's DI; the RAM's 4 DI, 4 WAD (one behind the LUT) and WRE; dst behind LUT and read.
    assert result["histogram"] == {0: 8, 1: 2, 2: 1}


def test_endpoints_are_charged_to_the_innermost_block_numbered_instances_together():
    result = levels_of({
        "block": cell("$scopeinfo"),
        "block.shell3": cell("$scopeinfo"),
        "block.shell12": cell("$scopeinfo"),
        "block.decode.gpr0": cell("$scopeinfo"),
        "block.decode": cell("$scopeinfo"),
        "block.shell3.busy": ff(2, 10),
        "block.shell12.busy": ff(2, 11),
        "block.decode.gpr0.values": ff(2, 12),
        "block.queued": ff(2, 13),
        "port_register": ff(2, 14),
    }, block="hts")
    assert result["by_block"] == {"decode": {0: 1}, "hts": {0: 1}, "ports": {0: 1}, "shell": {0: 2}}


def test_the_plot_stacks_every_block_and_is_a_png(tmp_path):
    path = tmp_path / "levels.png"
    plot_logic_levels({"shell": {0: 3, 2: 5}, "decode": {1: 2, 13: 1}}, path, "levels")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_synth_refuses_a_plot_into_a_missing_directory_before_any_tool_runs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hts", "synth", "-c", "tiny", "--plot",
                             tmp_path / "missing" / "levels.png"], capture_output=True, text=True, cwd=tmp_path,
                            timeout=120)
    assert result.returncode == 1
    assert result.stderr.endswith(": no such directory: missing\n")
    assert list(tmp_path.iterdir()) == []


def test_synth_draws_the_levels_it_reports(tmp_path, monkeypatch, capsys):
    levels = {"histogram": {0: 3, 4: 1}, "by_block": {"tracker": {0: 3, 4: 1}}, "deepest": {"tracker": ["a", "b"]}}

    def synthesize(config, block, target, freq_mhz, place):
        return {"block": block, "target": target, "logic_levels": levels}

    monkeypatch.setattr(synth, "synthesize", synthesize)
    assert main(["synth", "-c", "tiny", "--block", "memory_tracker", "--json", "--plot",
                 str(tmp_path / "levels.png")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["plot"] == str(tmp_path / "levels.png") and report["logic_levels"] == json.loads(json.dumps(levels))
    assert (tmp_path / "levels.png").read_bytes()[:4] == b"\x89PNG"


def test_the_deep_routes_count_endpoints_within_a_level_of_the_deepest_by_blocks():
    result = levels_of({
        "block": cell("$scopeinfo"),
        "block.tlb": cell("$scopeinfo"),
        "block.tracker": cell("$scopeinfo"),
        "block.tlb.valid": ff(2, 10),
        "block.tlb.first": cell("LUT4", A=10, Z=11),
        "block.tracker.second": cell("LUT4", A=11, Z=12),
        "block.tracker.third": cell("LUT4", A=12, Z=13),
        "block.tracker.entries": ff(13, 20, CE=12),             # 3 levels from the TLB, and 2
        "block.tracker.valid": ff(11, 21),                      # 1 level: left out
        "block.tracker.own": cell("LUT4", A=20, Z=22),
        "block.tracker.next": cell("LUT4", A=22, Z=23),
        "block.tracker.count": ff(23, 24),                      # 2 levels, within its own block
    })
    assert result["deep_routes"] == {"from_levels": 2, "routes": {"tlb → tracker": 2, "tracker → tracker": 1}}
