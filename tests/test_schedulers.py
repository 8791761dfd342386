"""Reference schedulers against published schedules, against each other and against the HTS."""

import collections
import json
import random
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import example, given, settings, strategies as st

from hts import benchmarks
from hts.assembler import assemble
from hts.cosim.progen import random_config, random_programs
from hts.models.graphs import (
    build_graph, case_study, erdos_renyi, graph_program, layer_by_layer, lu, program_graph, topcuoglu, uniform_dag,
    write_graphml,
)
from hts.models.memory import initial_memory
from hts.models.schedulers.bounds import critical_path, lower_bound, sequential_time
from hts.models.schedulers.cycle_model import naive_schedule, run_graph, trace_schedule
from hts.models.schedulers.heft import downward_ranks, earliest_start, heft, upward_ranks
from hts.models.schedulers.machine import (
    Machine, ProcessingElement, case_study_machine, distributed_machine, reconfigurable_machine, static_machine,
)
from hts.models.schedulers.metrics import metrics, slack
from hts.models.schedulers.optimal import optimal
from hts.models.schedulers.reft import reft
from hts.models.schedulers.schedule import Slot, instances, offline_schedule, violations
from hts.models.schedulers.study import layer_study, layer_summary
from hts.models.simulate import simulate

SMALL = settings(max_examples=15)


# ---- seed 004's case study -------------------------------------------------------------------

@pytest.mark.parametrize("partial, makespan", [(True, 410), (False, 510)])
def test_case_study_makespans(partial, makespan):
    graph, machine = case_study(), case_study_machine(partial)
    for schedule in (reft(graph, machine), optimal(graph, machine)):
        assert schedule.makespan == makespan, schedule.scheduler
        assert violations(graph, machine, schedule) == []
    assert optimal(graph, machine).proven_optimal


def test_case_study_reconfigures_as_the_seed_describes():
    """M_R loads {p2} once task 4 is done (Figure 3.13b); M_PR reloads p0's slot with p2
    10 cycles after v2, while p1 runs on in the other slot."""
    graph = case_study()
    partial, whole = case_study_machine(True), case_study_machine(False)
    loads = instances(whole, reft(graph, whole).slots)
    assert [(i.configuration, i.begin, i.end) for i in loads] == [(0, 0, 300), (1, 310, 510)]
    slot_loads = instances(partial, reft(graph, partial).slots)
    assert sorted((i.location, i.configuration, i.begin, i.end) for i in slot_loads) == [
        (0, 0, 0, 200), (0, 2, 210, 410), (1, 1, 100, 300)]


# ---- Topcuoglu et al. 2002 -------------------------------------------------------------------

# The paper's Table: upward ranks of n1..n10 (rounded to three decimals there).
PUBLISHED_RANKS = {"n1": Fraction(108), "n2": Fraction(77), "n3": Fraction(80), "n4": Fraction(80),
                   "n5": Fraction(69), "n6": Fraction(190, 3), "n7": Fraction(128, 3), "n8": Fraction(107, 3),
                   "n9": Fraction(133, 3), "n10": Fraction(44, 3)}


def test_heft_on_topcuoglu_example():
    graph, machine = topcuoglu(), distributed_machine(("p1", "p2", "p3"))
    assert upward_ranks(graph, machine) == PUBLISHED_RANKS
    schedule = heft(graph, machine)
    assert schedule.makespan == 80
    assert violations(graph, machine, schedule) == []
    # Figure 3 of the paper: where each task runs and when it starts.
    assert {task: (slot.pe, slot.start) for task, slot in schedule.slots.items()} == {
        "n1": ("p3", 0), "n2": ("p1", 27), "n3": ("p3", 9), "n4": ("p2", 18), "n5": ("p3", 28),
        "n6": ("p2", 26), "n7": ("p3", 38), "n8": ("p1", 57), "n9": ("p2", 56), "n10": ("p2", 73)}
    best = optimal(graph, machine)
    assert best.proven_optimal and best.makespan <= 80 and violations(graph, machine, best) == []


def test_downward_ranks_and_metrics():
    graph, machine = topcuoglu(), distributed_machine(("p1", "p2", "p3"))
    assert downward_ranks(graph, machine)["n1"] == 0
    assert downward_ranks(graph, machine)["n2"] == 13 + 18          # mean cost of n1 + comm
    schedule = heft(graph, machine)
    assert sequential_time(graph) == 91
    numbers = metrics(graph, machine, schedule)
    assert numbers["makespan"] == 80 and numbers["speedup"] == round(91 / 80, 4)
    assert numbers["slr"] == round(80 / critical_path(graph), 4) and numbers["efficiency"] == round(91 / 240, 4)


