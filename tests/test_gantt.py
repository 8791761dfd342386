"""Gantt charts (``hts compare``'s FILE_gantt_SCHEDULER.png): a bar's label is drawn only
where it fits inside the bar, so that short tasks never smear their names over each other;
a caption says what the labels are. Measured with matplotlib's renderer at the saved
resolution."""

import random
from itertools import combinations

import matplotlib.pyplot as plt
import pytest

from hts.flows.plots import gantt_figure, plot_gantt
from hts.models.schedulers.schedule import Slot

NOTE = "Labels pid.pc: process and word index of the instruction"


def many_short_tasks() -> tuple[dict[str, Slot], int]:
    """Three PEs, each running back to back a few long tasks among many of 1 to 40 cycles
    (named like a loop's runs, ``0.14'12``), over some 3,000 cycles."""
    rng = random.Random(4)
    slots, runs = {}, 0
    for pe in ("real_fir#0", "real_fir#1", "vector_add#0"):
        now = 0
        while now < 3000:
            length = rng.choice([400, 600]) if rng.random() < 0.05 else rng.randint(1, 40)
            slots[f"0.{14 + runs % 3}'{runs}"] = Slot(pe, 0, now, now + length)
            runs += 1
            now += length + rng.choice([0, 0, 3])
    return slots, max(slot.finish for slot in slots.values())


def drawn(fig) -> tuple[dict, dict]:
    """(task -> bar's box, task -> label's box) in pixels, as the chart is saved (120 dpi)."""
    fig.set_dpi(120)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    [ax] = fig.axes
    bars = {patch.get_gid(): patch.get_window_extent(renderer) for patch in ax.patches if patch.get_gid()}
    labels = {text.get_gid(): text.get_window_extent(renderer) for text in ax.texts if text.get_gid() in bars}
    return bars, labels


@pytest.fixture
def chart():
    slots, makespan = many_short_tasks()
    fig = gantt_figure(slots, makespan, "many short tasks", NOTE)
    fig.tight_layout()          # as plot_gantt saves it
    yield slots, fig
    plt.close(fig)


def test_no_two_labels_overlap_and_each_lies_inside_its_bar(chart):
    slots, fig = chart
    bars, labels = drawn(fig)
    assert len(bars) == len(slots) > 200
    assert 0 < len(labels) < len(slots) / 2          # the long tasks are named, most short ones not
    for (task, label), (other, other_label) in combinations(labels.items(), 2):
        assert not label.overlaps(other_label), (task, other)
    for task, label in labels.items():
        bar = bars[task]
        assert bar.x0 < label.x0 and label.x1 < bar.x1 and bar.y0 < label.y0 and label.y1 < bar.y1, task
    assert all(slots[task].finish - slots[task].start >= 10 for task in labels)


def test_the_long_tasks_are_named():
    slots, makespan = many_short_tasks()
    fig = gantt_figure(slots, makespan, "many short tasks", NOTE)
    _, labels = drawn(fig)
    plt.close(fig)
    long_tasks = {task for task, slot in slots.items() if slot.finish - slot.start >= 400}
    assert long_tasks and long_tasks <= set(labels)


def test_the_caption_says_what_the_labels_are(chart):
    _, fig = chart
    [ax] = fig.axes
    captions = [text.get_text() for text in ax.texts if text.get_gid() is None]
    assert len(captions) == 1 and captions[0].replace("\n", " ").startswith(NOTE)
    assert "too short for their label" in captions[0].replace("\n", " ")


def test_the_chart_is_written_as_a_png(tmp_path):
    slots, makespan = many_short_tasks()
    plot_gantt(slots, makespan, tmp_path / "gantt.png", "many short tasks", NOTE)
    assert (tmp_path / "gantt.png").read_bytes()[:4] == b"\x89PNG"
