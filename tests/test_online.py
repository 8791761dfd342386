"""Online policies of seed 003: hand-worked schedules, SJF's optimality, seeded streams."""

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, strategies as st

from hts.models.devices import GraphShape
from hts.models.schedulers.online import (
    ORDERS, Job, Policy, gnn_latencies, interarrival_for_utilization, job_stream, metrics,
    noisy_predictions, paper_policies, pareto_gaps, release_times, simulate,
)

# One server. Job 0 arrives alone; jobs 1-3 queue up behind it (3, 1 and 2 long).
QUEUE = [Job(0, 4), Job(1, 3), Job(2, 1), Job(2, 2)]


def spans(assignments):
    return [(a.start, a.finish) for a in assignments]


def test_fcfs_by_hand():
    schedule = simulate(QUEUE, Policy("fcfs", "best"))
    assert spans(schedule) == [(0, 4), (4, 7), (7, 8), (8, 10)]
    result = metrics(QUEUE, schedule)
    assert (result.completion, result.turnaround, result.execution) == (29 / 4, 24 / 4, 10 / 4)


def test_lifo_by_hand():
    # At 4, jobs 2 and 3 both arrived last (at 2); the later in the stream, 3, goes first.
    schedule = simulate(QUEUE, Policy("lifo", "best"))
    assert spans(schedule) == [(0, 4), (7, 10), (6, 7), (4, 6)]
    assert metrics(QUEUE, schedule).completion == 27 / 4


def test_sjf_true_by_hand():
    schedule = simulate(QUEUE, Policy("sjf_true", "best"))
    assert spans(schedule) == [(0, 4), (7, 10), (4, 5), (5, 7)]
    result = metrics(QUEUE, schedule)
    assert (result.completion, result.turnaround) == (26 / 4, 21 / 4)


def test_sjf_predicted_follows_the_prediction_not_the_truth():
    # The predictor thinks job 1 is the shortest and job 2 the longest.
    jobs = [Job(0, 4), Job(1, 3, predicted=0.5), Job(2, 1, predicted=9), Job(2, 2)]
    schedule = simulate(jobs, Policy("sjf_predicted", "predicted"))
    assert spans(schedule) == [(0, 4), (4, 7), (9, 10), (7, 9)]


def test_random_picks_only_waiting_jobs_and_depends_on_the_seed():
    orders = set()
    for seed in range(40):
        schedule = simulate(QUEUE, Policy("random", "best"), seed)
        assert schedule[0].start == 0
        # The server never idles and no job starts before it arrives.
        ends = sorted(spans(schedule))
        assert all(a[1] == b[0] for a, b in zip(ends, ends[1:]))
        assert all(a.start >= job.release for a, job in zip(schedule, QUEUE))
        orders.add(tuple(a.start for a in schedule))
    assert len(orders) == 6       # every order of the three waiting jobs turns up


def test_two_servers_and_configurations_by_hand():
    # Latency[server][configuration]. Both jobs arrive at 0; idle servers are served in index
    # order, so server 0 picks first: under SJF its shortest job is job 1 (best 2 there).
    jobs = [Job(0, [[5, 3], [1, 9]]), Job(0, [[2, 7], [4, 4]])]
    schedule = simulate(jobs, Policy("sjf_true", "best"))
    assert [(a.server, a.configuration, a.start, a.finish) for a in schedule] == [(1, 0, 0, 1), (0, 0, 0, 2)]
    # Predicted best configuration of job 0 on server 1 is the slow one (truth 9).
    jobs = [Job(0, [[5, 3], [1, 9]], predicted=[[5, 3], [8, 2]]), Job(0, [[2, 7], [4, 4]])]
    schedule = simulate(jobs, Policy("fcfs", "predicted"))
    assert [(a.server, a.configuration, a.finish) for a in schedule] == [(0, 1, 3), (1, 0, 4)]