def test_slack_is_zero_on_a_chain():
    chain = build_graph("chain", [(f"t{i}", "a", {"a": 10}) for i in range(4)],
                        [(f"t{i}", f"t{i + 1}", 0) for i in range(3)])
    machine = static_machine({"a": 2})
    assert slack(chain, heft(chain, machine)) == 0
    fork = build_graph("fork", [("x", "a", {"a": 10}), ("y", "a", {"a": 30})])
    assert slack(fork, heft(fork, static_machine({"a": 2}))) == 10       # x could move by 20: (20 + 0) / 2


# ---- machines, schedules, bounds -------------------------------------------------------------

def test_heft_refuses_reconfigurable_machines():
    with pytest.raises(ValueError, match="REFT does"):
        heft(case_study(), case_study_machine(True))


def test_machine_checks_its_shape():
    with pytest.raises(ValueError, match="exactly one configuration"):
        Machine("m", (ProcessingElement("p0", "a"), ProcessingElement("p1", "a")), (("p0",),), ((0,),))
    with pytest.raises(ValueError, match="placements must name locations"):
        Machine("m", (ProcessingElement("p0", "a"),), (("p0",),), ((1,),))
    machine = case_study_machine(True)
    assert machine.reconfigurable and machine.parallel_pes == 2 and len(machine.executors) == 6
    assert not static_machine({"a": 2, "b": 1}).reconfigurable


def test_earliest_start_fills_gaps():
    assert earliest_start([(0, 10), (30, 40)], 0, 20) == 10
    assert earliest_start([(0, 10), (25, 40)], 0, 20) == 40
    assert earliest_start([(5, 50), (10, 20)], 0, 5) == 0
    assert earliest_start([(0, 10), (8, 30)], 5, 1) == 30


def test_violations_name_each_broken_rule():
    graph, machine = case_study(), case_study_machine(False)
    good = reft(graph, machine).slots
    broken = dict(good)
    broken["v2"] = Slot("p0", 0, 50, 150)                                  # before v1 ends, on v1's PE
    broken["v5"] = Slot("p2", 0, 305, 405)                                 # 5 cycles after {p0, p1} unload
    broken["v6"] = Slot("p1", 0, 410, 510)                                 # p1 cannot run kind c
    problems = violations(graph, machine, offline_schedule("bad", broken))
    assert "v2: starts at 50, before its input from v1 is ready at 100" in problems
    assert "v1 and v2 overlap on p0" in problems
    assert any("need different configurations at location 0 less than 10 cycles apart" in p for p in problems)
    assert "v6: p1 (b) cannot run it" in problems
    assert violations(graph, machine, offline_schedule("short", {"v1": good["v1"]}))[0] == "v2: not scheduled"


def test_lower_bound_parts():
    graph = case_study()
    assert critical_path(graph) == 400
    assert lower_bound(graph, case_study_machine(True)) == 400
    wide = build_graph("wide", [(f"t{i}", "a", {"a": 10}) for i in range(9)])
    assert lower_bound(wide, static_machine({"a": 2})) == 45              # work over PEs, rounded up
    assert lower_bound(wide, static_machine({"a": 2, "b": 4})) == 45      # b cannot help kind a


def test_time_limit_is_reported():
    graph = lu(4)
    machine = reconfigurable_machine([["getrf", "trsm_u"], ["trsm_l", "gemm"]], 1, 50)
    quick = optimal(graph, machine, time_limit=0.001)
    assert quick.proven_optimal is False
    assert violations(graph, machine, quick) == []


# ---- properties over generated graphs --------------------------------------------------------

GRAPHS = st.one_of(
    st.builds(layer_by_layer, st.integers(3, 8), st.integers(1, 3), st.floats(0.1, 0.9), st.integers(0, 10**6)),
    st.builds(erdos_renyi, st.integers(2, 8), st.floats(0.1, 0.9), st.integers(0, 10**6),
              classes=st.just(("a", "b")), comm_range=st.just((0, 60))),
    st.builds(uniform_dag, st.integers(2, 8), st.integers(0, 10**6)),
)
MACHINES = st.sampled_from([
    static_machine({"a": 1, "b": 1, "c": 1}), static_machine({"a": 2, "b": 1, "c": 1}),
    distributed_machine(("a", "b", "c")), case_study_machine(True), case_study_machine(False),
])


@SMALL
@given(GRAPHS, MACHINES)
@example(erdos_renyi(6, 0.75, 34356, classes=("a", "b"), comm_range=(0, 60)),
         static_machine({"a": 1, "b": 1, "c": 1}))          # CP-SAT once called this INFEASIBLE
