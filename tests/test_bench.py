"""``hts bench`` as Dask tasks: a cluster gives the rows of an in-process run, in the
benchmarks' order, and a case that fails is reported while the others finish."""

import dataclasses

import pytest

from hts.base.config import load_config
from hts.flows.bench import bench, bench_cases

distributed = pytest.importorskip("dask.distributed")


def test_a_cluster_gives_the_in_process_rows_in_order_and_reports_a_failing_case():
    cases = bench_cases(load_config("tiny"), seed=3)
    broken = dataclasses.replace(cases[1], name="broken", text="this is not assembly\n")
    cases = [cases[0], broken, *cases[2:]]
    here, here_errors = bench(cases, workers=0, progress=lambda line: None)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        there, there_errors = bench(cases, cluster.scheduler_address, progress=lambda line: None)
    assert there == here
    assert [row["benchmark"] for row in there] == [case.name for case in cases if case.name != "broken"]
    assert len(there_errors) == 1 and there_errors[0].startswith("broken: ") and "broken.s:1:1" in there_errors[0]
    assert here_errors == there_errors
    assert all(row["memory_matches_sequential"] and row["naive"] > row["hts"] for row in there)
