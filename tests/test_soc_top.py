"""``hts verilog --block axi_hts --soc-top``: the SoC wrapper names every AXI4-Lite signal as
Vivado infers it, lints clean with the scheduler, and examples/hts_axi_top.v is current."""

import re
import subprocess
import sys
from importlib import resources

import pytest

from hts.base.progress import is_heartbeat
from hts.flows.soc_top import AXI_BUS

pytestmark = pytest.mark.synth

AXI_SIGNALS = ("awvalid", "awready", "awaddr", "awprot", "wvalid", "wready", "wdata", "wstrb", "bvalid", "bready",
               "bresp", "arvalid", "arready", "araddr", "arprot", "rvalid", "rready", "rdata", "rresp")


def _verilog(tmp_path, preset, *extra):
    core, top = tmp_path / "hts_axi.v", tmp_path / "top.v"
    result = subprocess.run([sys.executable, "-m", "hts", "verilog", "-c", preset, "--block", "axi_hts",
                             "-o", core, "--soc-top", top, *extra], capture_output=True, text=True, timeout=1800)
    return result, core, top


def test_the_soc_top_renames_the_bus_and_lints_clean_with_the_scheduler(tmp_path):
    result, core, top = _verilog(tmp_path, "tiny")
    assert result.returncode == 0, result.stderr
    # No lint warning either, e.g. an unconnected pin; only lines saying that the step still runs.
    assert all(is_heartbeat(line) for line in result.stderr.splitlines())
    text = top.read_text()
    for signal in AXI_SIGNALS:
        assert re.search(rf"^  (input|output) (\[\d+:0\] )?{AXI_BUS}_{signal},?$", text, re.M), signal
        assert f'aximm:1.0 {AXI_BUS} {signal.upper()}" *)' in text, signal
        assert f".s_axi__{signal}({AXI_BUS}_{signal})" in text, signal
    assert "interrupt:1.0 interrupt INTERRUPT" in text and ".irq(interrupt)" in text
    assert ".rst(~aresetn)" in text and ".clk(aclk)" in text


def test_soc_top_of_another_block_is_refused_and_writes_nothing(tmp_path):
    top = tmp_path / "top.v"
    result = subprocess.run([sys.executable, "-m", "hts", "verilog", "-c", "tiny", "--block", "tlb", "-o",
                             tmp_path / "tlb.v", "--soc-top", top], capture_output=True, text=True, timeout=600)
    assert result.returncode == 1 and "--soc-top wraps the block axi_hts" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_example_wrapper_is_the_default_configuration_s(tmp_path):
    result, _, top = _verilog(tmp_path, "default")
    assert result.returncode == 0, result.stderr
    assert resources.files("hts.examples").joinpath("hts_axi_top.v").read_text() == top.read_text()
