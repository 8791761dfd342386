"""The cycle budget of the tracker's rows (``hts.flows.cycle_budget``): it holds, and it can fail."""

import pytest

from hts.flows import cycle_budget
from hts.flows.cycle_budget import BUDGET, REFERENCE, budget_rows, markdown_table, within_budget


def test_every_benchmark_is_within_its_budget_and_memory_equals_in_order_execution(capsys):
    assert cycle_budget.main([]) == 0
    table = capsys.readouterr().out
    assert all(table.count(f"\n| {preset} |") == 11 for preset in ("default", "large", "tiny", "inflight128"))
    assert "**over**" not in table


def test_a_benchmark_over_its_budget_fails_the_flow(monkeypatch, capsys):
    # The reference a tenth lower: every default benchmark is then some 11% over.
    lower = {preset: {name: int(cycles * 0.9) for name, cycles in row.items()} for preset, row in REFERENCE.items()}
    monkeypatch.setattr(cycle_budget, "REFERENCE", lower)
    assert cycle_budget.main(["-c", "default"]) == 1
    assert capsys.readouterr().out.count("**over**") == 11


def test_tiny_and_inflight128_are_reported_not_budgeted():
    assert "tiny" not in BUDGET and "inflight128" not in BUDGET
    row = {"preset": "tiny", "benchmark": "b", "before": 100, "now": 200, "change": 1.0, "budget": None,
           "naive_over_hts_before": 2.0, "naive_over_hts_now": 1.0}
    assert within_budget(row) and "| reported |" in markdown_table([row])


def test_the_rows_give_the_speed_up_over_naive_before_and_now():
    """One naive run divided by each: the two speed-ups stand as the cycles do, inversely."""
    rows = budget_rows(["tiny"], progress=lambda message: None)
    for row in rows:
        assert row["naive_over_hts_before"] * row["before"] == pytest.approx(row["naive_over_hts_now"] * row["now"])
        assert (row["naive_over_hts_now"] > row["naive_over_hts_before"]) == (row["now"] < row["before"])