@given(st.lists(st.floats(0.1, 100), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_sjf_minimises_mean_turnaround_of_a_batch_on_one_server(latencies, seed):
    """A batch released at once on one server: shortest first is optimal (Smith's rule)."""
    jobs = [Job(0, latency) for latency in latencies]
    sjf = metrics(jobs, simulate(jobs, Policy("sjf_true", "best"))).turnaround
    for order in ORDERS:
        assert sjf <= metrics(jobs, simulate(jobs, Policy(order, "best"), seed)).turnaround + 1e-9
    best = min(np.cumsum(permutation).mean() for permutation in itertools.permutations(latencies))
    assert sjf == pytest.approx(best)


def test_pareto_gaps_have_the_asked_mean_and_minimum():
    gaps = pareto_gaps(200_000, mean=10.0, shape=3.0, rng=np.random.default_rng(7))
    assert gaps.min() >= 10.0 * 2 / 3
    assert gaps.mean() == pytest.approx(10.0, rel=0.02)
    assert list(release_times(np.array([2.0, 3.0, 5.0]))) == [0.0, 2.0, 5.0]
    with pytest.raises(ValueError, match="shape must be > 1"):
        pareto_gaps(3, 1.0, 1.0, np.random.default_rng(0))


def test_utilization_sets_the_arrival_rate():
    # 3 servers, 85% busy, jobs of 51 cycles on average: one arrival every 20 cycles.
    assert interarrival_for_utilization(51, 3, 0.85) == pytest.approx(20)
    with pytest.raises(ValueError, match="utilization"):
        interarrival_for_utilization(51, 3, 0)


def test_noisy_predictions_have_the_asked_mape():
    truth = np.full(100_000, 50.0)
    guess = noisy_predictions(truth, 0.1, np.random.default_rng(3))
    assert np.mean(np.abs(guess - truth) / truth) == pytest.approx(0.1, rel=0.02)


SHAPES = [GraphShape.of(nx.gnp_random_graph(n, p, seed=n), f, 16)
          for n, p, f in [(20, 0.3, 8), (60, 0.1, 32), (120, 0.05, 64), (40, 0.2, 128), (90, 0.02, 16)] * 4]


def test_streams_are_deterministic_by_seed():
    latency = gnn_latencies(SHAPES)
    assert latency.shape == (len(SHAPES), 3, 8)
    predicted = noisy_predictions(latency, 0.05, np.random.default_rng(1))
    runs = []
    for _ in range(2):
        jobs = job_stream(latency, predicted, seed=11)
        runs.append([metrics(jobs, simulate(jobs, policy, seed=5)) for policy in paper_policies().values()])
    assert runs[0] == runs[1]
    other = job_stream(latency, predicted, seed=12)
    assert [job.release for job in other] != [job.release for job in job_stream(latency, predicted, seed=11)]


def test_dataflow_aware_policies_beat_random_tiling_on_gnn_jobs():
    """Figure 6: choosing the configuration per graph cuts execution time against random tiling."""
    latency = gnn_latencies(SHAPES)
    jobs = job_stream(latency, noisy_predictions(latency, 0.05, np.random.default_rng(1)), seed=4)
    results = {name: metrics(jobs, simulate(jobs, policy, seed=2)) for name, policy in paper_policies().items()}
    for baseline in ("Random", "FCFS", "LIFO"):
        assert results["SJF-Truth"].execution < results[baseline].execution
        assert results["SJF-Predicted"].execution < results[baseline].execution


@pytest.mark.parametrize("make, key", [
    (lambda: Job(-1, 3), "release"),
    (lambda: Job(0, [[1, 0]]), "latency must be finite and > 0"),
    (lambda: Job(0, [1, 2], predicted=[1, 2, 3]), "predicted has shape"),
    (lambda: Policy("edf", "best"), "order must be one of"),
    (lambda: Policy("fcfs", "worst"), "configuration must be one of"),
    (lambda: simulate([Job(0, [1, 2]), Job(0, 1)], Policy("fcfs", "best")), "same servers"),
])
def test_bad_input_names_the_field(make, key):
    with pytest.raises(ValueError, match=key):
        make()
