"""Device timing models: numbers worked out by hand from the papers' formulas and tables."""

import networkx as nx
import pytest

from hts import benchmarks
from hts.assembler import assemble
from hts.isa import Word
from hts.models.devices import (
    CONFIGURATIONS, CVP_PCIE_BITS_PER_S, DYPE_ATTENTION_DEVICES, DYPE_GNN_DEVICES, INTER_PHASE,
    JTAG_BITS_PER_S, PCIE4_X8, PCIE4_X16, TILINGS, Dataflow, GNNDataflowTiming, GraphShape,
    PiecewiseLinearPE, PiecewiseLinearTiming, SpMMTiming, Tiling, WindowAttentionTiming, dataflow_cycles,
    fit_linear, p2p_seconds, reconfiguration_seconds, resolve_tiling, sextans_spmm_seconds,
    swat_attention_seconds,
)
from hts.models.devices.gnn_dataflow import aggregation_cycles, combination_cycles
from hts.models.executor import run_sequential
from hts.models.memory import initial_memory
from hts.models.simulate import simulate

ANY_CLASS = None   # the models derive everything from the task word, not from the class


# --- DYPE (seed 000) -----------------------------------------------------------------

def test_sextans_spmm_is_dype_formula_in_milliseconds():
    # ogbn-arxiv (Table I): 170K vertices, 1.1M edges, 128 features. §V: t = C (nnz + 13 M) N /
    # (F N_M 10^3) ms with F = 215 (MHz) and N_M = 640.
    milliseconds = (1_100_000 + 13 * 170_000) * 128 / (215 * 640 * 10**3)
    assert sextans_spmm_seconds(1_100_000, 170_000, 128) * 1e3 == pytest.approx(milliseconds)
    assert milliseconds == pytest.approx(3.0790698, rel=1e-6)
    assert sextans_spmm_seconds(1_100_000, 170_000, 128, scale=2.0) == pytest.approx(2 * milliseconds / 1e3)


def test_swat_attention_is_dype_equation_9():
    # seq_len 1024, w 512: (1024 * 201 + 904) cycles * 512/1024 at 421 MHz.
    assert swat_attention_seconds(1024, 512) == pytest.approx(103_364 / 421e6)
    assert swat_attention_seconds(4096, 4096) == pytest.approx((4096 * 201 + 904) * 4 / 421e6)


def test_links_power_and_p2p_transfers():
    assert (PCIE4_X16, PCIE4_X8) == (31.52e9, 15.76e9)
    gpu, fpga = DYPE_GNN_DEVICES["gpu"], DYPE_GNN_DEVICES["fpga"]
    assert (gpu.count, gpu.dynamic_power, gpu.static_power) == (2, 300.0, 45.0)
    assert (fpga.count, fpga.dynamic_power, fpga.static_power) == (3, 55.0, 19.5)
    assert DYPE_ATTENTION_DEVICES["fpga"].dynamic_power == 50.2
    # Three FPGAs (3 x 15.76 = 47.28 GB/s) feed two GPUs (63.04 GB/s): the FPGAs set the pace.
    assert p2p_seconds(1e9, fpga, 3, gpu, 2) == pytest.approx(1 / 47.28)
    assert p2p_seconds(1e9, gpu, 1, fpga, 3) == pytest.approx(1 / 31.52)
    with pytest.raises(ValueError, match=r"sources must be in \[1, 3\].*got 4"):
        p2p_seconds(1.0, fpga, 4, gpu, 1)


def test_spmm_timing_takes_dense_width_from_output_region():
    # 1000 rows, 5000 non-zeros; 100 blocks of 64 words hold 6 columns of 1000 rows.
    # At the Sextans clock the time is (5000 + 13 * 1000) * 6 / 640 = 168.75 cycles -> 169.
    timing = SpMMTiming(rows=1000, nnz=5000, block_words=64, clock_hz=215e6)
    assert timing.cycles(ANY_CLASS, Word(d=100)) == 169
    with pytest.raises(ValueError, match="holds no column of 1000 words"):
        timing.cycles(ANY_CLASS, Word(d=15))


def test_window_attention_timing_takes_sequence_from_output_region():
    # 128 blocks of 4096 words = 1024 tokens of 512 words; at SWAT's clock 103364 cycles.
    timing = WindowAttentionTiming(window=512, block_words=4096, clock_hz=421e6)
    assert timing.cycles(ANY_CLASS, Word(d=128)) == 103_364


