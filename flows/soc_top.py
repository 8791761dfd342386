"""A Verilog top for SoC tools around ``hts_axi_hts``: ``hts verilog --block axi_hts --soc-top FILE``.

Vivado's IP integrator and LiteX's ``Instance`` expect AXI4-Lite ports named
``<bus>_awaddr`` with one underscore, an active-low ``aresetn`` and an ``interrupt``
line; Amaranth names the wrapped scheduler's ports ``s_axi__awaddr`` and ``rst``. This
module writes the thin renaming wrapper, with the ``X_INTERFACE_INFO`` attributes that
let Vivado infer the AXI4-Lite interface, clock, reset and interrupt.
"""

import tempfile
from pathlib import Path

from hts.base.errors import display_path
from hts.base.output import atomic_path
from hts.cosim.top import ports

from .synth import lint

__all__ = ["SOC_TOP", "AXI_BUS", "soc_top", "write_soc_top"]

SOC_TOP = "hts_axi_top"
#: The AXI4-Lite interface's name in the wrapper (Vivado shows it as an interface pin).
AXI_BUS = "s_axi_control"
_INNER = "hts_axi_hts"


def _outer_name(name: str) -> str:
    if name.startswith("s_axi__"):
        return f"{AXI_BUS}_{name.removeprefix('s_axi__')}"
    return "interrupt" if name == "irq" else name


def _attributes(name: str) -> list[str]:
    if name.startswith(f"{AXI_BUS}_"):
        channel_signal = name.removeprefix(f"{AXI_BUS}_").upper()
        return [f'(* X_INTERFACE_INFO = "xilinx.com:interface:aximm:1.0 {AXI_BUS} {channel_signal}" *)']
    if name == "interrupt":
        return ['(* X_INTERFACE_PARAMETER = "SENSITIVITY LEVEL_HIGH" *)',
                '(* X_INTERFACE_INFO = "xilinx.com:signal:interrupt:1.0 interrupt INTERRUPT" *)']
    return []


def soc_top(verilog: str) -> str:
    """The wrapper module :data:`SOC_TOP` around module ``hts_axi_hts`` of ``verilog``."""
    declared = [(direction, width, name) for direction, width, name in ports(verilog, _INNER)
                if name not in ("clk", "rst")]
    lines = [f"// {SOC_TOP}: {_INNER} with SoC port names (written by hts verilog --soc-top).",
             f"module {SOC_TOP} (",
             f'  (* X_INTERFACE_PARAMETER = "ASSOCIATED_BUSIF {AXI_BUS}, ASSOCIATED_RESET aresetn" *)',
             '  (* X_INTERFACE_INFO = "xilinx.com:signal:clock:1.0 aclk CLK" *)',
             "  input aclk,",
             '  (* X_INTERFACE_PARAMETER = "POLARITY ACTIVE_LOW" *)',
             '  (* X_INTERFACE_INFO = "xilinx.com:signal:reset:1.0 aresetn RST" *)',
             "  input aresetn,"]
    for index, (direction, width, name) in enumerate(declared):
        outer = _outer_name(name)
        vector = f"[{width - 1}:0] " if width > 1 else ""
        separator = "," if index < len(declared) - 1 else ""
        lines += [f"  {attribute}" for attribute in _attributes(outer)]
        lines.append(f"  {direction} {vector}{outer}{separator}")
    lines += [");",
              f"  {_INNER} scheduler (",
              "    .clk(aclk),",
              "    .rst(~aresetn),",
              *(f"    .{name}({_outer_name(name)}){',' if index < len(declared) - 1 else ''}"
                for index, (_, _, name) in enumerate(declared)),
              "  );",
              "endmodule"]
    return "\n".join(lines) + "\n"


def write_soc_top(scheduler: str, output: str | Path) -> list[str]:
    """Write the wrapper of the ``hts_axi_hts`` whose Verilog is ``scheduler`` to ``output``
    if the two lint together without error; return the warnings."""
    text = soc_top(scheduler)
    with atomic_path(output) as tmp:
        tmp.write_text(text)
        with tempfile.TemporaryDirectory(prefix="hts_soc_top_") as scratch:
            both = Path(scratch) / "both.v"
            both.write_text(text + scheduler)
            return lint(both, SOC_TOP, display_path(output))
