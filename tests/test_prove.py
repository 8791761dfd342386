"""Formal proofs of the RTL blocks (``hts prove``): they pass, their covers are reached,
and taking away an assumption they need makes them fail."""

import json
import time
from types import SimpleNamespace

import pytest

from hts.base.errors import HTSError
from hts.cli import main
from hts.flows.prove import BLOCKS, CONFIGS, harness_class, prove_group, resolve_config, tools_missing
from hts.formal.memory_tracker import MemoryTrackerHarness
from hts.hdl.mutation import injected

pytestmark = [pytest.mark.formal,
              pytest.mark.skipif(tools_missing() is not None, reason=f"formal tools missing: {tools_missing()}")]

# Each takes 3 to 30 s on a 2-core machine (the ready lists and the GPR bank's bounded
# check on small the longest); the CDB on tiny (ten tickets) about 12 s, tiny's GPR bank
# 52 s, the branch unit's squash (a 28-cycle base case) 12 s, the retire bound 18 s and
# the pipeline's records on small one to two minutes, so they and the rest of the second
# configuration run with -m slow.
QUICK = [("small", "ready_lists", "lists"), ("small", "wakeup", "walk"),
         ("small", "memory_tracker", "tags"),
         ("small", "tlb", "age_order"), ("small", "tlb", "picks"), ("small", "tlb", "copy_back"),
         ("small", "tlb", "squash"), ("small", "enqueue", "squash"),
         ("small", "asr", "status"), ("small", "cdb", "grants"), ("small", "cdb", "latency"),
         ("small", "dispatch", "dispatch"), ("small", "gpr", "reads")]
EVERY = [(config, block, group.name) for config in CONFIGS for block in BLOCKS
         for group in harness_class(block).GROUPS if group.runs_on(resolve_config(config))]


def _assert_proved(config, block, group):
    result = prove_group(resolve_config(config), config, block, group, timeout_s=300)
    assert result.ok, (result.result, result.failed, result.log_tail)
    assert result.covers_total >= 1


@pytest.mark.parametrize("config, block, group", QUICK)
def test_quick_proofs_pass(config, block, group):
    _assert_proved(config, block, group)


@pytest.mark.slow
@pytest.mark.parametrize("config, block, group", [case for case in EVERY if case not in QUICK])
def test_every_other_proof_passes(config, block, group):
    _assert_proved(config, block, group)


@pytest.mark.parametrize("config, block, group, dropped, caught", [
    # An offer holding another class's record names that class in its trace slot: two
    # grants name one instance.
    ("small", "dispatch", "dispatch", "offers_of_their_class", "assert trace_slots_distinct_instances"),
    # Decode allocating with every tag in flight takes tag 0 a second time.
    ("small", "memory_tracker", "tags", "alloc_needs_free_tag", "assert never_allocated_twice"),
    # A task woken again as its entry leaves joins its list anew, and its tag is not held.
    ("small", "ready_lists", "lists", "woken_not_listed", "assert a_tag_is_listed_once"),
    # A producer broadcast in its entry's allocation cycle leaves a young entry done.
    ("small", "tlb", "copy_back", "new_producer_not_released", "assert young_entry_not_done"),
    # A task that starts reading the home chosen for a retarget is there when it is offered.
    ("small", "tlb", "copy_back", "retarget_choice_gains_no_access",
     "assert retarget_offer_touched_only_by_its_producer"),
    # A search started on a tag whose list is still being walked appends to a walked list.
    ("small", "wakeup", "walk", "starts_as_decode_would", "assert only_released_lists_are_walked"),
    # A task decoded under the ID squashed in its cycle is held the cycle after.
    ("small", "enqueue", "squash", "arrival_not_squashed", "assert nothing_held_under_a_squashed_id"),
    # A branch decoded under the ID squashed in its cycle stays in its slot.
    ("small", "branch_unit", "squash", "alloc_mask_not_squashed", "assert no_slot_left_under_a_squashed_id"),
    # A drained process that allocates a tag again has a tag in flight while watched.
    ("small", "retire", "bound", "drained_process_allocates_nothing", "assert process_1_no_tag_in_flight"),
    # A slot turning live without a checkpoint holds whatever it held: its restore reads
    # RAM words written since.
    ("small", "gpr", "reads", "live_after_checkpoint", "assert every_port_reads_its_register"),
])
def test_a_proof_fails_without_its_assumption(tmp_path, config, block, group, dropped, caught):
    result = prove_group(resolve_config(config), config, block, group, drop={dropped}, timeout_s=300,
                         keep_trace_in=tmp_path)
    assert result.result == "FAIL"
    assert caught in result.failed
    assert result.trace and result.trace.endswith(".vcd")