@pytest.mark.parametrize("call, key", [
    (lambda: sextans_spmm_seconds(-1, 10, 1), "nnz"),
    (lambda: sextans_spmm_seconds(1, 0, 1), "rows"),
    (lambda: swat_attention_seconds(512, 1024), "window must be <= seq_len"),
    (lambda: SpMMTiming(rows=10, nnz=1, block_words=0, clock_hz=1e9), "block_words"),
    (lambda: reconfiguration_seconds(1e6, 0), "bits_per_second"),
    (lambda: PiecewiseLinearPE(33e-6, 0.0, -1.0), "beta1"),
    (lambda: Dataflow("fused", "a"), "inter_phase"),
    (lambda: Dataflow("seq", "z"), "tiling"),
    (lambda: GraphShape((), 1, 1), "degrees"),
])
def test_bad_input_names_the_parameter(call, key):
    with pytest.raises(ValueError, match=key):
        call()


# --- Jungblut (seed 004) --------------------------------------------------------------

def test_reconfiguration_delay_is_bitstream_over_bandwidth():
    # §2: a 10 MB bitstream takes 0.01 s over CvP (8 Gbit/s) and up to 2.7 s over JTAG (0.03 Gbit/s).
    assert reconfiguration_seconds(10e6, CVP_PCIE_BITS_PER_S) == pytest.approx(0.01)
    assert reconfiguration_seconds(10e6, JTAG_BITS_PER_S) == pytest.approx(80e6 / 0.03e9)
    assert round(reconfiguration_seconds(10e6, JTAG_BITS_PER_S), 1) == 2.7
    assert reconfiguration_seconds(10e6, CVP_PCIE_BITS_PER_S, overhead_seconds=0.5) == pytest.approx(0.51)


# A U280 standard PE as in Figure 6.1: 33 us floor, linear from 1024 words on.
U280_PE = PiecewiseLinearPE(floor_seconds=33e-6, beta0=1e-6, beta1=32e-6 / 1024)


def test_standard_pe_is_flat_then_linear():
    assert U280_PE.knee_words == pytest.approx(1024)
    assert U280_PE.seconds(0) == U280_PE.seconds(1000) == 33e-6
    assert U280_PE.seconds(2048) == pytest.approx(65e-6)
    assert U280_PE.seconds(4096) - U280_PE.seconds(3072) == pytest.approx(32e-6)


def test_words_for_inverts_the_linear_part():
    assert U280_PE.words_for(65e-6) == pytest.approx(2048)
    assert U280_PE.words_for(33e-6) == pytest.approx(1024)
    with pytest.raises(ValueError, match="floor"):
        U280_PE.words_for(10e-6)


def test_fit_linear_is_equations_6_1_and_6_2():
    # x = 1, 2, 3; y = 2, 4, 7: beta1 = 5 / 2, beta0 = 13/3 - 2 * 5/2 = -2/3.
    beta0, beta1 = fit_linear([1, 2, 3], [2, 4, 7])
    assert (beta0, beta1) == (pytest.approx(-2 / 3), pytest.approx(2.5))
    with pytest.raises(ValueError, match="two different"):
        fit_linear([5, 5], [1, 2])


def test_piecewise_timing_reads_input_region():
    # 32 blocks of 64 words = 2048 words: 65 us, 32500 cycles at the paper's 500 MHz.
    timing = PiecewiseLinearTiming(U280_PE, block_words=64, clock_hz=500e6)
    assert timing.cycles(ANY_CLASS, Word(b=32)) == 32_500
    assert timing.cycles(ANY_CLASS, Word(b=1)) == 16_500


def test_cycle_model_runs_on_a_device_model(default_config):
    """Any device model drives the scheduler models; the data stay those of in-order execution."""
    timing = PiecewiseLinearTiming(U280_PE, default_config.memory.block_words, 500e6)
    programs = [assemble(benchmarks.source("same_dependency"), default_config)]
    memory = initial_memory(default_config, 0)
    in_order = run_sequential(programs, default_config, initial_memory(default_config, 0))
    expected = sum(timing.cycles(ANY_CLASS, programs[t.pid].decoded[t.pc]) for t in in_order.tasks)
    assert simulate(default_config, programs, memory, "sequential", timing).cycles == expected
    table = simulate(default_config, programs, initial_memory(default_config, 0), "hts")
    timed = simulate(default_config, programs, initial_memory(default_config, 0), "hts", timing)
    assert timed.memory.digest() == table.memory.digest() == in_order.memory.digest()
    assert timed.cycles != table.cycles


