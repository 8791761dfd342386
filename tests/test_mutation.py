"""The RTL mutant catalogue (hts.hdl.mutation) and ``hts mutate``.

Every mutant must be caught: here each runs against the cheapest test that catches it
(``KILLERS``, found by ``hts mutate``), in this process through pytester; ``hts mutate``
runs every check on request (docs/verification.md).
"""

import gc
import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy  # noqa: F401  (C extensions load once per process: import them before pytester's inline runs)
import pytest

import hts.cosim.progen  # noqa: F401
import hts.cosim.scoreboard  # noqa: F401  (numpy, ortools and the models, for the same reason)
from hts.flows.mutate import changes_design
from hts.flows.prove import resolve_config
from hts.hdl.mutation import CATALOGUE, ENVIRONMENT, active, injected, mutable

pytestmark = pytest.mark.formal

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent

# The first test, cheapest first, that catches each mutant (``hts mutate`` prints it).
KILLERS = {
    "overlap_touching_ends": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "tracker_raw_ignored": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "tracker_war_ignored": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "tracker_waw_ignored": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "tracker_branch_writers_ignored": "hdl/test_rtl_hts.py::test_benchmark_trace_equals_the_model[tiny-branch_taken_dependency]",
    "tracker_broadcast_kept": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "tracker_lane_skips_entry": "hdl/test_rtl_memory_tracker.py::test_a_search_compares_one_row_of_lanes_a_cycle[0-3]",
    "search_skips_a_row": "hdl/test_rtl_memory_tracker.py::test_a_search_compares_one_row_of_lanes_a_cycle[0-3]",
    "enqueue_waits_on_itself": "hdl/test_rtl_enqueue.py::test_enqueue_stage_matches_the_model[0-default]",
    "successor_list_drops_waiter": "hdl/test_rtl_wakeup.py::test_wakeup_matches_the_model[0-default]",
    "pending_count_underflows": "hdl/test_rtl_wakeup.py::test_wakeup_matches_the_model[0-default]",
    "walk_stops_early": "hdl/test_rtl_wakeup.py::test_wakeup_matches_the_model[0-default]",
    "tag_reused_while_held": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "lists_woken_lost": "hdl/test_rtl_ready_lists.py::test_ready_lists_match_the_model[0-default]",
    "lists_woken_first": "hdl/test_rtl_ready_lists.py::test_ready_lists_match_the_model[0-default]",
    "lists_offer_dead": "hdl/test_rtl_ready_lists.py::test_ready_lists_match_the_model[0-default]",
    "lists_release_listed": "hdl/test_rtl_ready_lists.py::test_ready_lists_match_the_model[0-default]",
    "dispatch_grants_highest_class": "hdl/test_rtl_dispatch.py::test_dispatch_matches_model[0-default]",
    "dispatch_ignores_busy": "hdl/test_rtl_dispatch.py::test_dispatch_matches_model[0-default]",
    "asr_highest_free": "hdl/test_rtl_asr.py::test_asr_matches_model[0-default]",
    "asr_release_lost": "hdl/test_rtl_asr.py::test_asr_matches_model[0-default]",
    "cdb_priority_inverted": "hdl/test_rtl_cdb.py::test_cdb_matches_model[0-default]",
    "cdb_width_plus_one": "hdl/test_rtl_cdb.py::test_cdb_matches_model[0-default]",
    "branch_compare_inverted": "hdl/test_rtl_branch_unit.py::test_branch_unit_matches_model[default-0-1500]",
    "branch_confirm_lost": "hdl/test_rtl_branch_unit.py::test_branch_unit_matches_model[default-0-1500]",
    "branch_squash_spares_nested": "hdl/test_rtl_branch_unit.py::test_branch_unit_matches_model[default-0-1500]",
    "retarget_skips_readers": "hdl/test_rtl_memory_tracker.py::test_tracker_matches_model[0-one_row]",
    "copyback_ignores_touches": "hdl/test_rtl_tlb.py::test_tlb_matches_model[0-default]",
    "tlb_oldest_hit": "hdl/test_rtl_tlb.py::test_tlb_matches_model[0-default]",
    "tlb_wrap_ignored": "hdl/test_rtl_tlb.py::test_tlb_matches_model[0-default]",
    "decode_indirect_ignored": "hdl/test_rtl_decode.py::test_decode_runs_programs_in_order[0]",
    "loop_count_off_by_one": "hdl/test_rtl_decode.py::test_decode_runs_programs_in_order[1]",
    "gpr_restore_lost": "hdl/test_rtl_gpr.py::test_gpr_bank_matches_model[0-default]",
    "gpr_write_over_checkpoint": "hdl/test_rtl_gpr.py::test_gpr_bank_matches_model[0-default]",
    "loop_stack_restore_lost": "hdl/test_rtl_loop_stack.py::test_loop_stack_matches_model[0-default]",
    "latency_one_late": "hdl/test_rtl_accelerator.py::test_shell_timing_matches_model[0-default]",
    "abort_lost": "hdl/test_rtl_hts.py::test_benchmark_trace_equals_the_model[tiny-branch_taken_dependency]",
    "queued_sets_keep_confirmed":
        "hdl/test_rtl_hts.py::test_benchmark_trace_equals_the_model[default-audio_compression]",
}


