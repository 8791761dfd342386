"""PNG charts beside the result tables (matplotlib, no display needed)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from .output import atomic_path  # noqa: E402

__all__ = ["plot_compare", "plot_scaling", "plot_benchmarks", "plot_synth_sweep"]


def _save(fig, path: str | Path):
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def plot_compare(rows: list[dict], path: str | Path, title: str):
    names = [row["scheduler"] for row in rows]
    cycles = [row["cycles"] for row in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    bars = ax.bar(names, cycles, color=["#b0b0b0", "#e0a040", "#60a0d0", "#2060a0", "#90c090"][: len(rows)])
    for bar, row in zip(bars, rows):
        ax.annotate(f"{row['speedup_vs_naive']:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("cycles")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    _save(fig, path)


def plot_scaling(rows: list[dict], path: str | Path, title: str):
    fig, ax = plt.subplots(figsize=(7, 4))
    for bands in sorted({row["bands"] for row in rows}):
        points = sorted((row["instances"], row["cycles"]) for row in rows if row["bands"] == bands)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{bands} bands")
    ax.set_xlabel("accelerator instances per function")
    ax.set_ylabel("cycles")
    ax.set_title(title, fontsize=10)
    ax.legend()
    ax.grid(alpha=0.3)
    _save(fig, path)


def plot_benchmarks(rows: list[dict], path: str | Path, title: str):
    schedulers = ("naive", "runtime", "hts-nospec", "hts")
    colours = ("#b0b0b0", "#e0a040", "#60a0d0", "#2060a0")
    width = 0.2
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for offset, (scheduler, colour) in enumerate(zip(schedulers, colours)):
        heights = [row[scheduler] / row["naive"] for row in rows]
        ax.bar([i + (offset - 1.5) * width for i in range(len(rows))], heights, width, label=scheduler,
               color=colour)
    ax.set_xticks(range(len(rows)), [row["benchmark"].replace("_", "\n", 1) for row in rows], fontsize=7)
    ax.set_ylabel("cycles / naive cycles")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    _save(fig, path)


def plot_synth_sweep(rows: list[dict], key: str, path: str | Path, title: str):
    """LUT4 sites and Fmax of synthesis runs against the swept configuration value ``key``."""
    sizes = [row["value"] for row in rows]
    fig, (luts, fmax) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    luts.plot(sizes, [row["lut_sites"] for row in rows], marker="o", label="LUT4 sites (LUT4 + 2 x CCU2C)")
    luts.plot(sizes, [row["luts"] for row in rows], marker="s", label="LUT4 cells")
    luts.set_ylabel("LUT4s")
    luts.legend(fontsize=8)
    fmax.plot(sizes, [row["fmax_mhz"] for row in rows], marker="o", color="#c04040")
    fmax.set_ylabel("Fmax (MHz)")
    fmax.set_xlabel(key)
    fmax.set_xscale("log", base=2)
    fmax.set_xticks(sizes, [str(size) for size in sizes])
    fmax.minorticks_off()
    luts.set_title(title, fontsize=10)
    for ax in (luts, fmax):
        ax.grid(alpha=0.3)
    _save(fig, path)