# A mutant of hdl/mutation.py that each new property group must catch, with a
# counterexample from reset.
CAUGHT_MUTANTS = [
    ("small", "ready_lists", "lists", "lists_woken_lost", "assert counts_are_the_rings"),
    ("small", "ready_lists", "lists", "lists_woken_first", "assert offers_the_oldest"),
    ("small", "ready_lists", "lists", "lists_offer_dead", "assert offers_only_live_heads"),
    ("small", "ready_lists", "lists", "lists_release_listed", "assert held_is_the_listed_tags"),
    ("small", "tlb", "copy_back", "copyback_ignores_touches", "assert copy_offer_untouched"),
    ("small", "wakeup", "walk", "pending_count_underflows", "assert no_count_underflows"),
    ("small", "cdb", "latency", "cdb_priority_inverted", "assert matrix_is_the_ticket_order"),
    ("small", "branch_unit", "squash", "branch_squash_spares_nested", "assert no_slot_left_under_a_squashed_id"),
    ("small", "branch_unit", "squash", "branch_confirm_lost", "assert ids_in_use_are_held_or_squashed"),
    # A shell under the squashed ID keeps running (the harness wires aborts with the top
    # level's own connect_completion, where this mutant lives).
    ("small", "pipeline", "squash", "abort_lost", "assert no_busy_shell_under_a_squashed_id"),
    # A confirmed ID's set of queued tags keeps them (hdl/hts.py's queued_tag_sets, which
    # the harness calls): a task appended under the ID as it is confirmed stays under it.
    ("small", "pipeline", "records", "queued_sets_keep_confirmed", "assert queued_sets_are_the_waiting_tasks"),
    # A squashed task's dead entry is offered and dispatched: a record from nothing.
    ("small", "pipeline", "records", "lists_offer_dead", "assert record_count_changes_only_by_arrivals_and_releases"),
    ("small", "pipeline", "records", "dispatch_ignores_busy", "assert record_count_changes_only_by_arrivals_and_releases"),
    ("small", "pipeline", "records", "asr_release_lost", "assert asr_busy_is_shells_busy_or_broadcasting"),
    ("small", "gpr", "reads", "gpr_write_over_checkpoint", "assert every_port_reads_its_register"),
    ("small", "gpr", "reads", "gpr_restore_lost", "assert every_port_reads_its_register"),
]


def _assert_caught(tmp_path, config, block, group, mutant, caught):
    with injected(mutant):
        result = prove_group(resolve_config(config), config, block, group, timeout_s=300, keep_trace_in=tmp_path)
    assert result.result == "FAIL", (result.result, result.failed, result.log_tail)
    assert caught in result.failed
    assert result.trace and result.trace.endswith(".vcd")


@pytest.mark.parametrize("config, block, group, mutant, caught", CAUGHT_MUTANTS)
def test_a_new_proof_catches_its_mutant(tmp_path, config, block, group, mutant, caught):
    _assert_caught(tmp_path, config, block, group, mutant, caught)


def test_an_unknown_assumption_is_refused():
    with pytest.raises(ValueError, match="alloc_needs_free_tag"):
        MemoryTrackerHarness(resolve_config("tiny"), "tags", drop={"no_such_thing"})


def test_cli_prints_a_table_and_json(capsys):
    assert main(["prove", "-c", "small", "--block", "asr"]) == 0
    table = capsys.readouterr().out
    assert "asr" in table and "PASS" in table and "2/2" in table
    assert main(["prove", "-c", "tiny", "-c", "small", "--block", "asr", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(row["config"] for row in rows) == ["small", "tiny"]
    assert all(row["result"] == "PASS" and row["ok"] and row["mode"] == "prove" for row in rows)


def test_cli_names_the_blocks_for_an_unknown_one(capsys):
    assert main(["prove", "--block", "nope"]) == 1
    error = capsys.readouterr().err
    assert "'nope'" in error and all(block in error for block in BLOCKS)


def test_unknown_block_is_an_error():
    with pytest.raises(HTSError, match="dispatch"):
        harness_class("decode")


def test_a_long_proof_says_that_it_still_runs(monkeypatch):
    """A group may take up to its timeout in silence; its lines stop when it ends (here every
    50 ms, the proof a sleep)."""
    from hts.base import progress
    from hts.flows import prove as prove_flow
    monkeypatch.setattr(progress, "INTERVAL_S", 0.05)

    def slow_group(config, config_name, block, group_name, **_):
        time.sleep(0.6)
        return SimpleNamespace(result="PASS", seconds=0.6, covers_reached=1, covers_total=1)

    monkeypatch.setattr(prove_flow, "prove_group", slow_group)
    lines = []
    prove_flow.prove(["tiny"], ["asr"], progress=lines.append)
    assert lines[0].endswith("tiny: asr status (prove, depth 2)") and lines[-1].endswith("PASS in 0.6 s, covers 1/1")
    beats = lines[1:-1]
    assert len(beats) >= 3 and all(line.endswith("so far") and "tiny: asr status: still running, " in line
                                   for line in beats)
