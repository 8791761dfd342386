"""``hts explore``: points on a Dask cluster equal ``hts run``, re-runs come from the cache,
a failing point is reported without losing the others, and the outputs are written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hts import benchmarks
from hts.base.config import config_yaml, load_config, with_value
from hts.base.errors import HTSError
from hts.flows.explore import SweepSpec, cheapest_within, explore, parse_key, points, random_programs

distributed = pytest.importorskip("dask.distributed")

PROGRAM = Path(benchmarks.__file__).parent / "audio_compression.s"
KEYS = {"hts.window": (1, 2), "hts.tracker_entries": (2, 4)}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local:
        yield local.scheduler_address


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HTS_EXPLORE_CACHE", str(tmp_path / "cache"))


def _points(**keys):
    return points(load_config("tiny"), SweepSpec(keys or KEYS, {"audio": PROGRAM.read_text()}), synth=False)


def test_points_equal_hts_run_and_a_rerun_reuses_every_one(tmp_path, cluster):
    first = explore(_points(), cluster, progress=lambda line: None)
    assert [o.error for o in first.outcomes] == [None] * 4 and first.reused == 0
    for outcome in first.outcomes:
        config = load_config("tiny")
        for key, value in outcome.point.values:
            config = with_value(config, key, value)
        point_file = tmp_path / "point.yaml"
        point_file.write_text(config_yaml(config))
        result = subprocess.run([sys.executable, "-m", "hts", "run", PROGRAM, "--json", "-c", point_file],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        assert outcome.row["cycles"] == json.loads(result.stdout)["cycles"], outcome.point.label()
    again = explore(_points(), cluster, progress=lambda line: None)
    assert again.reused == 4 and [o.row for o in again.outcomes] == [o.row for o in first.outcomes]


def test_a_failing_point_is_reported_and_the_others_finish(cluster):
    # Eight words of program memory cannot hold the benchmark: that point fails on its worker.
    result = explore(_points(**{"hts.program_words": (8, 1024)}), cluster, progress=lambda line: None)
    small, large = result.outcomes
    assert small.row is None and "program" in small.error.lower()
    assert large.error is None and large.row["cycles"] > 0


def test_cheapest_within_picks_the_smallest_point_near_the_best(cluster):
    result = explore(_points(), cluster, progress=lambda line: None)
    best = cheapest_within(result.outcomes, 5.0, "audio")
    near = [o for o in result.outcomes if o.row["cycles"] <= 1.05 * min(p.row["cycles"] for p in result.outcomes)]
    assert best in near and all(tuple(v for _, v in best.point.values) <= tuple(v for _, v in o.point.values)
                                for o in near)


def test_key_syntax():
    assert parse_key("hts.window=4,8,16") == ("hts.window", (4, 8, 16))
    assert parse_key("hts.window=4..32") == ("hts.window", (4, 8, 16, 32))
    for bad in ("window=4", "hts.window", "hts.window=a,b", "hts.window=8..4"):
        with pytest.raises(HTSError):
            parse_key(bad)


def test_cli_writes_table_csv_json_and_plot(tmp_path, cluster):
    out = {name: tmp_path / name for name in ("e.csv", "e.json", "e.png")}
    result = subprocess.run([sys.executable, "-m", "hts", "explore", "-c", "tiny", "--key", "hts.window=1,2",
                             PROGRAM, "--scheduler", cluster, "--csv", out["e.csv"], "--json", out["e.json"],
                             "--plot", out["e.png"]], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    assert "reused 0 of 2 points" in result.stdout and "cheapest within 5% of the best cycles" in result.stdout
    assert out["e.csv"].read_text().splitlines()[0].startswith("point,hts.window,program,cycles")
    assert len(json.loads(out["e.json"].read_text())["rows"]) == 2
    assert out["e.png"].read_bytes()[:4] == b"\x89PNG"


@pytest.mark.synth
def test_synthesis_runs_once_per_configuration_and_joins_every_program_row(monkeypatch):
    import hts.flows.synth
    synthesized = []

    def synthesize(config, block, progress):
        synthesized.append(config.hts.window)
        return {"lut_sites": 1000 * config.hts.window, "ffs": 1, "brams": 0, "fmax_mhz": 50.0, "luts": 7}

    monkeypatch.setattr(hts.flows.synth, "synthesize", synthesize)
    spec = SweepSpec({"hts.window": (1, 2)}, {"audio": PROGRAM.read_text(), "again": PROGRAM.read_text()})
    result = explore(points(load_config("tiny"), spec, synth=True), workers=0, progress=lambda line: None)
    assert sorted(synthesized) == [1, 2] and result.jobs == 6 and result.reused == 0
    for outcome in result.outcomes:
        row = outcome.row
        assert row["lut_sites"] == 1000 * outcome.point.config.hts.window and "luts" not in row
        assert row["wall_us"] == round(row["cycles"] / 50.0, 2)
    again = explore(points(load_config("tiny"), spec, synth=True), workers=0, progress=lambda line: None)
    assert len(synthesized) == 2 and again.reused == 4 and again.jobs_reused == 6
    assert [o.row for o in again.outcomes] == [o.row for o in result.outcomes]


@pytest.mark.slow
def test_synthesized_points_equal_hts_synth(tmp_path, cluster):
    """Acceptance 1 of issue 18 on a tiny-sized point: the row's cost is `hts synth --json`'s."""
    out = tmp_path / "e.json"
    result = subprocess.run([sys.executable, "-m", "hts", "explore", "-c", "tiny", "--key", "hts.window=2", PROGRAM,
                             "--synth", "--scheduler", cluster, "--json", out], capture_output=True, text=True,
                            timeout=3600)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(out.read_text())["rows"]
    point_file = tmp_path / "point.yaml"
    point_file.write_text(config_yaml(with_value(load_config("tiny"), "hts.window", 2)))
    alone = subprocess.run([sys.executable, "-m", "hts", "synth", "-c", point_file, "--json"], capture_output=True,
                           text=True, timeout=3600)
    assert alone.returncode == 0, alone.stderr
    figures = json.loads(alone.stdout)
    assert {key: row[key] for key in ("lut_sites", "ffs", "brams", "fmax_mhz")} == \
        {key: figures[key] for key in ("lut_sites", "ffs", "brams", "fmax_mhz")}
    assert row["wall_us"] == round(row["cycles"] / figures["fmax_mhz"], 2)


@pytest.mark.synth
def test_configurations_with_the_same_rtl_share_one_synthesis(monkeypatch):
    """The synthesis cache key is the design's RTLIL: the CPU's L2 latency, a figure of the
    software baselines only, leaves the scheduler's hardware as it is."""
    import hts.flows.synth
    synthesized = []
    monkeypatch.setattr(hts.flows.synth, "synthesize", lambda config, block, progress: synthesized.append(config) or
                        {"lut_sites": 1, "ffs": 1, "brams": 0, "fmax_mhz": 10.0})
    spec = SweepSpec({"timing.l2_latency": (10, 99)}, {"audio": PROGRAM.read_text()})
    result = explore(points(load_config("tiny"), spec, synth=True), workers=0, progress=lambda line: None)
    assert len(synthesized) == 1 and result.jobs == 3
    assert all(outcome.row["lut_sites"] == 1 for outcome in result.outcomes)


