"""Device timing models taken from the source papers, behind the ``DeviceTiming`` interface.

Each model answers ``cycles(accelerator, word)`` like :class:`hts.models.timing.TableLatency`,
so the cycle model can run on it, and exposes the formula underneath for the reference
schedulers (``hts.models.schedulers``), which work in seconds or accelerator cycles:

- :mod:`.dype`: DYPE (seed 000): Sextans SpMM and SWAT sliding-window attention on an
  FPGA, PCIe link bandwidths and peer-to-peer transfers, the power table.
- :mod:`.reconfigurable`: Jungblut's dissertation (seed 004): the standard processing
  element's piecewise-linear execution time and the reconfiguration delay.
- :mod:`.gnn_dataflow`: Puigdemont, Russo et al. (seed 003): the 24 dataflow
  configurations of a spatial GNN accelerator with an analytic latency surrogate.
"""

from .dype import (
    DYPE_ATTENTION_DEVICES, DYPE_GNN_DEVICES, PCIE4_X8, PCIE4_X16, DeviceSpec, SpMMTiming,
    WindowAttentionTiming, p2p_seconds, sextans_spmm_seconds, swat_attention_seconds,
)
from .gnn_dataflow import (
    CONFIGURATIONS, INTER_PHASE, TILINGS, Dataflow, GNNDataflowTiming, GraphShape, Tiling,
    dataflow_cycles, resolve_tiling,
)
from .reconfigurable import (
    CVP_PCIE_BITS_PER_S, JTAG_BITS_PER_S, PiecewiseLinearPE, PiecewiseLinearTiming,
    fit_linear, reconfiguration_seconds,
)

__all__ = [
    "DYPE_ATTENTION_DEVICES", "DYPE_GNN_DEVICES", "PCIE4_X8", "PCIE4_X16", "DeviceSpec", "SpMMTiming",
    "WindowAttentionTiming", "p2p_seconds", "sextans_spmm_seconds", "swat_attention_seconds",
    "CONFIGURATIONS", "INTER_PHASE", "TILINGS", "Dataflow", "GNNDataflowTiming", "GraphShape",
    "Tiling", "dataflow_cycles", "resolve_tiling",
    "CVP_PCIE_BITS_PER_S", "JTAG_BITS_PER_S", "PiecewiseLinearPE", "PiecewiseLinearTiming",
    "fit_linear", "reconfiguration_seconds",
]
