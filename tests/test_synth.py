"""`hts verilog` and `hts synth`: Verilog that lints clean, errors that leave no file, and the
reading of the synthesis tools' JSON reports. The one real synthesis run is marked slow."""

import json
import subprocess
import sys
import time

import pytest
from amaranth.hdl import Fragment, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hts.base.config import with_value
from hts.base.errors import ConfigError, HTSError
from hts.base.progress import is_heartbeat
from hts.cli import main
from hts.flows import synth, synth_sweep
from hts.hdl.interfaces import region_layout, tracker_entry_layout


def hts(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "hts", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def warnings_in(stderr: str) -> list[str]:
    """The lines of stderr other than the signs of life of a step that took a while."""
    return [line for line in stderr.splitlines() if not is_heartbeat(line)]


@pytest.mark.parametrize("preset", ["default", "tiny", pytest.param("large", marks=pytest.mark.slow),
                                    pytest.param("inflight128", marks=pytest.mark.slow)])
def test_verilog_of_the_memory_tracker_lints_clean(tmp_path, preset):
    out = tmp_path / "tracker.v"
    result = hts("verilog", "-c", preset, "--block", "memory_tracker", "-o", out)
    assert result.returncode == 0, result.stderr
    assert "lints clean" in result.stdout and warnings_in(result.stderr) == []
    assert "module hts_memory_tracker(" in out.read_text()


@pytest.mark.synth
@pytest.mark.parametrize("preset", ["tiny", pytest.param("default", marks=pytest.mark.slow),
                                    pytest.param("large", marks=pytest.mark.slow)])
def test_verilog_of_the_top_level_lints_clean(tmp_path, preset):
    """The default block is the whole scheduler (tiny: seconds; default: a minute; large: ten)."""
    out = tmp_path / "hts.v"
    result = subprocess.run([sys.executable, "-m", "hts", "verilog", "-c", preset, "-o", out], capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, result.stderr
    assert "module hts -> " in result.stdout and "lints clean" in result.stdout and warnings_in(result.stderr) == []
    text = out.read_text()
    assert "module hts(" in text
    for port in ("cpu__load", "cpu__start", "cpu__ended", "branch_read__valid", "copyback_tm__addr", "trace"):
        assert port in text


def test_verilog_unknown_block_is_refused_and_writes_nothing(tmp_path):
    result = hts("verilog", "--block", "no_such_block", "-o", tmp_path / "x.v")
    assert result.returncode == 1
    assert "--block: unknown block 'no_such_block' (blocks: " in result.stderr and "memory_tracker" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_verilog_bad_config_names_the_key_and_writes_nothing(tmp_path):
    cfg = tmp_path / "system.yaml"
    cfg.write_text("accelerators:\n  - {name: real_fir, latency: 921}\nhts:\n  tracker_entries: 0\n")
    out = tmp_path / "x.v"
    result = hts("verilog", "-c", cfg, "-o", out)
    assert result.returncode == 1
    assert "system.yaml:4:20: hts.tracker_entries: must be >= 1, got 0" in result.stderr
    assert not out.exists()


def test_synth_unknown_block_is_refused_before_any_tool_runs():
    result = hts("synth", "--block", "no_such_block")
    assert result.returncode == 1
    # The error is the only output: no progress, so no tool was started.
    assert result.stderr.startswith("--block: unknown block 'no_such_block' (blocks: ")
    assert len(result.stderr.splitlines()) == 1


def test_lint_error_fails_and_leaves_no_file(tmp_path, monkeypatch, tiny_config):
    convert = synth.verilog_text
    monkeypatch.setattr(synth, "verilog_text", lambda component, name: convert(component, name) + "assign = ;\n")
    out = tmp_path / "broken.v"
    with pytest.raises(HTSError, match="Verilator lint failed") as error:
        synth.write_verilog(tiny_config, "memory_tracker", out)
    assert "broken.v" in str(error.value)  # the user's file name, not the temporary one
    assert list(tmp_path.iterdir()) == []


def test_lint_reports_warnings_other_than_the_waived_ones(tmp_path):
    source = tmp_path / "m.v"
    # `unused` triggers only the waived UNUSEDSIGNAL; the undriven output is a real warning.
    source.write_text("module m(input unused, output undriven);\nendmodule\n")
    warnings = synth.lint(source, "m")
    assert len(warnings) == 1 and "UNDRIVEN" in warnings[0]


def test_every_block_elaborates_and_the_top_level_is_the_default(tiny_config):
    factories = synth.designs(tiny_config)
    assert next(iter(factories)) == synth.DEFAULT_BLOCK == "hts"
    for name, factory in factories.items():
        Fragment.get(factory(), None)


def test_module_names():
    assert synth.module_name("memory_tracker") == "hts_memory_tracker"
    assert synth.module_name("hts") == "hts"


class _Adder(wiring.Component):
    a: In(8)
    b: In(8)
    total: Out(9)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.total.eq(self.a + self.b)
        return m


def test_registered_ports_delay_inputs_and_outputs_by_one_cycle_each():
    harness = synth.RegisteredPorts(_Adder())
    seen = []

    async def testbench(ctx):
        ctx.set(harness.a, 200)
        ctx.set(harness.b, 100)
        for _ in range(3):
            seen.append(ctx.get(harness.total))
            await ctx.tick()
            ctx.set(harness.a, 0)
            ctx.set(harness.b, 0)
        seen.append(ctx.get(harness.total))

    sim = Simulator(harness)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    # Edge 1 registers the inputs, edge 2 the sum; then the zeros follow.
    assert seen == [0, 0, 300, 0]


def test_yosys_script_maps_luts_without_abc9():
    target = synth.TARGETS["ecp5"]
    lines = synth.yosys_script(target, "b.v", "top", "b.stat.json").splitlines()
    assert "abc9" not in "\n".join(lines)
    mapping = [line for line in lines if line.startswith("abc ")]
    assert len(mapping) == 1 and mapping[0].startswith("abc -lut 4:5 -dress -script +")
    script = mapping[0].split("+", 1)[1].split(";")
    assert script.index("&synch2") < script.index("dch,-f") < script.index("if")
    assert lines[:4] == ["read_verilog -sv b.v", "chformal -remove", "delete t:$print",
                         "synth_ecp5 -top top -run begin:map_luts"]
    assert "synth_ecp5 -top top -run map_cells:" in lines
    assert lines[-1] == "tee -q -o b.stat.json stat -json"
    assert synth.yosys_script(target, "h.v", "top_harness", "n.json").splitlines()[-1] == "write_json n.json"


def test_synth_without_place_and_route_says_so(monkeypatch, capsys):
    asked = {}

    def synthesize(config, block, target, freq_mhz, place=True):
        asked["place"] = place
        counts = dict.fromkeys(("luts", "carry_cells", "lut_rams", "lut_sites", "ffs", "brams", "dsps"), 1)
        levels = {"histogram": {0: 1}, "by_block": {"cdb": {0: 1}}, "deepest": {"cdb": ["a"]},
                  "deep_routes": {"from_levels": 0, "routes": {"cdb → cdb": 1}}}
        return {"block": block, "module": "hts_cdb", "config": "<preset tiny>", "target": target, "device": "LFE5U",
                **counts, "fmax_constraint_mhz": freq_mhz, "fits": True, "placed": False, "fmax_mhz": None,
                "utilization": {}, "logic_levels": levels}

    monkeypatch.setattr(synth, "synthesize", synthesize)
    assert main(["synth", "-c", "tiny", "--block", "cdb", "--no-place"]) == 0
    out = capsys.readouterr().out
    assert asked == {"place": False}
    assert "not placed: --no-place" in out and "routes of the inputs at 0 levels or more" in out
    assert "placed: " not in out.replace("not placed: ", "")


def test_a_block_too_large_for_the_part_is_not_placed():
    target = synth.TARGETS["ecp5"]
    resources = {"lut_sites": target.lut_capacity, "ffs": target.ff_capacity}
    assert synth.fits(resources, target)
    assert not synth.fits({**resources, "lut_sites": target.lut_capacity + 1}, target)
    assert not synth.fits({**resources, "ffs": target.ff_capacity + 1}, target)


def test_parse_stat_counts_cells_by_type():
    stat = {"modules": {"\\top": {}},
            "design": {"num_cells": 18, "num_cells_by_type": {
                "LUT4": 7, "CCU2C": 3, "TRELLIS_DPR16X4": 2, "TRELLIS_FF": 5, "DP16KD": 1, "PFUMX": 2}}}
    counts = synth.parse_stat(stat, synth.TARGETS["ecp5"])
    # A carry cell is two LUT4 sites, a 16 x 4 distributed RAM six.
    assert counts == {"luts": 7, "carry_cells": 3, "lut_rams": 2, "lut_sites": 7 + 2 * 3 + 6 * 2, "ffs": 5,
                      "brams": 1, "dsps": 0,
                      "cells": {"CCU2C": 3, "DP16KD": 1, "LUT4": 7, "PFUMX": 2, "TRELLIS_DPR16X4": 2,
                                "TRELLIS_FF": 5}}


def test_parse_report_takes_the_slowest_clock_and_the_resources_used():
    report = {"critical_paths": [],
              "fmax": {"clk": {"achieved": 123.456, "constraint": 100}, "clk2": {"achieved": 250.0, "constraint": 100}},
              "utilization": {"TRELLIS_COMB": {"available": 83640, "used": 10},
                              "DP16KD": {"available": 208, "used": 0},
                              "TRELLIS_FF": {"available": 83640, "used": 4}}}
    assert synth.parse_report(report) == {
        "fmax_mhz": 123.46,
        "utilization": {"TRELLIS_COMB": {"used": 10, "available": 83640},
                        "TRELLIS_FF": {"used": 4, "available": 83640}},
        "critical_path": None}


def test_parse_report_without_a_clock_has_no_fmax():
    assert synth.parse_report({"fmax": {}, "utilization": {}}) == {"fmax_mhz": None, "utilization": {},
                                                                   "critical_path": None}


def _step(kind: str, source: str, sink: str, delay: float) -> dict:
    return {"type": kind, "from": {"cell": source, "port": "Q"}, "to": {"cell": sink, "port": "A"}, "delay": delay}


def test_critical_path_is_the_longest_path_split_into_routing_and_logic():
    short = [_step("clk-to-q", "a", "a", 0.5), _step("routing", "a", "b", 1.0), _step("setup", "b", "b", 0.1)]
    long = [_step("clk-to-q", "r", "r", 0.5), _step("routing", "r", "x", 2.0), _step("logic", "x", "y", 0.25),
            _step("routing", "y", "z", 1.5), _step("logic", "z", "s", 0.25), _step("routing", "s", "q", 0.5)]
    report = {"critical_paths": [{"from": "clk", "to": "clk", "path": short},
                                 {"from": "clk", "to": "clk", "path": long}]}
    assert synth.critical_path(report) == {"delay_ns": 5.0, "routing_ns": 4.0, "logic_ns": 1.0, "logic_steps": 2,
                                           "cells": ["r", "x", "y", "z", "s", "q"]}


def test_sweep_configs_change_one_key_and_are_validated(default_config):
    config = with_value(default_config, "hts.tracker_entries", 4)
    assert config.hts.tracker_entries == 4 and config.widths.tag == 2
    assert config.accelerators == default_config.accelerators and config.memory == default_config.memory
    with pytest.raises(ConfigError, match="hts.tracker_entries: must be <= 1024"):
        with_value(default_config, "hts.tracker_entries", 4096)


@pytest.mark.slow
@pytest.mark.parametrize("place", [True, False])
def test_synth_of_the_tiny_memory_tracker(tmp_path, tiny_config, place):
    import os
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    result = hts("synth", "-c", "tiny", "--block", "memory_tracker", "--json", *([] if place else ["--no-place"]),
                 env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    entries, tlb_slots = tiny_config.hts.tracker_entries, tiny_config.hts.tlb_entries
    # The tracker's state, and nothing else, is in flip-flops: valid bits, entries, age
    # matrix, which TLB slots each entry touches, and the TLB slot allocated last cycle
    # (one bit per slot) with its home, whose ``touches`` column is registered a cycle late.
    # (One tag: its task ID and metadata are a register, not distributed RAM.)
    state_bits = (entries + entries * tracker_entry_layout(tiny_config).size + entries * entries
                  + entries * tlb_slots + tlb_slots + region_layout(tiny_config).size)
    assert report["ffs"] == state_bits
    assert report["luts"] > 0
    assert report["lut_sites"] == report["luts"] + 2 * report["carry_cells"] + 6 * report["lut_rams"]
    assert report["brams"] == 0 and report["dsps"] == 0
    if place:
        assert 10 < report["fmax_mhz"] < 1000 and report["utilization"]
        assert "nextpnr: place and route" in result.stderr
    else:
        assert report["fmax_mhz"] is None and report["utilization"] == {} and "nextpnr" not in result.stderr
    assert report["placed"] == place and report["fits"]
    # Every flip-flop's data input is a register input; the block's and the harness's port registers'.
    levels = report["logic_levels"]
    assert sum(levels["histogram"].values()) >= report["ffs"] and max(map(int, levels["histogram"])) >= 2
    assert set(levels["by_block"]) == {"memory_tracker", "ports"}
    deep = levels["deep_routes"]
    assert deep["from_levels"] == max(map(int, levels["histogram"])) - 1
    assert sum(deep["routes"].values()) == sum(count for depth, count in levels["histogram"].items()
                                               if int(depth) >= deep["from_levels"])
    assert report["block"] == "memory_tracker" and report["config"] == "<preset tiny>"
    assert list(tmp_path.iterdir()) == []  # the work directory is gone


@pytest.mark.slow
def test_synth_of_a_block_with_simulation_asserts(tiny_config):
    """The loop stack carries Amaranth asserts, written as SystemVerilog `assert`."""
    result = hts("synth", "-c", "tiny", "--block", "loop_stack", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ffs"] > 0 and report["fmax_mhz"] > 10


def test_a_sweep_point_that_fails_is_reported_and_the_others_are_kept(monkeypatch, tiny_config):
    def synthesize(config, block, freq_mhz, progress):
        if config.hts.tracker_entries == 4:
            raise HTSError("yosys failed")
        return {"lut_sites": config.hts.tracker_entries}

    monkeypatch.setattr(synth_sweep, "synthesize", synthesize)
    rows, errors = synth_sweep.sweep(tiny_config, "hts.tracker_entries", (2, 4, 8), "memory_tracker", 100.0,
                                     workers=0)
    assert [row["value"] for row in rows] == [2, 8] and [row["lut_sites"] for row in rows] == [2, 8]
    assert errors == ["hts.tracker_entries = 4: HTSError: yosys failed"]


@pytest.mark.slow
def test_a_synth_sweep_on_a_cluster_equals_hts_synth(tiny_config):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        rows, errors = synth_sweep.sweep(tiny_config, "hts.tracker_entries", (2, 4), "memory_tracker", 100.0,
                                         cluster.scheduler_address)
    assert errors == [] and [row["value"] for row in rows] == [2, 4]
    for row in rows:
        alone = synth.synthesize(with_value(tiny_config, "hts.tracker_entries", row["value"]), "memory_tracker",
                                 progress=lambda message: None)
        assert {key: row[key] for key in alone} == alone


def test_the_lists_and_dispatch_group_carries_a_ready_task_to_its_shell(tiny_config):
    """The group exports what its blocks leave open, and a ready task appended to its lists
    is offered and granted to its class's instance the cycle after."""
    group = synth.build(tiny_config, "lists_and_dispatch")
    ports = group.signature.members
    assert {"ready_lists_append", "ready_lists_queued", "arbiter_deliver"} <= set(ports)
    assert not {"arbiter_offer_task", "ready_lists_take", "asr_occupy"} & set(ports)
    delivered = []

    async def bench(ctx):
        ctx.set(group.ready_lists_append, 1)
        ctx.set(group.ready_lists_append_task, {"tag": 0, "accel_class": 2, "ready": 1})
        await ctx.tick()
        ctx.set(group.ready_lists_append, 0)
        ctx.set(group.ready_lists_queued, 1)
        for cycle in range(1, 5):
            shells = group.arbiter_deliver
            delivered.extend((cycle, flat, ctx.get(port.payload.tag)) for flat, port in enumerate(shells)
                             if ctx.get(port.valid))
            await ctx.tick()

    sim = Simulator(group)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # Listed at the edge of cycle 0, granted in cycle 1 to class 2's only instance.
    assert delivered == [(1, 2, 0)]


# A stand-in for a YoWASP tool: started as synth starts Yosys (``module:function``, in the
# work directory), it sleeps, then exits with the status its name asks for.
_SLOW_TOOL = """\
import time


def run(argv):
    time.sleep(0.6)
    return 0


def fail(argv):
    time.sleep(0.6)
    return 1
"""


@pytest.fixture
def slow_tool(tmp_path, monkeypatch):
    """The work directory, with the stand-in tool and a heartbeat every 50 ms."""
    from hts.base import progress
    (tmp_path / "slow_tool.py").write_text(_SLOW_TOOL)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.05)
    return tmp_path


def test_a_long_yosys_run_says_on_stderr_that_it_still_runs(slow_tool, monkeypatch, capsys):
    monkeypatch.setattr(synth, "_YOSYS", "slow_tool:run")
    synth.run_yosys("block.ys", "block.log", slow_tool, "yosys (block and harness)")
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) >= 3
    assert all(line.startswith("yosys (block and harness): still running, ") and is_heartbeat(line)
               for line in lines)


def test_the_signs_of_life_stop_with_a_tool_that_fails(slow_tool, monkeypatch):
    monkeypatch.setattr(synth, "_YOSYS", "slow_tool:fail")
    lines = []
    with pytest.raises(HTSError, match="fail failed .exit status 1"):
        synth.run_yosys("block.ys", "block.log", slow_tool, "yosys", lines.append)
    seen = len(lines)
    time.sleep(0.2)
    assert seen >= 3 and len(lines) == seen


def test_a_long_verilog_conversion_says_on_stderr_that_it_still_runs(tmp_path, monkeypatch, capsys):
    from hts.base import progress
    monkeypatch.setattr(progress, "INTERVAL_S", 0.05)

    def slow_write_verilog(config, block, output):
        time.sleep(0.6)
        return "", []

    monkeypatch.setattr(synth, "write_verilog", slow_write_verilog)
    assert main(["verilog", "-c", "tiny", "--block", "cdb", "-o", str(tmp_path / "cdb.v")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("cdb on <preset tiny>: module hts_cdb -> ") and "still running" not in out
    lines = err.splitlines()
    assert len(lines) >= 3 and all(line.startswith("Verilog of cdb: still running, ") for line in lines)
