"""PNG charts beside the result tables (matplotlib, no display needed)."""

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.font_manager import FontProperties  # noqa: E402

from hts.base.output import atomic_path  # noqa: E402

__all__ = ["plot_compare", "plot_scaling", "plot_benchmarks", "plot_synth_sweep", "plot_synth_blocks", "plot_gantt",
           "gantt_figure", "plot_gap_study", "plot_decode_times", "plot_kill_matrix"]


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


def plot_synth_blocks(sites: dict[str, int], path: str | Path, title: str):
    """LUT4 sites by block (label -> sites) as horizontal bars, the largest on top."""
    labels, counts = zip(*sorted(sites.items(), key=lambda item: item[1]))
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * len(labels)))
    bars = ax.barh(labels, counts, color="#2060a0")
    ax.bar_label(bars, [f"{count:,}" for count in counts], padding=3, fontsize=8)
    ax.set_xlabel("LUT4 sites (LUT4 + 2 x CCU2C)")
    ax.margins(x=0.15)  # room for the label of the longest bar
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)


def plot_logic_levels(by_block: dict[str, dict[int, int]], path: str | Path, title: str):
    """Register inputs by the logic levels in front of them, stacked by block
    (block -> {levels: endpoints}), the blocks with the deepest endpoints on top."""
    depths = range(max(max(levels) for levels in by_block.values()) + 1)
    order = sorted(by_block, key=lambda block: (max(by_block[block]), sum(by_block[block].values())))
    colours = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bottom = [0] * len(depths)
    for index, block in enumerate(order):
        counts = [by_block[block].get(depth, 0) for depth in depths]
        # tab20's strong colours first, then its light ones: neighbours differ in hue.
        ax.bar(depths, counts, bottom=bottom, color=colours(2 * index % 20 + index // 10 % 2), label=block,
               width=0.8)
        bottom = [below + count for below, count in zip(bottom, counts)]
    ax.set_xticks(list(depths))
    ax.set_xlabel("logic levels in front of the register input (LUT4 or carry chain each)")
    ax.set_ylabel("register inputs")
    handles, labels = ax.get_legend_handles_labels()   # the deepest blocks first, as stacked on top
    ax.legend(handles[::-1], labels[::-1], fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    _save(fig, path)


# Bar labels of Gantt charts: their font size, and the room left between a label and
# each end of its bar, in points (so that neighbouring labels never touch).
GANTT_LABEL_FONTSIZE = 6
GANTT_LABEL_MARGIN_PT = 0.75
# The part of a row a Gantt bar takes; the font size of the caption under the chart.
_GANTT_BAR_HEIGHT = 0.6
_CAPTION_FONTSIZE = 7


def plot_gantt(slots: dict, makespan: int, path: str | Path, title: str, label_note: str | None = None):
    """Write a Gantt chart of a schedule as PNG (see :func:`gantt_figure`).

    Parameters
    ----------
    slots : dict
        Task name -> :class:`hts.models.schedulers.schedule.Slot`.
    makespan : int
        The schedule's length in cycles, drawn as a red line.
    path : str or Path
        The PNG to write (whole or not at all).
    title : str
        The chart's title.
    label_note : str, optional
        What the bar labels mean, printed under the chart.
    """
    _save(gantt_figure(slots, makespan, title, label_note), path)


def gantt_figure(slots: dict, makespan: int, title: str, label_note: str | None = None):
    """One row per PE (and location, when there are several), one bar per task, laid out.

    Parameters
    ----------
    slots, makespan, title, label_note
        As for :func:`plot_gantt`.

    Returns
    -------
    matplotlib.figure.Figure
        Each bar and its label carry the task's name as their ``gid``.

    Notes
    -----
    A bar is labelled with its task's name only where the name fits inside the bar at
    :data:`GANTT_LABEL_FONTSIZE`: short tasks are left unlabelled rather than smeared
    over their neighbours. Which ones fit is measured on the figure as laid out (at the
    resolution it is saved with, bars and text scale alike), so the caller must not
    change its size afterwards.
    """
    several_locations = len({slot.location for slot in slots.values()}) > 1

    def row_of(slot):
        return f"{slot.pe} @{slot.location}" if several_locations else slot.pe

    rows = sorted({row_of(slot) for slot in slots.values()})
    colours = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(9, 1.4 + 0.45 * len(rows)))
    order = sorted(slots, key=lambda task: slots[task].start)
    # One call for all bars: a call per bar took most of a minute for some thousand tasks.
    drawn = ax.barh([rows.index(row_of(slots[task])) for task in order],
                    [slots[task].finish - slots[task].start for task in order],
                    left=[slots[task].start for task in order], height=_GANTT_BAR_HEIGHT,
                    color=[colours(index % 20) for index in range(len(order))], edgecolor="black", linewidth=0.4)
    bars = dict(zip(order, drawn))
    for task, bar in bars.items():
        bar.set_gid(task)
    ax.axvline(makespan, color="#c04040", linewidth=1)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"cycles (makespan {makespan}, red line)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if label_note:
        _caption(ax, f"{label_note}. Bars too short for their label have none.")
    fig.tight_layout()              # the bars' final size, which decides which labels fit
    _label_bars_that_fit(ax, bars)
    return fig


def _caption(ax, text: str):
    """``text`` in small print under the x axis's label, from the left edge of the axes.

    An annotation of the axes, so that ``tight_layout`` leaves room for it; wrapped to
    the width the axes will have, or it would squeeze them instead.
    """
    # Characters of this size per line: some 0.55 em each, on the 85% of the width that
    # the axes take beside the row names.
    width_pt = ax.figure.get_figwidth() * 72 * 0.85
    text = textwrap.fill(text, int(width_pt / (0.55 * _CAPTION_FONTSIZE)))
    ax.annotate(text, xy=(0, 0), xycoords=("axes fraction", ax.xaxis.label), xytext=(0, -3),
                textcoords="offset points", ha="left", va="top", fontsize=_CAPTION_FONTSIZE, color="#404040")


def _label_bars_that_fit(ax, bars: dict):
    """Write each task's name centred in its bar if it fits there with its margins; else none.

    Bars of one row do not overlap, so labels kept inside their bars cannot overlap
    either; a label that would still touch one already written (overlapping bars in a
    malformed schedule) is dropped too.
    """
    renderer = ax.figure.canvas.get_renderer()
    margin_px = GANTT_LABEL_MARGIN_PT * ax.figure.dpi / 72
    font = FontProperties(size=GANTT_LABEL_FONTSIZE)
    written = []
    for task, bar in bars.items():
        room = bar.get_window_extent(renderer).padded(-margin_px)
        # The name's width alone rules out most short bars without making a text of it
        # (which took most of the time on thousands of tasks); the text itself decides.
        if renderer.get_text_width_height_descent(task, font, ismath=False)[0] > room.width:
            continue
        label = ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, task, ha="center",
                        va="center", fontproperties=font, color=_ink_on(bar.get_facecolor()), gid=task)
        extent = label.get_window_extent(renderer)
        if not _inside(extent, room) or any(extent.overlaps(other) for other in written):
            label.remove()
        else:
            written.append(extent)