def test_every_mutant_has_one_hook_in_the_rtl_and_every_hook_is_catalogued():
    hooks = []
    for item in resources.files("hts.hdl").iterdir():
        if item.name.endswith(".py") and item.name != "mutation.py":
            hooks += re.findall(r'mutable\(\s*"(\w+)"', item.read_text())
    assert sorted(hooks) == sorted(CATALOGUE)


def test_the_catalogue_is_large_and_spans_the_blocks():
    assert len(CATALOGUE) >= 25
    blocks = {mutant.block for mutant in CATALOGUE.values()}
    assert {"memory_tracker", "tlb", "ready_lists", "dispatch", "asr", "cdb", "branch_unit",
            "decode", "enqueue", "gpr", "loop_stack", "accelerator", "hts"} <= blocks


def test_no_mutant_is_active_by_default_and_injected_restores_the_environment(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert active() is None and mutable("cdb_width_plus_one", "right", "wrong") == "right"
    with injected("cdb_width_plus_one"):
        assert mutable("cdb_width_plus_one", "right", "wrong") == "wrong"
        assert mutable("asr_release_lost", "right", "wrong") == "right"
    assert active() is None


def test_an_unknown_mutant_name_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "no_such_bug")
    with pytest.raises(ValueError, match=f"{ENVIRONMENT}='no_such_bug' names no mutant"):
        active()
    with pytest.raises(KeyError, match="not in the catalogue"):
        mutable("no_such_bug", 0, 1)


def test_a_mutant_that_leaves_its_block_as_it_was_is_reported(default_config):
    """``hts mutate`` marks a mutant whose hook the configuration never reaches n/a."""
    assert changes_design(CATALOGUE["dispatch_grants_highest_class"], default_config, {})
    two_wide = resolve_config("small")      # dispatch_width 2: the one-way pick is not built
    assert not changes_design(CATALOGUE["dispatch_grants_highest_class"], two_wide, {})


@pytest.mark.parametrize("name", CATALOGUE)
def test_every_mutant_is_caught_by_its_cheapest_check(pytester, name):
    """The killer runs in the default suite without the mutant too, where it passes."""
    # An earlier killer that stopped a whole-scheduler simulation midway leaves its bench
    # coroutine suspended; finalized by the collector while pytest parses source for this
    # run's report, it broke that parse (CPython's "AST constructor recursion depth
    # mismatch"). Collect it here instead.
    gc.collect()
    with injected(name):
        run = pytester.inline_run(str(TESTS / KILLERS[name]), "-p", "no:cacheprovider", "-q")
    calls = [report for report in run.getreports("pytest_runtest_logreport") if report.when == "call"]
    assert len(calls) == 1, f"{KILLERS[name]} did not run: {run.getfailures()}"
    assert calls[0].failed, f"{name} ({CATALOGUE[name].bug}) survives {KILLERS[name]}"


def _hts(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hts", *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_cli_mutate_prints_the_kill_matrix_and_writes_json_and_png(tmp_path):
    result = _hts("mutate", "--mutant", "cdb_width_plus_one", "--check", "block", "--json", str(tmp_path / "m.json"),
                  "--plot", str(tmp_path / "m.png"), "--tests", str(TESTS))
    assert result.returncode == 0, result.stderr
    assert "| cdb_width_plus_one | cdb | caught | yes |" in result.stdout
    row = json.loads((tmp_path / "m.json").read_text())["rows"][0]
    assert row["killed"] and row["changes_design"]
    assert row["verdicts"]["block"]["detail"].startswith("tests/hdl/test_rtl_cdb.py::")
    assert (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_mutate_exits_non_zero_when_a_mutant_survives(tmp_path):
    """Against a block test that asserts nothing the mutant is missed, and the command says so."""
    (tmp_path / "tests" / "hdl").mkdir(parents=True)
    (tmp_path / "tests" / "hdl" / "test_rtl_cdb.py").write_text("def test_nothing():\n    pass\n")
    result = _hts("mutate", "--mutant", "cdb_width_plus_one", "--check", "block", "--tests", str(tmp_path / "tests"))
    assert result.returncode == 1
    assert "| cdb_width_plus_one | cdb | missed | NO |" in result.stdout
    assert "0 of 1 mutants killed" in result.stdout


def test_cli_mutate_refuses_an_unknown_mutant():
    result = _hts("mutate", "--mutant", "no_such_bug", "--check", "block")
    assert result.returncode != 0
    assert "unknown mutant 'no_such_bug'" in result.stderr
