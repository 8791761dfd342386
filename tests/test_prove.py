"""Formal proofs of the RTL blocks (``hts prove``): they pass, their covers are reached,
and taking away an assumption they need makes them fail."""

import json

import pytest

from hts.cli import main
from hts.errors import HTSError
from hts.formal.memory_tracker import MemoryTrackerHarness
from hts.prove import BLOCKS, CONFIGS, harness_class, prove_group, resolve_config, tools_missing

pytestmark = pytest.mark.skipif(tools_missing() is not None, reason=f"formal tools missing: {tools_missing()}")

# Each takes 3 to 5 s on a 2-core machine; the CDB on tiny (ten tickets) about 12 s, so
# it and the rest of the second configuration run with -m slow.
QUICK = [("small", "window", "age_order"), ("small", "reservation_station", "age_order"),
         ("small", "memory_tracker", "age_order"), ("small", "memory_tracker", "tags"),
         ("small", "tlb", "age_order"), ("small", "tlb", "picks"), ("small", "asr", "status"),
         ("small", "cdb", "grants"), ("small", "dispatch", "dispatch")]
EVERY = [(config, block, group.name) for config in CONFIGS for block in BLOCKS
         for group in harness_class(block).GROUPS]


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
    # Two offers with one tag both take rank 0: more grants than dispatch ways, merged slots.
    ("small", "dispatch", "dispatch", "offer_tags_distinct", "assert trace_slots_one_per_grant"),
    # Tiny's one tag marked older than itself has rank 1: nothing is granted.
    ("tiny", "dispatch", "dispatch", "tracker_age_is_total_order", "assert grants_as_many_as_it_may"),
    # Decode allocating with every tag in flight takes tag 0 a second time.
    ("small", "memory_tracker", "tags", "alloc_needs_free_tag", "assert never_allocated_twice"),
])
def test_a_proof_fails_without_its_assumption(tmp_path, config, block, group, dropped, caught):
    result = prove_group(resolve_config(config), config, block, group, drop={dropped}, timeout_s=300,
                         keep_trace_in=tmp_path)
    assert result.result == "FAIL"
    assert caught in result.failed
    assert result.trace and result.trace.endswith(".vcd")


def test_an_unknown_assumption_is_refused():
    with pytest.raises(ValueError, match="alloc_needs_free_tag"):
        MemoryTrackerHarness(resolve_config("tiny"), "tags", drop={"no_such_thing"})


def test_cli_prints_a_table_and_json(capsys):
    assert main(["prove", "-c", "small", "--block", "asr"]) == 0
    table = capsys.readouterr().out
    assert "asr" in table and "PASS" in table and "2/2" in table
    assert main(["prove", "-c", "tiny", "--block", "asr", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["result"] == "PASS" and row["ok"] and row["mode"] == "prove"


def test_cli_names_the_blocks_for_an_unknown_one(capsys):
    assert main(["prove", "--block", "nope"]) == 1
    error = capsys.readouterr().err
    assert "'nope'" in error and all(block in error for block in BLOCKS)


def test_unknown_block_is_an_error():
    with pytest.raises(HTSError, match="dispatch"):
        harness_class("decode")
