"""Device models of DYPE (Bai et al., *Data-aware Dynamic Execution of Irregular Workloads
on Heterogeneous Systems*, seed 000).

- FPGA SpMM (customised Sextans), §V: ``t = C (nnz + 13 M) N / (F N_M 10^3)`` with
  ``F = 215`` MHz and ``N_M = 640`` multiply-accumulate units. With ``F`` in MHz the
  printed formula gives milliseconds; :func:`sextans_spmm_seconds` returns seconds.
- FPGA sliding-window attention (SWAT), §V, Eq. (9):
  ``t = C (seq_len t_pipeline + t_init) (w / 1024) / F`` with ``t_pipeline = 201``,
  ``t_init = 904`` cycles and ``F = 421`` MHz.
- Links, §III-A: each MI210 GPU on 16 PCIe 4.0 lanes (31.52 GB/s), each U280 FPGA on 8
  (15.76 GB/s). §III-B: with peer-to-peer transfers "the overall bandwidth is determined by
  the combined bandwidths of the involved GPUs and FPGAs" (:func:`p2p_seconds`).
- Power, Table II: MI210 300 W dynamic, 45 W static; U280 55 W dynamic with the SpMM
  bitstream, 50.2 W with window attention, 19.5 W static (measured at complete idle).

``C`` is the scaling factor DYPE fits to measurements; the paper does not print its value,
so it defaults to 1 (the original Sextans and SWAT models).
"""

from dataclasses import dataclass
from types import MappingProxyType

from hts.base.config import AcceleratorClass
from hts.isa import Word

from .units import require_positive, seconds_to_cycles

__all__ = [
    "SEXTANS_CLOCK_HZ", "SEXTANS_MACS", "SWAT_CLOCK_HZ", "SWAT_PIPELINE_CYCLES", "SWAT_INIT_CYCLES",
    "PCIE4_X16", "PCIE4_X8", "DeviceSpec", "MI210", "DYPE_GNN_DEVICES", "DYPE_ATTENTION_DEVICES",
    "sextans_spmm_seconds", "swat_attention_seconds", "p2p_seconds", "SpMMTiming",
    "WindowAttentionTiming",
]

SEXTANS_CLOCK_HZ = 215e6
SEXTANS_MACS = 640
# Sextans spends the equivalent of 13 non-zeros of work per sparse row (the 13 M term).
SEXTANS_ROW_OVERHEAD = 13

SWAT_CLOCK_HZ = 421e6
SWAT_PIPELINE_CYCLES = 201
SWAT_INIT_CYCLES = 904
# SWAT's cycle counts are for a window of 1024 tokens; time scales with w / 1024.
SWAT_REFERENCE_WINDOW = 1024

PCIE4_X16 = 31.52e9   # bytes/s, PCIe 4.0 x16 (a GPU)
PCIE4_X8 = 15.76e9    # bytes/s, PCIe 4.0 x8 (an FPGA)


@dataclass(frozen=True)
class DeviceSpec:
    """One device type of a system: how many there are, their link, their power (Table II)."""
    model: str
    count: int
    link_bandwidth: float   # bytes/s of one device's PCIe link
    dynamic_power: float    # W drawn on top of static power while computing or transferring
    static_power: float     # W drawn all the time (DYPE measures it at complete idle)

    def __post_init__(self):
        if self.count < 1:
            raise ValueError(f"{self.model}: count must be >= 1, got {self.count}")
        require_positive(link_bandwidth=self.link_bandwidth)
        for name in ("dynamic_power", "static_power"):
            if getattr(self, name) < 0:
                raise ValueError(f"{self.model}: {name} must be >= 0, got {getattr(self, name)}")


MI210 = DeviceSpec("AMD Instinct MI210", 2, PCIE4_X16, 300.0, 45.0)

# The prototype of §III-A (two of its four GPUs used), with the FPGA power of each bitstream.
DYPE_GNN_DEVICES = MappingProxyType(
    {"gpu": MI210, "fpga": DeviceSpec("AMD Alveo U280 (Sextans SpMM)", 3, PCIE4_X8, 55.0, 19.5)})
DYPE_ATTENTION_DEVICES = MappingProxyType(
    {"gpu": MI210, "fpga": DeviceSpec("AMD Alveo U280 (SWAT attention)", 3, PCIE4_X8, 50.2, 19.5)})