def _ink_on(background) -> str:
    """Black or white, whichever reads better on ``background`` (RGBA): white on dark colours."""
    red, green, blue = background[:3]
    # Relative luminance (ITU-R BT.709 weights), on matplotlib's 0..1 channels.
    return "white" if 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.45 else "black"


def _inside(inner, outer) -> bool:
    """Whether the box ``inner`` lies within the box ``outer`` (display coordinates)."""
    return outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1


def plot_gap_study(bars: list[tuple[str, float]], path: str | Path, title: str):
    """Horizontal bars of optimal/scheduler ratios (1 = optimal), labelled with their value."""
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.32 * len(bars)))
    labels = [label for label, _ in bars]
    values = [value for _, value in bars]
    ax.barh(range(len(bars)), values, color="#2060a0")
    for y, value in enumerate(values):
        ax.text(value, y, f" {value:.3f}", va="center", fontsize=7)
    ax.set_yticks(range(len(bars)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="#c04040", linewidth=1)
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("optimal makespan / scheduler makespan (1 = optimal)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)


def plot_decode_times(decodes: dict[tuple[str, str], tuple[list[int], list[int]]], path: str | Path, title: str):
    """A column per program: decode cycle against task index (top), and cycles since the
    previous decode against the tasks in flight at the decode (bottom); a line per side.

    ``decodes`` maps (program, side) to the cycle of each decode, in order, and the tasks
    in flight at each. The RTL is drawn dashed over the model, so lines that agree show as one.
    """
    programs = list(dict.fromkeys(program for program, _ in decodes))
    fig, axes = plt.subplots(2, len(programs), figsize=(5 * len(programs), 7), squeeze=False)
    styles = {"model": {"marker": "o", "markersize": 3}, "RTL": {"linestyle": "--", "marker": "x", "markersize": 4}}
    for column, program in enumerate(programs):
        top, bottom = axes[0][column], axes[1][column]
        for (name, side), (cycles, in_flight) in decodes.items():
            if name == program:
                top.plot(range(len(cycles)), cycles, label=side, **styles.get(side, {}))
                bottom.plot(in_flight[1:], [b - a for a, b in zip(cycles, cycles[1:])], label=side,
                            **{**styles.get(side, {}), "linestyle": "none"})
        top.set_xlabel("task (decode order)")
        top.set_ylabel("decode cycle")
        top.set_title(program, fontsize=10)
        bottom.set_xlabel("tasks in flight at the decode")
        bottom.set_ylabel("cycles since the previous decode")
        bottom.set_yscale("log")
        for ax in (top, bottom):
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    _save(fig, path)


_VERDICT_COLOURS = {"caught": "#3a9a50", "missed": "#d04030", "error": "#e0a040", "n/a": "#d8d8d8", "-": "#f4f4f4"}


def plot_kill_matrix(rows: list[dict], checks: list[str], path: str | Path, title: str):
    """Mutants (rows) against checks (columns), each cell coloured by its verdict."""
    fig, ax = plt.subplots(figsize=(2.2 + 1.3 * len(checks), 0.9 + 0.28 * len(rows)))
    for y, row in enumerate(rows):
        for x, check in enumerate(checks):
            status = row["verdicts"][check]["status"]
            ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=_VERDICT_COLOURS[status], edgecolor="white"))
            ax.text(x + 0.5, y + 0.5, status, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(checks))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([x + 0.5 for x in range(len(checks))], checks, fontsize=8)
    ax.set_yticks([y + 0.5 for y in range(len(rows))], [row["name"] for row in rows], fontsize=7)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    killed = sum(row["killed"] for row in rows)
    ax.set_title(f"{title}: {killed} of {len(rows)} killed", fontsize=10)
    _save(fig, path)


