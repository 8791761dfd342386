"""DSP accelerator models: each function against an independent reference, then the calling
convention (exact output size, never raises, pure, deterministic, zero-padding, prefixes)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from hts.models import dsp
from hts.models.dsp import (
    BAND, BANDS, DEFAULT_LEN, DEFAULT_TAPS, FUNCTIONS, INVERSE, LEN, MU, SCALE, TAPS,
    adaptive_fir, complex_fir, correlation, dct_64, fft_256, iir, real_fir, vector_add,
    vector_dot, vector_max,
)

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
TABLE_II = {"real_fir", "complex_fir", "adaptive_fir", "iir", "vector_dot", "vector_add",
            "vector_max", "fft_256", "dct_64", "correlation"}


def samples(seed, n, bits=31):
    return np.random.default_rng(seed).integers(-(1 << bits), 1 << bits, n).astype(np.int32)


def requantise(value: int, shift: int) -> int:
    """The documented output stage, in Python ints: x 2**-shift, round half up, saturate."""
    value = (value + (1 << (shift - 1))) >> shift if shift > 0 else value << -shift
    return min(max(value, INT32_MIN), INT32_MAX)


def response(h, f):
    """|H(f)| of Q15 taps h at f cycles per sample."""
    return abs(np.sum(np.asarray(h, float) * np.exp(-2j * np.pi * f * np.arange(len(h))))) / (1 << 15)


def test_keynames_are_table_ii():
    assert set(FUNCTIONS) == TABLE_II
    assert all(FUNCTIONS[name].__name__ == name for name in FUNCTIONS)


def test_fields_encode_and_read_back():
    metadata = BAND.encode(3) | TAPS.encode(63) | SCALE.encode(-32) | MU.encode(15) | LEN.encode(1023)
    assert (BAND.read(metadata), TAPS.read(metadata), SCALE.read(metadata)) == (3, 63, -32)
    assert (MU.read(metadata), LEN.read(metadata)) == (15, 1023)
    assert SCALE.read(SCALE.encode(31)) == 31 and SCALE.read(0) == 0
    assert INVERSE.read(1) == 1 and BAND.read(1) == 1
    for field, bad in ((SCALE, 32), (SCALE, -33), (TAPS, 64), (BAND, -1)):
        with pytest.raises(ValueError):
            field.encode(bad)


# Real FIR: the band filters, then the arithmetic against a Python-int convolution.

@pytest.mark.parametrize("band", range(BANDS))
def test_fir_band_passes_its_band_and_stops_the_others(band):
    h = dsp.fir_coefficients(band, DEFAULT_TAPS)
    centres = [(b + 0.5) / (2 * BANDS) for b in range(BANDS)]
    assert 0.95 < response(h, centres[band]) < 1.05
    for other, f in enumerate(centres):
        if abs(other - band) > 1:
            assert response(h, f) < 0.01
    edge = 0.0 if band == 0 else 0.5 if band == BANDS - 1 else None
    if edge is not None:    # low-pass passes DC, high-pass passes Nyquist
        assert 0.95 < response(h, edge) < 1.05


@pytest.mark.parametrize("band", range(BANDS))
@pytest.mark.parametrize("taps, scale", [(0, 0), (1, 0), (8, -3), (63, 2), (17, 31), (31, -32)])
def test_real_fir_is_a_convolution(band, taps, scale):
    x = samples(band + taps, 90)
    h = [int(c) for c in dsp.fir_coefficients(band, taps or DEFAULT_TAPS)]
    metadata = BAND.encode(band) | TAPS.encode(taps) | SCALE.encode(scale)
    expected = [requantise(sum(h[k] * int(x[n - k]) for k in range(len(h)) if n >= k), 15 + scale)
                for n in range(len(x))]
    assert real_fir(x, len(x), metadata).tolist() == expected


def test_real_fir_default_is_a_unity_gain_low_pass():
    dc = np.full(100, 10000, np.int32)
    nyquist = np.array([10000, -10000] * 50, np.int32)
    assert abs(int(real_fir(dc, 100, 0)[-1]) - 10000) < 50
    assert abs(int(real_fir(nyquist, 100, 0)[-1])) < 50


# Complex FIR.

@pytest.mark.parametrize("band, taps, scale", [(0, 0, 0), (1, 5, 0), (2, 63, -2), (3, 31, 4)])
def test_complex_fir_is_a_complex_convolution(band, taps, scale):
    x = samples(band, 80)
    z = [complex(int(x[2 * n]), int(x[2 * n + 1])) for n in range(40)]
    h_re, h_im = dsp.complex_fir_coefficients(band, taps or DEFAULT_TAPS)
    metadata = BAND.encode(band) | TAPS.encode(taps) | SCALE.encode(scale)
    expected = []
    for n in range(40):     # Gaussian-integer arithmetic, exact
        re = sum(int(h_re[k]) * int(z[n - k].real) - int(h_im[k]) * int(z[n - k].imag)
                 for k in range(len(h_re)) if n >= k)
        im = sum(int(h_re[k]) * int(z[n - k].imag) + int(h_im[k]) * int(z[n - k].real)
                 for k in range(len(h_re)) if n >= k)
        expected += [requantise(re, 15 + scale), requantise(im, 15 + scale)]
    assert complex_fir(x, 80, metadata).tolist() == expected


@pytest.mark.parametrize("band", range(BANDS))
def test_complex_fir_channel_selects_its_frequency(band):
    n = np.arange(200)
    tone = np.exp(2j * np.pi * band / BANDS * n) * 20000
    x = np.column_stack([tone.real, tone.imag]).ravel().round().astype(np.int32)
    passed = complex_fir(x, 400, BAND.encode(band))[-100:].astype(float)
    stopped = complex_fir(x, 400, BAND.encode((band + 2) % BANDS))[-100:].astype(float)
    delay = 2 * (DEFAULT_TAPS - 1) // 2     # linear phase: the tone comes out 15 samples late
    assert np.abs(passed - x[-100 - delay:-delay]).max() < 200
    assert np.abs(stopped).max() < 200


def test_complex_fir_default_is_real_fir_on_each_part():
    x = samples(7, 128, bits=20)
    out = complex_fir(x, 128, 0)
    assert out[0::2].tolist() == real_fir(x[0::2], 64, 0).tolist()
    assert out[1::2].tolist() == real_fir(x[1::2], 64, 0).tolist()


# Adaptive FIR (LMS).

def lms_reference(x, d, w, taps, mu):
    y = []
    for n in range(len(x)):
        window = [int(x[n - k]) if n >= k else 0 for k in range(taps)]
        y_n = requantise(sum(a * b for a, b in zip(w, window)), 15)
        e = min(max(int(d[n]) - y_n, INT32_MIN), INT32_MAX)
        w = [min(max(wk + requantise(e * xk, 15 + mu), -(1 << 15)), (1 << 15) - 1)
             for wk, xk in zip(w, window)]
        y.append(y_n)
    return y


@pytest.mark.parametrize("band, taps, mu, length, bits", [
    (0, 0, 0, 0, 15), (1, 4, 1, 50, 15), (2, 63, 15, 70, 31), (3, 9, 3, 40, 31)])
def test_adaptive_fir_is_lms(band, taps, mu, length, bits):
    length_ = length or DEFAULT_LEN
    x, d = samples(1, length_, bits), samples(2, length_, bits)
    taps_ = taps or DEFAULT_TAPS
    w = [int(c) for c in dsp.fir_coefficients(band, taps_)]
    metadata = BAND.encode(band) | TAPS.encode(taps) | MU.encode(mu) | LEN.encode(length)
    out = adaptive_fir(np.concatenate([x, d]), length_ + 3, metadata)
    assert out.tolist() == lms_reference(x, d, w, taps_, mu or dsp.DEFAULT_MU_SHIFT) + [0, 0, 0]


def test_adaptive_fir_identifies_an_unknown_filter():
    x = samples(3, 600, bits=14)
    d = real_fir(x, 600, BAND.encode(1))        # the unknown system: band 1
    y = adaptive_fir(np.concatenate([x, d]), 600, MU.encode(3) | LEN.encode(600)).astype(float)
    error = d - y
    assert np.sqrt(np.mean(error[-100:] ** 2)) < 0.05 * np.sqrt(np.mean(error[:100] ** 2))


# IIR.

@pytest.mark.parametrize("band", range(BANDS))
def test_iir_biquads_are_stable_and_select_their_band(band):
    b0, b1, b2, a1, a2 = dsp.iir_coefficients(band)
    assert np.abs(np.roots([1 << 14, a1, a2])).max() < 0.9

    def gain(f):
        z = np.exp(-2j * np.pi * f)
        return abs((b0 + b1 * z + b2 * z * z) / ((1 << 14) + a1 * z + a2 * z * z))

    assert 0.95 < gain((band + 0.5) / (2 * BANDS)) < 1.05 or band in (0, BANDS - 1)
    assert gain(0.0 if band == 0 else 0.5 if band == BANDS - 1 else 0.0) > 0.99 or 0 < band < BANDS - 1
    for other in range(BANDS):
        if abs(other - band) > 1:
            assert gain((other + 0.5) / (2 * BANDS)) < 0.25


@pytest.mark.parametrize("band, scale, bits", [(0, 0, 15), (1, 0, 31), (2, 3, 20), (3, -4, 28)])
def test_iir_is_a_direct_form_one_biquad(band, scale, bits):
    x = [int(v) for v in samples(band, 120, bits)]
    b0, b1, b2, a1, a2 = dsp.iir_coefficients(band)
    y = []
    for n in range(len(x)):
        past = lambda seq, k: seq[n - k] if n >= k else 0    # noqa: E731
        acc = b0 * x[n] + b1 * past(x, 1) + b2 * past(x, 2) - a1 * past(y, 1) - a2 * past(y, 2)
        y.append(requantise(acc, 14))
    expected = [requantise(v, scale) for v in y]
    assert iir(np.array(x, np.int32), 120, BAND.encode(band) | SCALE.encode(scale)).tolist() == expected


def test_iir_tracks_the_ideal_filter():
    """Per-sample rounding keeps the fixed-point biquad within a few LSB of float."""
    x = samples(9, 300, bits=24)
    b0, b1, b2, a1, a2 = (c / (1 << 14) for c in dsp.iir_coefficients(1))
    y = [0.0, 0.0]
    xs = [0.0, 0.0] + x.astype(float).tolist()
    for n in range(2, len(xs)):
        y.append(b0 * xs[n] + b1 * xs[n - 1] + b2 * xs[n - 2] - a1 * y[-1] - a2 * y[-2])
    assert np.abs(iir(x, 300, BAND.encode(1)) - np.array(y[2:])).max() < 8


# Vector functions.

def test_vector_dot_small_integers():
    a_b = np.array([1, 2, 3, 4, 5, 6], np.int32)
    assert vector_dot(a_b, 3, LEN.encode(3) | SCALE.encode(-15)).tolist() == [32, 0, 0]
    assert vector_dot(a_b, 1, LEN.encode(3)).tolist() == [0]     # 32 / 2**15 rounds to 0


@pytest.mark.parametrize("length, scale, bits", [(0, 0, 15), (40, 0, 31), (1023, 20, 31), (7, -15, 8)])
def test_vector_dot_is_exact(length, scale, bits):
    n = length or DEFAULT_LEN
    a, b = samples(length, n, bits), samples(length + 1, n, bits)
    exact = sum(int(p) * int(q) for p, q in zip(a, b))
    out = vector_dot(np.concatenate([a, b]), 2, LEN.encode(length) | SCALE.encode(scale))
    assert out.tolist() == [requantise(exact, 15 + scale), 0]


@pytest.mark.parametrize("length, scale", [(0, 0), (5, 0), (100, 1), (33, -2)])
def test_vector_add_saturates(length, scale):
    n = length or DEFAULT_LEN
    a, b = samples(10, n), samples(11, n)
    expected = [requantise(int(p) + int(q), scale) for p, q in zip(a, b)]
    out = vector_add(np.concatenate([a, b]), n, LEN.encode(length) | SCALE.encode(scale))
    assert out.tolist() == expected


def test_vector_max_value_and_first_index():
    x = samples(4, DEFAULT_LEN)
    out = vector_max(np.concatenate([x, [INT32_MAX]]).astype(np.int32), 3, 0)    # word 64 is outside
    assert out.tolist() == [x.max(), int(np.argmax(x)), 0]
    ties = np.array([-5, 7, 2, 7, -9], np.int32)
    assert vector_max(ties, 2, LEN.encode(5)).tolist() == [7, 1]
    assert vector_max(-np.arange(1, 6, dtype=np.int32), 2, LEN.encode(5)).tolist() == [-1, 0]


# FFT-256.

def dft(z, sign):
    k = np.arange(256)
    return np.exp(sign * 2j * np.pi * np.outer(k, k) / 256) @ z


def interleave(z):
    return np.column_stack([z.real, z.imag]).ravel()


@pytest.mark.parametrize("inverse", [0, 1])
@pytest.mark.parametrize("scale, bits", [(0, 20), (4, 31), (-2, 12)])
def test_fft_matches_the_dft(inverse, scale, bits):
    x = samples(bits + inverse, 512, bits)
    reference = interleave(dft(x[0::2] + 1j * x[1::2], 1 if inverse else -1)) * 2.0 ** -(4 + scale)
    out = fft_256(x, 512, INVERSE.encode(inverse) | SCALE.encode(scale))
    assert np.abs(out - reference).max() <= 0.5 + 1e-6


def test_fft_of_an_impulse_and_a_tone():
    impulse = np.zeros(512, np.int32)
    impulse[0] = 1600
    assert fft_256(impulse, 512, 0).tolist() == [100, 0] * 256     # 1600 / 16 in every bin
    tone = np.exp(2j * np.pi * 5 * np.arange(256) / 256) * 1000
    spectrum = fft_256(interleave(tone).round().astype(np.int32), 512, 0)
    # the tone's rounding to integers leaks a few LSB into the other bins
    assert np.abs(spectrum[10] - 16000) <= 2 and np.abs(np.delete(spectrum, 10)).max() <= 3


@pytest.mark.parametrize("seed, bits", [(0, 8), (1, 15), (2, 24), (3, 26)])
def test_fft_then_inverse_fft_gives_back_the_input(seed, bits):
    x = samples(seed, 512, bits)
    assert np.abs(fft_256(fft_256(x, 512, 0), 512, INVERSE.encode(1)) - x.astype(np.int64)).max() <= 2


def test_fft_saturates_rather_than_wraps():
    dc = np.tile(np.array([INT32_MAX, INT32_MIN], np.int32), 256)
    assert fft_256(dc, 2, 0).tolist() == [INT32_MAX, INT32_MIN]
    assert fft_256(dc, 2, SCALE.encode(4)).tolist() == [INT32_MAX, INT32_MIN]


# DCT-64.

def q15_dct():
    """The documented table, built independently: round-half-up of 2**15 * orthonormal DCT-II."""
    return [[math.floor(math.sqrt((1 if k else 0.5) * 2 / 64) * math.cos(math.pi * (2 * n + 1) * k / 128)
                        * (1 << 15) + 0.5) for n in range(64)] for k in range(64)]


@pytest.mark.parametrize("inverse", [0, 1])
@pytest.mark.parametrize("scale, bits", [(0, 31), (3, 20), (-4, 15)])
def test_dct_with_the_q15_table_is_exact(inverse, scale, bits):
    c = q15_dct()
    x = [int(v) for v in samples(bits + inverse, 64, bits)]
    entry = (lambda k, n: c[n][k]) if inverse else (lambda k, n: c[k][n])
    expected = [requantise(sum(entry(k, n) * x[n] for n in range(64)), 15 + scale) for k in range(64)]
    assert dct_64(np.array(x, np.int32), 64, INVERSE.encode(inverse) | SCALE.encode(scale)).tolist() == expected


def test_dct_matches_the_float_dct():
    x = samples(5, 64, 20)
    k, n = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    c = np.sqrt(np.where(k == 0, 1 / 64, 2 / 64)) * np.cos(np.pi * (2 * n + 1) * k / 128)
    # A Q15 table errs by <= 2**-16 per entry: bounded by the input's L1 norm.
    assert np.abs(dct_64(x, 64, 0) - c @ x).max() <= 0.5 + np.abs(x).sum() * 2.0 ** -16
    assert np.abs(dct_64(x, 64, 0) - c @ x).max() > 0   # sanity: it is fixed point, not float


def test_dct_then_inverse_dct_gives_back_the_input():
    x = samples(6, 64, 15)
    assert np.abs(dct_64(dct_64(x, 64, 0), 64, INVERSE.encode(1)) - x.astype(np.int64)).max() <= 16


# Correlation.

@pytest.mark.parametrize("length, scale, bits", [(0, 0, 15), (40, 0, 31), (9, -15, 10), (200, 6, 31)])
def test_correlation_sequence_and_peak(length, scale, bits):
    n = length or DEFAULT_LEN
    x, y = [int(v) for v in samples(length, n, bits)], [int(v) for v in samples(length + 9, n, bits)]
    lags = range(-(n - 1), n)
    r = [sum(x[i + lag] * y[i] for i in range(n) if 0 <= i + lag < n) for lag in lags]
    peak = max(range(len(r)), key=lambda i: (r[i], -i))
    rho = r[peak] / math.sqrt(sum(v * v for v in x) * sum(v * v for v in y))
    out = correlation(np.array(x + y, np.int32), 2 * n + 1, LEN.encode(length) | SCALE.encode(scale))
    assert out[0] == min(math.floor(rho * (1 << 15) + 0.5), (1 << 15) - 1)
    assert out[1] == lags[peak]
    assert out[2:].tolist() == [requantise(v, 15 + scale) for v in r]


def test_correlation_scalar_measures_similarity():
    x = samples(8, 64, 15)
    delayed = np.concatenate([np.zeros(5, np.int32), x[:-5]])
    assert correlation(np.concatenate([x, x]), 2, 0).tolist() == [(1 << 15) - 1, 0]
    head = correlation(np.concatenate([x, delayed]), 2, 0)
    assert head[0] > 0.9 * (1 << 15) and head[1] == -5
    assert correlation(np.concatenate([x, samples(9, 64, 15)]), 1, 0)[0] < 0.5 * (1 << 15)
    assert correlation(np.zeros(0, np.int32), 2, 0).tolist() == [0, -(DEFAULT_LEN - 1)]


# The calling convention, over all ten functions.

names = st.sampled_from(sorted(FUNCTIONS))
words = arrays(np.int32, st.integers(0, 600))
metadatas = st.one_of(st.integers(0, (1 << 60) - 1), st.integers(0, 1 << 17))


@settings(deadline=None, max_examples=200)
@given(name=names, inputs=words, out_words=st.integers(0, 600), metadata=metadatas)
def test_contract(name, inputs, out_words, metadata):
    f = FUNCTIONS[name]
    before = inputs.copy()
    out = f(inputs, out_words, metadata)
    assert isinstance(out, np.ndarray) and out.dtype == np.int32 and out.shape == (out_words,)
    assert np.array_equal(inputs, before)
    assert np.array_equal(f(inputs, out_words, metadata), out)


@settings(deadline=None, max_examples=150)
@given(name=names, inputs=words, keep=st.integers(0, 600), pad=st.integers(1, 300),
       out_words=st.integers(0, 600), fewer=st.integers(0, 600), metadata=metadatas)
def test_zero_padding_and_prefixes(name, inputs, keep, pad, out_words, fewer, metadata):
    f = FUNCTIONS[name]
    short = inputs[:keep]
    out = f(short, out_words, metadata)
    assert np.array_equal(f(np.concatenate([short, np.zeros(pad, np.int32)]), out_words, metadata), out)
    assert np.array_equal(f(short, min(fewer, out_words), metadata), out[:min(fewer, out_words)])