def test_optimal_is_feasible_bounded_and_never_beaten(graph, machine):
    """The optimum here is searched without REFT's length or the lower bound in the model,
    so neither inequality below holds by construction."""
    best = optimal(graph, machine, time_limit=5, use_bounds=False)
    assert violations(graph, machine, best) == []
    assert best.makespan >= lower_bound(graph, machine)
    bounded = optimal(graph, machine, time_limit=5)
    if best.proven_optimal and bounded.proven_optimal:
        assert bounded.makespan == best.makespan
    heuristics = [reft(graph, machine)] + ([] if machine.reconfigurable else [heft(graph, machine)])
    for schedule in heuristics:
        assert violations(graph, machine, schedule) == [], schedule.scheduler
        if best.proven_optimal:
            assert schedule.makespan >= best.makespan, schedule.scheduler


@SMALL
@given(GRAPHS)
def test_reft_is_heft_on_static_machines(graph):
    for machine in (static_machine({"a": 2, "b": 1, "c": 1}), distributed_machine(("a", "b", "c"))):
        assert reft(graph, machine).slots == heft(graph, machine).slots


@SMALL
@given(GRAPHS, st.sampled_from(["hts", "hts-nospec", "runtime"]))
def test_hts_never_beats_the_lower_bound(default_config, graph, scheduler):
    instances = {c: 1 for c in graph.classes}
    schedule, made = run_graph(graph, instances, default_config, scheduler)
    machine = static_machine(instances)
    assert schedule.makespan >= lower_bound(graph, machine)
    assert set(schedule.slots) == set(graph.tasks)
    for task, slot in schedule.slots.items():
        assert slot.finish - slot.start >= graph.cost(task)[made.accel_class[task]]
        assert slot.pe.startswith(made.accel_class[task] + "#")
    for producer, consumer in graph.edges:
        assert schedule.slots[consumer].start >= schedule.slots[producer].finish


# ---- runs of the models read back as schedules ------------------------------------------------

def pc_label(pid, pc):
    return f"{pid}.{pc}"


@settings(max_examples=25)
@given(st.integers(0, 2**32 - 1))
@example(248)   # a task dispatched in the cycle its speculation ID is confirmed, the ID then reused
def test_trace_schedule_keeps_exactly_the_committed_tasks(seed):
    """Random programs with branches on random systems: a speculative task that finished
    before its branch was found mispredicted is not a slot, and every committed task is."""
    rng = random.Random(seed)
    config = random_config(rng)
    programs = [assemble(text, config, f"seed{seed}_pid{pid}.s")
                for pid, text in enumerate(random_programs(rng, config))]
    for scheduler in ("hts", "runtime"):
        result = simulate(config, programs, initial_memory(config, seed), scheduler)
        schedule = trace_schedule(result, pc_label)
        committed = collections.Counter(pc_label(pid, pc) for pid, pc, _ in result.committed)
        assert collections.Counter(name.split("'")[0] for name in schedule.slots) == committed, scheduler
        assert all(slot.finish <= result.cycles for slot in schedule.slots.values())


def test_trace_schedule_drops_squashed_results(default_config):
    """branch_taken_dependency runs four tasks speculatively past a mispredicted branch; two
    finish before it resolves and run again on the taken path."""
    program = assemble(benchmarks.source("branch_taken_dependency"), default_config, "b.s")
    result = simulate(default_config, [program], initial_memory(default_config), "hts")
    assert sorted(trace_schedule(result, pc_label).slots) == ["0.1", "0.2", "0.8", "0.9"]


@pytest.mark.parametrize("name", ["loop_dependency", "branch_taken_dependency", "audio_compression"])
def test_naive_schedule_is_the_naive_run(default_config, name):
    program = assemble(benchmarks.source(name), default_config, f"{name}.s")
    graph = program_graph([program], default_config, initial_memory(default_config))
    result = simulate(default_config, [program], initial_memory(default_config), "naive")
    schedule = naive_schedule(result, graph, default_config.timing.interrupt_latency)
    assert schedule.makespan == result.cycles and set(schedule.slots) == set(graph.tasks)
    ordered = sorted(schedule.slots.values(), key=lambda slot: slot.start)
    assert all(b.start - a.finish == default_config.timing.interrupt_latency for a, b in zip(ordered, ordered[1:]))
    with pytest.raises(ValueError, match="the naive run took"):
        naive_schedule(result, graph, 0)