def plot_timeline(trace: dict, path: str | Path, title: str):
    """A trace-event timeline (``hts.flows.timeline``) drawn as a viewer draws it: a row per
    thread that has events, grouped by process, slices as bars and instants as ticks."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    groups = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
              if e["ph"] == "M" and e["name"] == "process_name"}
    shown = [e for e in trace["traceEvents"] if e["ph"] in ("X", "i")]
    rows = sorted({(e["pid"], e["tid"]) for e in shown})
    colours = plt.get_cmap("tab10")
    classes = sorted({e["name"].split(" ")[0] for e in shown if e["ph"] == "X"})
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * len(rows)))
    for event in shown:
        y = rows.index((event["pid"], event["tid"]))
        if event["ph"] == "X":
            aborted = event["name"].endswith("(aborted)")
            ax.barh(y, event["dur"], left=event["ts"], height=0.6, edgecolor="black", linewidth=0.3,
                    color="#d0d0d0" if aborted else colours(classes.index(event["name"].split(" ")[0]) % 10),
                    hatch="//" if aborted else None)
        else:
            ax.plot([event["ts"]] * 2, [y - 0.3, y + 0.3], color="black", linewidth=0.6)
    ax.set_yticks(range(len(rows)), [f"{groups[pid]}: {names[pid, tid]}" for pid, tid in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("cycles (1 us on a trace viewer's axis)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)


def plot_explore(rows: list[dict], front: set[str], path: str | Path, title: str):
    """``hts explore``'s points: cycles against LUT4 sites per program, the Pareto front
    joined and labelled (``front`` holds its points' (label, program) pairs); without
    synthesis figures, cycles per point."""
    programs = sorted({row["program"] for row in rows})
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(8, 5))
    if all("lut_sites" in row for row in rows):
        for index, program in enumerate(programs):
            mine = sorted((row for row in rows if row["program"] == program), key=lambda row: row["lut_sites"])
            ax.scatter([r["lut_sites"] for r in mine], [r["cycles"] for r in mine], color=colours(index), s=18,
                       label=Path(program).name)
            edge = [row for row in mine if (row["point"], program) in front]
            ax.plot([r["lut_sites"] for r in edge], [r["cycles"] for r in edge], color=colours(index), linewidth=1)
            # Only the front is labelled, by its values alone (the key order is in the title),
            # alternately above and below: the points behind it are the ones nobody should build.
            for step, row in enumerate(edge):
                ax.annotate("/".join(part.partition("=")[2] for part in row["point"].split()),
                            (row["lut_sites"], row["cycles"]), fontsize=7, xytext=(4, 5 if step % 2 else -11),
                            textcoords="offset points", color=colours(index))
        keys = "/".join(part.partition("=")[0] for part in rows[0]["point"].split())
        title = f"{title}\nPareto fronts joined and labelled {keys}"
        ax.set_xlabel("LUT4 sites (hts synth, ECP5)")
        ax.legend(fontsize=7)
    else:
        labels = sorted({row["point"] for row in rows}, key=lambda label: [r["point"] for r in rows].index(label))
        width = 0.8 / len(programs)
        for index, program in enumerate(programs):
            cycles = {row["point"]: row["cycles"] for row in rows if row["program"] == program}
            ax.bar([k + index * width for k in range(len(labels))], [cycles.get(label, 0) for label in labels],
                   width, color=colours(index), label=program)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(labels))], labels, rotation=45, ha="right", fontsize=7)
        ax.legend(fontsize=7)
    ax.set_ylabel("cycles (cycle model)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    _save(fig, path)