def _check_sparse(nnz: int, rows: int, scale: float) -> None:
    if nnz < 0:
        raise ValueError(f"nnz must be >= 0, got {nnz}")
    require_positive(rows=rows, scale=scale)


def sextans_spmm_seconds(nnz: int, rows: int, dense_cols: int, scale: float = 1.0) -> float:
    """Seconds for ``C = A B`` on the FPGA.

    ``A`` is ``rows`` x K with ``nnz`` non-zeros, ``B`` is K x ``dense_cols``.
    """
    _check_sparse(nnz, rows, scale)
    require_positive(dense_cols=dense_cols)
    return scale * (nnz + SEXTANS_ROW_OVERHEAD * rows) * dense_cols / (SEXTANS_CLOCK_HZ * SEXTANS_MACS)


def swat_attention_seconds(seq_len: int, window: int, scale: float = 1.0) -> float:
    """Seconds of one sliding-window attention on the FPGA (Eq. 9)."""
    require_positive(seq_len=seq_len, window=window, scale=scale)
    if window > seq_len:
        # DYPE only evaluates w <= seq_len (footnote to §IV-B): a wider window is not attention.
        raise ValueError(f"window must be <= seq_len, got window={window}, seq_len={seq_len}")
    cycles = seq_len * SWAT_PIPELINE_CYCLES + SWAT_INIT_CYCLES
    return scale * cycles * (window / SWAT_REFERENCE_WINDOW) / SWAT_CLOCK_HZ


def p2p_seconds(nbytes: float, source: DeviceSpec, sources: int, destination: DeviceSpec,
                destinations: int) -> float:
    """Seconds to move ``nbytes`` from ``sources`` devices to ``destinations`` devices peer to peer.

    Every device streams over its own link at once, so each side moves data at its
    combined bandwidth and the slower side sets the pace.
    """
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    for name, count, spec in (("sources", sources, source), ("destinations", destinations, destination)):
        if not 1 <= count <= spec.count:
            raise ValueError(f"{name} must be in [1, {spec.count}] ({spec.model}), got {count}")
    return nbytes / min(sources * source.link_bandwidth, destinations * destination.link_bandwidth)


def _rows_of_output(word: Word, block_words: int, row_words: int, what: str) -> int:
    """How many rows of ``row_words`` words the task's output region holds."""
    rows = word.d * block_words // row_words
    if rows < 1:
        raise ValueError(f"task output region of {word.d} blocks x {block_words} words holds no "
                         f"{what} of {row_words} words")
    return rows


class SpMMTiming:
    """An FPGA SpMM accelerator whose sparse matrix is loaded once (DYPE pre-loads graphs).

    A task streams the dense operand through it and writes the ``rows`` x N product to its
    output region, so N is the output region's size divided by ``rows``.
    """

    def __init__(self, rows: int, nnz: int, block_words: int, clock_hz: float, scale: float = 1.0):
        _check_sparse(nnz, rows, scale)
        require_positive(block_words=block_words, clock_hz=clock_hz)
        self.rows, self.nnz, self.block_words, self.clock_hz, self.scale = rows, nnz, block_words, clock_hz, scale

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        dense_cols = _rows_of_output(word, self.block_words, self.rows, "column")
        return seconds_to_cycles(sextans_spmm_seconds(self.nnz, self.rows, dense_cols, self.scale), self.clock_hz)


class WindowAttentionTiming:
    """An FPGA sliding-window attention accelerator of window ``window`` (SWAT).

    A task writes one ``model_dim``-word row per token, so its sequence length is the output
    region's size divided by ``model_dim`` (512 in DYPE's BigBird setting, §IV-B).
    """

    def __init__(self, window: int, block_words: int, clock_hz: float, model_dim: int = 512,
                 scale: float = 1.0):
        require_positive(window=window, block_words=block_words, clock_hz=clock_hz, model_dim=model_dim,
                         scale=scale)
        self.window, self.block_words, self.clock_hz = window, block_words, clock_hz
        self.model_dim, self.scale = model_dim, scale

    def cycles(self, accelerator: AcceleratorClass, word: Word) -> int:
        seq_len = _rows_of_output(word, self.block_words, self.model_dim, "token")
        return seconds_to_cycles(swat_attention_seconds(seq_len, self.window, self.scale), self.clock_hz)