def test_naive_schedule_of_a_graph_program(default_config):
    graph = topcuoglu()
    made = graph_program(graph, {"p2": 1, "p1": 1}, default_config)
    result = simulate(made.config, [made.program], initial_memory(made.config), "naive", timing=made.timing)
    schedule = naive_schedule(result, graph, default_config.timing.interrupt_latency, made.accel_class)
    assert {task: slot.pe for task, slot in schedule.slots.items()} == {
        task: f"{made.accel_class[task]}#0" for task in graph.tasks}


# ---- the study and the CLI -------------------------------------------------------------------

def test_layer_study_rows_and_summary(default_config):
    rows = layer_study(1, 0, 5.0, default_config, progress=None, layers_grid=(2,), probabilities=(0.5,))
    (row,) = rows
    assert row["opt_pr"] <= row["reft_pr"] and row["opt_r"] <= row["reft_r"]
    assert row["opt_static"] <= row["heft_static"] and row["opt_static"] < row["hts_static"]
    summary = {line["what"]: line for line in layer_summary(rows)}
    without = summary["REFT / optimal, without (M_R)"]
    assert without["mean_ratio"] == round(row["opt_r"] / row["reft_r"], 4) and without["graphs"] == 1
    assert summary["HTS / optimal, static machine"]["mean_ratio"] == round(row["opt_static"] / row["hts_static"], 4)


def hts(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hts", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_compare_a_graphml_file(tmp_path):
    write_graphml(case_study(), tmp_path / "case.graphml")
    result = hts("compare", "case.graphml", "--instances", "1", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    reference = {row["scheduler"]: row for row in out["reference"]}
    assert reference["cp-sat"]["cycles"] == 400 and reference["cp-sat"]["proven_optimal"] is True
    assert reference["lower-bound"]["cycles"] == 400 and reference["heft"]["cycles"] == 400
    hts_cycles = {row["scheduler"]: row["cycles"] for row in out["schedulers"]}["hts"]
    assert hts_cycles > 400 and out["graph"] == {"tasks": 6, "edges": 7, "extra_dependences": []}
    for name in ("hts", "runtime", "naive", "heft", "reft", "cp-sat"):
        assert (tmp_path / f"case_compare_gantt_{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_program_text_table_and_skipped_optimum(tmp_path):
    from importlib import resources
    program = resources.files("hts.benchmarks").joinpath("loop_no_dependency.s")
    result = hts("compare", program, "--optimal-max-tasks", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "heft" in result.stdout and "lower-bound" in result.stdout and "cp-sat" not in result.stdout


def test_compare_bad_graphml_names_the_file(tmp_path):
    (tmp_path / "bad.graphml").write_text("<graphml>")
    result = hts("compare", "bad.graphml", cwd=tmp_path)
    assert result.returncode == 1 and "bad.graphml: not a valid GraphML file" in result.stderr
    assert "Traceback" not in result.stderr


GRAPHML = ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns">{keys}<graph edgedefault="directed">{body}'
           '</graph></graphml>')
KEYS = ('<key id="k" for="node" attr.name="kind" attr.type="string"/>'
        '<key id="c" for="node" attr.name="cost_{cls}" attr.type="int"/>')


def task(name, kind="x", cost="10"):
    return f'<node id="{name}"><data key="k">{kind}</data><data key="c">{cost}</data></node>'


@pytest.mark.parametrize("files, expected", [
    ({"g.graphml": GRAPHML.format(keys=KEYS.format(cls="a"), body=task("u") + task("v") + '<edge source="u" '
      'target="v"/><edge source="v" target="u"/>')}, "g.graphml: cycle: "),
    ({"g.graphml": GRAPHML.format(keys=KEYS.format(cls="a"), body='<node id="u"><data key="c">3</data></node>')},
     "g.graphml: task 'u': no 'kind'"),
    ({"g.graphml": GRAPHML.format(keys=KEYS.format(cls="a"), body=task("u", cost="ten"))},
     "g.graphml: not a valid GraphML file: invalid literal for int()"),
    ({"g.graphml": GRAPHML.format(keys=KEYS.format(cls="mov"), body=task("u"))},
     "g.graphml: accelerator class 'mov' cannot run on the HTS model"),
    ({"g.graphml": GRAPHML.format(keys=KEYS.format(cls="a"), body=task("u")), "h.graphml": ""},
     "g.graphml: a task graph is compared on its own"),
])
def test_compare_bad_graph_input_writes_nothing(tmp_path, monkeypatch, capsys, files, expected):
    from hts.cli import main
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["compare", *files]) == 1
    assert capsys.readouterr().err.startswith(expected)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(files)
