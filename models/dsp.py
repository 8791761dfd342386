"""Bit-accurate numpy models of the ten DSP accelerators of the HTS paper (Table II).

Every accelerator computes for real on the simulated memory, so that a scheduling bug
(a task reading a block before its producer wrote it, a squashed speculative write that
leaked) shows up as wrong data. All functions are pure and deterministic: the final memory
of an out-of-order run is compared word for word with the one of an in-order run.

Calling convention (:data:`AcceleratorFunction`)::

    f(inputs, out_words, metadata) -> np.ndarray of exactly out_words np.int32

``inputs`` is the concatenation of the task's input blocks, ``out_words`` the size of its
output region, ``metadata`` the 60-bit metadata field of the instruction (Table I).

Data format
    One 32-bit word is one signed sample. Complex data are interleaved ``re, im`` word
    pairs. Coefficients are Q15 (IIR: Q2.14) held in the accelerator, products are
    accumulated exactly (64 bits, or wider where int32 x int32 products are summed), then
    shifted right with round-half-up and saturated to int32. FFT-256 alone computes in
    float64 and rounds half up at the end.

Frames
    Each function reads a fixed number of input words, its *frame*, that depends only on
    ``out_words`` and ``metadata``, never on the size of the input region: like a DMA
    engine that fetches the frame and sees zeros past the end of the region. Short input
    is therefore zero-padded and excess input ignored; the result is zero-filled or
    truncated to ``out_words``. No size or metadata value raises.

Metadata (fields of the 60-bit word; bits no function uses are ignored)::

    field    bits     kind     used by                                  value 0 means
    BAND     [1:0]    uint     real_fir complex_fir adaptive_fir iir    band 0 (low-pass)
    INVERSE  [0]      flag     fft_256 dct_64                           forward transform
    TAPS     [9:4]    uint     real_fir complex_fir adaptive_fir        DEFAULT_TAPS (31)
    SCALE    [15:10]  signed   all but adaptive_fir and vector_max      the natural shift
    MU       [19:16]  uint     adaptive_fir (step 2**-MU)               DEFAULT_MU_SHIFT (6)
    LEN      [29:20]  uint     adaptive_fir and the vector functions,   DEFAULT_LEN (64)
                               correlation: words per operand

``SCALE`` adjusts the output shift around each function's natural one (15 for Q15
products, 0 for vector_add and the IIR output, 4 for FFT-256): the result is multiplied by
``2**-(natural + SCALE)``, a negative total being a saturating left shift. Counts and
lengths use 0 for the default because a zero-tap filter or zero-length vector is useless.

Frames and outputs per function (N = ``out_words``, L = ``LEN``)::

    real_fir      x[0:N]                         -> y[0:N]
    complex_fir   x[0:N] (N/2 complex, rounded up) -> y[0:N]
    adaptive_fir  x[0:L], desired d[L:2L]        -> y[0:L] (filter output while adapting)
    iir           x[0:N]                         -> y[0:N]
    vector_dot    a[0:L], b[L:2L]                -> [a.b]
    vector_add    a[0:L], b[L:2L]                -> a+b
    vector_max    x[0:L]                         -> [max, index of its first occurrence]
    fft_256       256 complex points, 512 words  -> 256 complex points
    dct_64        64 samples                     -> 64 coefficients
    correlation   x[0:L], y[L:2L]                -> [peak normalised correlation (Q15),
                                                     lag of the peak, r[-(L-1)] .. r[L-1]]

The streaming filters are causal, so they read as many samples as they write. A second
operand sits at a fixed offset L rather than at half the output or input region, so that
a shorter output is always a prefix of a longer one and padding the input changes nothing.

docs/accelerators.md gives the full definitions and the Table II cycle counts.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "AcceleratorFunction", "FUNCTIONS", "Field", "BAND", "INVERSE", "TAPS", "SCALE", "MU", "LEN",
    "BANDS", "DEFAULT_TAPS", "DEFAULT_MU_SHIFT", "DEFAULT_LEN", "FFT_POINTS", "DCT_POINTS",
    "fir_coefficients", "complex_fir_coefficients", "iir_coefficients", "dct_matrix",
    "real_fir", "complex_fir", "adaptive_fir", "iir", "vector_dot", "vector_add", "vector_max",
    "fft_256", "dct_64", "correlation",
]

AcceleratorFunction = Callable[[np.ndarray, int, int], np.ndarray]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
Q15 = 15
Q14 = 14    # IIR coefficients: a1 = -2 cos(w0) needs two integer bits


@dataclass(frozen=True)
class Field:
    """A bit field of the metadata word."""
    lsb: int
    width: int
    signed: bool = False

    def read(self, metadata: int) -> int:
        value = (metadata >> self.lsb) & ((1 << self.width) - 1)
        if self.signed and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def encode(self, value: int) -> int:
        """Bits of ``value`` in place, for building a metadata word (OR fields together)."""
        lo, hi = (-(1 << (self.width - 1)), 1 << (self.width - 1)) if self.signed else (0, 1 << self.width)
        if not lo <= value < hi:
            raise ValueError(f"{value} does not fit a {self.width}-bit field")
        return (value & ((1 << self.width) - 1)) << self.lsb


BAND = Field(0, 2)
INVERSE = Field(0, 1)
TAPS = Field(4, 6)
SCALE = Field(10, 6, signed=True)
MU = Field(16, 4)
LEN = Field(20, 10)

BANDS = 4
# Odd, so that every band filter is linear-phase type I, the only type that can pass both
# DC (band 0) and Nyquist (band BANDS-1).
DEFAULT_TAPS = 31
# Stable for 31 taps on full-scale Q15 input (LMS needs mu < 2 / (taps * power)).
DEFAULT_MU_SHIFT = 6
# One operand per 64-word memory block of the default configuration.
DEFAULT_LEN = 64
FFT_POINTS = 256
FFT_SHIFT = 4           # 2**-4 = 1/sqrt(256) each way: unitary, so iFFT(FFT(x)) = x
DCT_POINTS = 64


# Coefficient sets live in the accelerator (as a ROM would), selected by BAND, rather than at
# the head of the input region: the input region then holds only samples, so a filter's
# output region can feed the next filter directly (Algorithm 1 chains FIR, FIR, FIR per band).

def _q(values: np.ndarray, frac_bits: int) -> np.ndarray:
    """Coefficients rounded half up to ``frac_bits`` fractional bits, in 16-bit registers."""
    coefficients = np.clip(np.floor(values * (1 << frac_bits) + 0.5), INT16_MIN, INT16_MAX).astype(np.int64)
    coefficients.flags.writeable = False    # cached and shared between calls
    return coefficients


def _windowed_band(lo: float, hi: float, taps: int) -> np.ndarray:
    """Hamming-windowed ideal band-pass [lo, hi) in cycles per sample."""
    n = np.arange(taps) - (taps - 1) / 2
    return (2 * hi * np.sinc(2 * hi * n) - 2 * lo * np.sinc(2 * lo * n)) * np.hamming(taps)


@functools.lru_cache(maxsize=None)
def fir_coefficients(band: int, taps: int) -> np.ndarray:
    """Q15 taps of real band ``band``: [band, band+1) * fs / (2 * BANDS); band 0 is low-pass."""
    return _q(_windowed_band(band / (2 * BANDS), (band + 1) / (2 * BANDS), taps), Q15)


@functools.lru_cache(maxsize=None)
def complex_fir_coefficients(band: int, taps: int) -> tuple[np.ndarray, np.ndarray]:
    """Q15 (re, im) taps of channel ``band`` of a uniform DFT filter bank.

    Channel k is the band-0 low-pass prototype moved to k * fs / BANDS, so it passes
    [k - 1/2, k + 1/2) * fs / BANDS and channel 0 equals real band 0 on re and im.
    """
    n = np.arange(taps) - (taps - 1) / 2
    h = _windowed_band(0.0, 1 / (2 * BANDS), taps) * np.exp(2j * np.pi * band / BANDS * n)
    return _q(h.real, Q15), _q(h.imag, Q15)


@functools.lru_cache(maxsize=None)
def iir_coefficients(band: int) -> tuple[int, int, int, int, int]:
    """Q2.14 (b0, b1, b2, a1, a2) of a biquad over real band ``band`` (RBJ audio-EQ cookbook).

    Band 0 is a Butterworth low-pass at fs / (2 BANDS), the last band a Butterworth
    high-pass at its lower edge, the others 0 dB-peak band-passes centred in their band.
    """
    if band == 0:
        f0, q = 1 / (2 * BANDS), math.sqrt(0.5)
    elif band == BANDS - 1:
        f0, q = band / (2 * BANDS), math.sqrt(0.5)
    else:
        f0 = (band + 0.5) / (2 * BANDS)
        q = f0 * 2 * BANDS       # centre / bandwidth
    w0 = 2 * math.pi * f0
    cos, alpha = math.cos(w0), math.sin(w0) / (2 * q)
    if band == 0:
        b = ((1 - cos) / 2, 1 - cos, (1 - cos) / 2)
    elif band == BANDS - 1:
        b = ((1 + cos) / 2, -(1 + cos), (1 + cos) / 2)
    else:
        b = (alpha, 0.0, -alpha)
    return tuple(int(c) for c in _q(np.array([*b, -2 * cos, 1 - alpha]) / (1 + alpha), Q14))


@functools.lru_cache(maxsize=None)
def dct_matrix() -> np.ndarray:
    """Q15 orthonormal DCT-II matrix, C[k, n] = s_k cos(pi (2n + 1) k / 128)."""
    k, n = np.meshgrid(np.arange(DCT_POINTS), np.arange(DCT_POINTS), indexing="ij")
    c = np.cos(np.pi * (2 * n + 1) * k / (2 * DCT_POINTS)) * math.sqrt(2 / DCT_POINTS)
    c[0] /= math.sqrt(2)
    return _q(c, Q15)


# Fixed-point plumbing.

def _frame(inputs: np.ndarray, words: int) -> np.ndarray:
    """The first ``words`` input words as int64, zero-padded: a fresh array, never a view."""
    frame = np.zeros(words, np.int64)
    n = min(words, len(inputs))
    frame[:n] = inputs[:n]
    return frame


def _requantise(acc: np.ndarray, shift: int) -> np.ndarray:
    """Multiply by 2**-shift, rounding half up, and saturate to int32.

    ``acc`` is int64, or object (Python ints) for sums too wide for 64 bits.
    """
    if shift > 0:
        acc = (acc + (1 << (shift - 1))) >> shift
    elif shift < 0:
        # Saturating first keeps the left shift inside 64 bits and gives the same result.
        acc = np.clip(acc, INT32_MIN, INT32_MAX) << -shift
    return np.clip(acc, INT32_MIN, INT32_MAX).astype(np.int32)


def _requantise_float(values: np.ndarray, shift: int) -> np.ndarray:
    return np.clip(np.floor(np.ldexp(values, -shift) + 0.5), INT32_MIN, INT32_MAX).astype(np.int32)


def _wide_correlate(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    """Exact ``np.correlate`` of int32-valued arrays, as Python ints.

    Sums of int32 x int32 products overflow 64 bits, so each operand is split into a signed
    high and an unsigned low 16-bit half (as a 16x16 multiplier array would); every partial
    sum then fits easily in int64 and they are recombined without limit.
    """
    a_hi, a_lo, b_hi, b_lo = a >> 16, a & 0xFFFF, b >> 16, b & 0xFFFF
    hi = np.correlate(a_hi, b_hi, mode).astype(object)
    mid = (np.correlate(a_hi, b_lo, mode) + np.correlate(a_lo, b_hi, mode)).astype(object)
    lo = np.correlate(a_lo, b_lo, mode).astype(object)
    return (hi << 32) + (mid << 16) + lo


def _accelerator(compute: Callable[[np.ndarray, int, int], np.ndarray]) -> AcceleratorFunction:
    """Give ``compute`` the calling convention: ints in, exactly ``out_words`` int32 out."""
    @functools.wraps(compute)
    def run(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
        out_words, metadata = int(out_words), int(metadata)
        out = np.zeros(out_words, np.int32)
        if out_words:       # nothing is written, so nothing to compute
            result = compute(np.asarray(inputs), out_words, metadata)
            n = min(out_words, len(result))
            out[:n] = result[:n]
        return out
    return run


# The ten accelerators.

@_accelerator
def real_fir(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """y[n] = sum_k h[k] x[n-k], zero initial state, h = fir_coefficients(BAND, TAPS)."""
    h = fir_coefficients(BAND.read(metadata), TAPS.read(metadata) or DEFAULT_TAPS)
    acc = np.convolve(_frame(inputs, out_words), h)[:out_words]
    return _requantise(acc, Q15 + SCALE.read(metadata))


@_accelerator
def complex_fir(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """Complex y[n] = sum_k h[k] x[n-k] over interleaved (re, im) samples."""
    h_re, h_im = complex_fir_coefficients(BAND.read(metadata), TAPS.read(metadata) or DEFAULT_TAPS)
    points = (out_words + 1) // 2
    x = _frame(inputs, 2 * points)
    x_re, x_im = x[0::2], x[1::2]
    acc = np.empty(2 * points, np.int64)
    acc[0::2] = (np.convolve(x_re, h_re) - np.convolve(x_im, h_im))[:points]
    acc[1::2] = (np.convolve(x_re, h_im) + np.convolve(x_im, h_re))[:points]
    return _requantise(acc, Q15 + SCALE.read(metadata))


@_accelerator
def adaptive_fir(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """LMS: y[n] = w.x_n, e = d[n] - y[n], w += mu e x_n; outputs y.

    The weights start from the BAND coefficient set, so the filter does useful work before
    it has adapted, and saturate to Q15 like 16-bit coefficient registers (which also
    bounds w.x_n to 64 bits).
    """
    taps = TAPS.read(metadata) or DEFAULT_TAPS
    update_shift = Q15 + (MU.read(metadata) or DEFAULT_MU_SHIFT)
    length = LEN.read(metadata) or DEFAULT_LEN
    frame = _frame(inputs, 2 * length)
    x, desired = frame[:length], frame[length:].tolist()
    w = fir_coefficients(BAND.read(metadata), taps).copy()
    # history[n] = x[n], x[n-1], ..., x[n-taps+1]
    history = sliding_window_view(np.concatenate([np.zeros(taps - 1, np.int64), x]), taps)[:, ::-1]
    y = []
    for n in range(min(out_words, length)):    # causal: later samples would be cut off
        x_n = history[n]
        y_n = min(max((int(w.dot(x_n)) + (1 << (Q15 - 1))) >> Q15, INT32_MIN), INT32_MAX)
        e = min(max(desired[n] - y_n, INT32_MIN), INT32_MAX)
        w += (e * x_n + (1 << (update_shift - 1))) >> update_shift
        # minimum/maximum rather than np.clip: this loop is the model's hot spot
        np.minimum(w, INT16_MAX, out=w)
        np.maximum(w, INT16_MIN, out=w)
        y.append(y_n)
    return np.array(y, np.int32)


@_accelerator
def iir(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """Direct-form-I biquad, y rounded and saturated every sample as it is fed back."""
    b0, b1, b2, a1, a2 = iir_coefficients(BAND.read(metadata))
    x1 = x2 = y1 = y2 = 0
    y = []
    for x0 in _frame(inputs, out_words).tolist():
        acc = b0 * x0 + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        y0 = min(max((acc + (1 << (Q14 - 1))) >> Q14, INT32_MIN), INT32_MAX)
        y.append(y0)
        x2, x1, y2, y1 = x1, x0, y1, y0
    # SCALE scales the output only: inside the loop it would move the poles.
    return _requantise(np.array(y, np.int64), SCALE.read(metadata))


@_accelerator
def vector_dot(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    length = LEN.read(metadata) or DEFAULT_LEN
    frame = _frame(inputs, 2 * length)
    return _requantise(_wide_correlate(frame[:length], frame[length:], "valid"), Q15 + SCALE.read(metadata))


@_accelerator
def vector_add(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    length = LEN.read(metadata) or DEFAULT_LEN
    frame = _frame(inputs, 2 * length)
    return _requantise(frame[:length] + frame[length:], SCALE.read(metadata))


@_accelerator
def vector_max(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    x = _frame(inputs, LEN.read(metadata) or DEFAULT_LEN)
    index = int(np.argmax(x))
    return np.array([x[index], index], np.int32)


@_accelerator
def fft_256(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """X[k] = 2**-(4+SCALE) sum_n x[n] exp(-+2 pi i k n / 256); INVERSE picks the + sign."""
    frame = _frame(inputs, 2 * FFT_POINTS)
    z = frame[0::2] + 1j * frame[1::2]
    spectrum = np.fft.ifft(z, norm="forward") if INVERSE.read(metadata) else np.fft.fft(z)
    return _requantise_float(np.column_stack([spectrum.real, spectrum.imag]).ravel(),
                             FFT_SHIFT + SCALE.read(metadata))


@_accelerator
def dct_64(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """Orthonormal DCT-II (INVERSE: its transpose, DCT-III) with the Q15 matrix."""
    matrix = dct_matrix().T if INVERSE.read(metadata) else dct_matrix()
    return _requantise(matrix @ _frame(inputs, DCT_POINTS), Q15 + SCALE.read(metadata))


@_accelerator
def correlation(inputs: np.ndarray, out_words: int, metadata: int) -> np.ndarray:
    """r[k] = sum_n x[n+k] y[n] for k = -(L-1) .. L-1, headed by its normalised peak.

    Word 0, max_k r[k] / sqrt(sum x^2 sum y^2) in Q15 (0 if either energy is 0), is the
    similarity a memory-read branch compares against a threshold register; word 1 is the
    lag of that peak (the most negative one on ties).
    """
    length = LEN.read(metadata) or DEFAULT_LEN
    frame = _frame(inputs, 2 * length)
    x, y = frame[:length], frame[length:]
    r = _wide_correlate(x, y, "full")
    peak = int(np.argmax(r))
    energy = int(_wide_correlate(x, x, "valid")[0]) * int(_wide_correlate(y, y, "valid")[0])
    rho = int(r[peak]) / math.sqrt(energy) if energy else 0.0
    head = [min(max(math.floor(rho * (1 << Q15) + 0.5), INT16_MIN), INT16_MAX), peak - (length - 1)]
    return np.concatenate([np.array(head, np.int32), _requantise(r, Q15 + SCALE.read(metadata))])


FUNCTIONS: dict[str, AcceleratorFunction] = {
    f.__name__: f for f in (
        real_fir, complex_fir, adaptive_fir, iir, vector_dot, vector_add, vector_max,
        fft_256, dct_64, correlation,
    )
}