# --- GNN dataflows (seed 003) ---------------------------------------------------------

def test_there_are_24_configurations():
    assert len(CONFIGURATIONS) == len(set(CONFIGURATIONS)) == 24
    assert INTER_PHASE == ("seq", "sp", "pp") and TILINGS == tuple("abcdefgh")
    assert str(Dataflow("pp", "h")) == "pp-h"


def test_table_2_tilings_on_512_pes():
    shape = GraphShape((1,) * 100, in_features=600, out_features=16)
    # a: T_Fa = T_Fc = min(512, 600) = 512 leaves one PE row for V in both phases.
    assert resolve_tiling("a", shape) == Tiling("a", t_va=1, t_fa=512, t_n=1, t_vc=1, t_gc=1, t_fc=512)
    # e asks for 18 x 300 PEs in aggregation; T_N is cut to 512 // 18 = 28. T_Vc = 512 // 18 = 28.
    e = resolve_tiling("e", shape)
    assert (e.t_fa, e.t_n, e.t_va, e.t_fc, e.t_vc) == (18, 28, 1, 18, 28)
    # f: T_N = min(18, V) = 18, so T_Va = 512 // 18 = 28; combination 1 x 1 leaves T_Vc = V = 100.
    f = resolve_tiling("f", shape)
    assert (f.t_fa, f.t_n, f.t_va, f.t_vc) == (1, 18, 28, 100)
    # b with F = 1: floor(F / 2) = 0 neighbours per step would never finish; at least 1.
    assert resolve_tiling("b", GraphShape((1,), 1, 1)).t_n == 1


PATH = GraphShape.of(nx.path_graph(3), in_features=4, out_features=2)   # degrees 1, 2, 1


def test_surrogate_by_hand_on_a_path():
    assert PATH.degrees == (1, 2, 1)
    d = resolve_tiling("d", PATH, pes=8)                 # every tile 1; T_Va = T_Vc = V = 3
    assert aggregation_cycles(PATH, d) == 6              # 4 neighbour steps x 4 features / 3 rows
    assert combination_cycles(PATH, d) == 8              # 1 row step x 4 x 2
    f = resolve_tiling("f", PATH, pes=8)                 # T_N = 3: every node in one step; T_Va = 2
    assert aggregation_cycles(PATH, f) == 6              # 3 steps x 4 features / 2 rows
    # seq: + V F = 12 words out and back in, 4 words a cycle: 6 cycles.
    assert dataflow_cycles(PATH, Dataflow("seq", "d"), pes=8, memory_words_per_cycle=4) == 6 + 8 + 6
    # sp: weights (4 x 2 words) fetched once per row tile, one tile of 3 rows: 2 cycles.
    assert dataflow_cycles(PATH, Dataflow("sp", "d"), pes=8, memory_words_per_cycle=4) == 6 + 8 + 2
    # pp: 4 PEs per phase, still 3 rows at a time; the slower phase sets the pace.
    assert dataflow_cycles(PATH, Dataflow("pp", "d"), pes=8, memory_words_per_cycle=4) == 8


def test_no_configuration_is_best_for_every_graph():
    """The paper's motivation (Figures 1, 5): the best dataflow depends on the graph."""
    graphs = [GraphShape.of(nx.path_graph(50), 1, 64),
              GraphShape.of(nx.gnp_random_graph(50, 0.2, seed=1), 600, 16),
              GraphShape.of(nx.gnp_random_graph(800, 0.05, seed=2), 32, 128)]
    best = {min(CONFIGURATIONS, key=lambda c: dataflow_cycles(shape, c)) for shape in graphs}
    assert len(best) == len(graphs)


def test_gnn_timing_takes_features_from_regions():
    timing = GNNDataflowTiming((1, 2, 1), Dataflow("seq", "d"), block_words=4, pes=8, memory_words_per_cycle=4)
    assert timing.cycles(ANY_CLASS, Word(b=3, d=2)) == 20     # F = 12 // 3 = 4, G = 8 // 3 = 2
    with pytest.raises(ValueError, match="output region of 0 blocks"):
        timing.cycles(ANY_CLASS, Word(b=3, d=0))