@pytest.mark.synth
def test_a_configuration_that_does_not_elaborate_fails_its_points_only(monkeypatch):
    import hts.flows.synth
    real = hts.flows.synth.design_digest

    def design_digest(config, block):
        if config.hts.window == 2:
            raise HTSError("no RTL for this one")
        return real(config, block)

    monkeypatch.setattr(hts.flows.synth, "design_digest", design_digest)
    monkeypatch.setattr(hts.flows.synth, "synthesize", lambda config, block, progress:
                        {"lut_sites": 1, "ffs": 1, "brams": 0, "fmax_mhz": 10.0})
    spec = SweepSpec({"hts.window": (1, 2)}, {"audio": PROGRAM.read_text()})
    good, bad = explore(points(load_config("tiny"), spec, synth=True), workers=0, progress=lambda line: None).outcomes
    assert good.row["lut_sites"] == 1 and good.error is None
    assert bad.row is None and bad.error == "HTSError: no RTL for this one"


def test_random_programs_are_seeded_named_and_run_as_points(tmp_path):
    config = load_config("default")
    programs = random_programs(config, 3)
    assert list(programs) == ["random/0", "random/1", "random/2"] and programs == random_programs(config, 3)
    assert len(set(programs.values())) == 3 and all("if " in text for text in programs.values())
    out = tmp_path / "e.json"
    result = subprocess.run([sys.executable, "-m", "hts", "explore", "--key", "hts.tlb_entries=2,16", "--random", "2",
                             "--workers", "0", "--json", out], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["rows"]
    assert sorted((row["program"], row["hts.tlb_entries"]) for row in rows) == \
        [("random/0", 2), ("random/0", 16), ("random/1", 2), ("random/1", 16)]
    assert all(row["cycles"] > 0 for row in rows)
    refused = subprocess.run([sys.executable, "-m", "hts", "explore", "--key", "hts.window=1", "--random", "10001"],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "--random: must be <= 10000" in refused.stderr
