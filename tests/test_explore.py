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
KEYS = {"hts.queue_depth": (1, 2), "hts.tracker_entries": (2, 4)}


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
    assert parse_key("hts.queue_depth=4,8,16") == ("hts.queue_depth", (4, 8, 16))
    assert parse_key("hts.queue_depth=4..32") == ("hts.queue_depth", (4, 8, 16, 32))
    for bad in ("queue_depth=4", "hts.queue_depth", "hts.queue_depth=a,b", "hts.queue_depth=8..4"):
        with pytest.raises(HTSError):
            parse_key(bad)


def test_cli_writes_table_csv_json_and_plot(tmp_path, cluster):
    out = {name: tmp_path / name for name in ("e.csv", "e.json", "e.png")}
    result = subprocess.run([sys.executable, "-m", "hts", "explore", "-c", "tiny", "--key", "hts.queue_depth=1,2",
                             PROGRAM, "--scheduler", cluster, "--csv", out["e.csv"], "--json", out["e.json"],
                             "--plot", out["e.png"]], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    assert "reused 0 of 2 points" in result.stdout and "cheapest within 5% of the best cycles" in result.stdout
    assert out["e.csv"].read_text().splitlines()[0].startswith("point,hts.queue_depth,program,cycles")
    assert len(json.loads(out["e.json"].read_text())["rows"]) == 2
    assert out["e.png"].read_bytes()[:4] == b"\x89PNG"


@pytest.mark.synth
def test_synthesis_runs_once_per_configuration_and_joins_every_program_row(monkeypatch):
    import hts.flows.synth
    synthesized = []

    def synthesize(config, block, progress):
        synthesized.append(config.hts.queue_depth)
        return {"lut_sites": 1000 * config.hts.queue_depth, "ffs": 1, "brams": 0, "fmax_mhz": 50.0, "luts": 7}

    monkeypatch.setattr(hts.flows.synth, "synthesize", synthesize)
    spec = SweepSpec({"hts.queue_depth": (1, 2)}, {"audio": PROGRAM.read_text(), "again": PROGRAM.read_text()})
    result = explore(points(load_config("tiny"), spec, synth=True), workers=0, progress=lambda line: None)
    assert sorted(synthesized) == [1, 2] and result.jobs == 6 and result.reused == 0
    for outcome in result.outcomes:
        row = outcome.row
        assert row["lut_sites"] == 1000 * outcome.point.config.hts.queue_depth and "luts" not in row
        assert row["wall_us"] == round(row["cycles"] / 50.0, 2)
    again = explore(points(load_config("tiny"), spec, synth=True), workers=0, progress=lambda line: None)
    assert len(synthesized) == 2 and again.reused == 4 and again.jobs_reused == 6
    assert [o.row for o in again.outcomes] == [o.row for o in result.outcomes]


@pytest.mark.slow
def test_synthesized_points_equal_hts_synth(tmp_path, cluster):
    """Acceptance 1 of issue 18 on a tiny-sized point: the row's cost is `hts synth --json`'s."""
    out = tmp_path / "e.json"
    result = subprocess.run([sys.executable, "-m", "hts", "explore", "-c", "tiny", "--key", "hts.queue_depth=2", PROGRAM,
                             "--synth", "--scheduler", cluster, "--json", out], capture_output=True, text=True,
                            timeout=3600)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(out.read_text())["rows"]
    point_file = tmp_path / "point.yaml"
    point_file.write_text(config_yaml(with_value(load_config("tiny"), "hts.queue_depth", 2)))
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
        if config.hts.queue_depth == 2:
            raise HTSError("no RTL for this one")
        return real(config, block)

    monkeypatch.setattr(hts.flows.synth, "design_digest", design_digest)
    monkeypatch.setattr(hts.flows.synth, "synthesize", lambda config, block, progress:
                        {"lut_sites": 1, "ffs": 1, "brams": 0, "fmax_mhz": 10.0})
    spec = SweepSpec({"hts.queue_depth": (1, 2)}, {"audio": PROGRAM.read_text()})
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
    refused = subprocess.run([sys.executable, "-m", "hts", "explore", "--key", "hts.queue_depth=1", "--random", "10001"],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "--random: must be <= 10000" in refused.stderr


# ---- issue 49: sweep files and programs read bounded, errors at the user's line ------------

def _explore(*argv):
    """``hts explore ARGV`` in this process: (exit status, stderr); a traceback fails the test."""
    import contextlib
    import io
    from hts.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["explore", "--workers", "0", *map(str, argv)])
    return status, err.getvalue()


@pytest.mark.parametrize("text,expected", [
    ("keys:\n  hts.queue_depth: [4, 8]\nprograms: 5\n", "s.yaml:3:11: programs: expected a list of program files"),
    ("keys:\n  hts.queue_depth: [4, 8]\nprograms: [5]\n", "s.yaml:3:12: programs: expected a list of program files"),
    ("keys:\n  hts.queue_depth: [4, 8]\nprograms: [ok.s, {a: 1}]\n", "s.yaml:3:18: programs: expected a list"),
    ("keys:\n  hts.queue_depth: 4\n", "s.yaml:2:20: keys.hts.queue_depth: expected a non-empty list of values"),
    ("keys: [1]\n", "s.yaml:1:7: a sweep file needs a 'keys' mapping"),
    ("- 1\n", "s.yaml:1:1: a sweep file needs a 'keys' mapping"),
    ("keys:\n  7: [1]\n", "s.yaml:2:6: keys: 7: expected section.name"),
    ("keys: {hts.queue_depth: [1]}\nprogams: [ok.s]\n", "s.yaml:2:10: progams: unknown key (known: keys, programs)"),
    ("keys: {hts.queue_depth: [1]}\nprograms: [absent.s]\n", "s.yaml:2:12: programs[0]: absent.s: cannot read: no such"),
    # A value the configuration refuses: at its line in the sweep file, not in an internal dump.
    ("keys:\n  hts.queue_depth: [4, 8]\n  hts.gprs: [2,\n    0]\nprograms: [ok.s]\n",
     "s.yaml:4:5: hts.gprs: must be >= 1, got 0 (at hts.queue_depth=4, hts.gprs=0)"),
    ("keys:\n  accelerators.count: [1, 99]\nprograms: [ok.s]\n", "s.yaml:2:27: accelerators[0].count: must be <= 64"),
    ("keys:\n  hts.bogus: [1]\nprograms: [ok.s]\n", "s.yaml:2:15: hts.bogus: unknown key"),
    ("keys:\n  hts.queue_depth: [[1]]\nprograms: [ok.s]\n", "s.yaml:2:21: hts.queue_depth: must be an integer, got [1]"),
    ("keys: {hts.queue_depth: [1]}  # caf\xe9\nprograms: [ok.s]\n", "s.yaml:1:36: not UTF-8 text"),
    ("keys: {hts.queue_depth: [1]}\nprograms: [latin1.s]\n", "latin1.s:1:30: not UTF-8 text"),
])
def test_sweep_file_errors_name_its_line(tmp_path, monkeypatch, text, expected):
    """Issue 49: ``programs: 5`` and non-UTF-8 files were tracebacks, and a refused value
    was named at a line of an internal YAML dump (``<preset default> with ...:51:15``)."""
    monkeypatch.chdir(tmp_path)
    Path("ok.s").write_text(PROGRAM.read_text())
    Path("latin1.s").write_bytes(b"mov 58 0 2 0 1 0 0 0001 ; caf\xe9\n")
    Path("s.yaml").write_bytes(text.encode("latin-1"))
    status, stderr = _explore("--sweep", "s.yaml")
    assert status == 1 and stderr.startswith(expected), stderr


@pytest.mark.parametrize("argv,expected", [
    (["latin1.s", "--key", "hts.queue_depth=1"], "latin1.s:1:30: not UTF-8 text"),
    (["ok.s", "--key", "hts.gprs=1,0"], "--key hts.gprs=1,0: hts.gprs: must be >= 1, got 0"),
    (["ok.s", "--key", "hts.win\x1bdow=1"], "--key hts.win\\x1bdow=1: hts.win\\x1bdow: unknown key"),
    (["ok.s", "--key", "hts.queue_depth=1..1e30"], "--key hts.queue_depth=1..1e30: lo..hi needs integers"),
    (["ok.s", "--key", "hts.queue_depth=1..1" + "0" * 5000], "--key hts.queue_depth=1..100000000000000000000000000000000"),
])
def test_command_line_errors_name_the_option(tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    Path("ok.s").write_text(PROGRAM.read_text())
    Path("latin1.s").write_bytes(b"mov 58 0 2 0 1 0 0 0001 ; caf\xe9\n")
    status, stderr = _explore(*argv)
    assert status == 1 and stderr.startswith(expected) and len(stderr) < 400, stderr


def test_an_alias_bomb_in_a_sweep_file_is_refused_quickly(tmp_path):
    import time
    from test_files import ALIAS_BOMB
    path = tmp_path / "bomb.yaml"
    path.write_text("keys: {hts.queue_depth: [1]}\n" + ALIAS_BOMB)
    start = time.perf_counter()
    status, stderr = _explore("--sweep", path)
    assert status == 1 and time.perf_counter() - start < 1
    assert "bomb.yaml:3:8: not valid YAML: aliases (*name) are not accepted: a sweep file needs none" in stderr
    assert len(stderr) < 300


def test_a_sweep_file_past_its_size_limit_is_refused(tmp_path):
    from hts.base.files import SWEEP_BYTES
    path = tmp_path / "big.yaml"
    path.write_text("keys: {hts.queue_depth: [1]}\n" + "#" * SWEEP_BYTES)
    status, stderr = _explore("--sweep", path, "--random", "1")
    assert status == 1 and f"big.yaml: the sweep file is larger than {SWEEP_BYTES:,} bytes" in stderr


def test_the_points_are_counted_and_capped_before_any_is_built(monkeypatch):
    """Issue 49: six --key ranges made 1.8 M points, and nothing was printed for a minute
    while memory grew."""
    import time
    from hts.flows import explore as module
    monkeypatch.setattr(module, "random_programs", lambda *args: pytest.fail("programs made before the count"))
    monkeypatch.setattr(module, "with_values", lambda *args: pytest.fail("configurations made before the count"))
    ranges = ["hts.loop_depth=1..64", "hts.gprs=1..256", "hts.tracker_entries=1..1024", "hts.tlb_entries=1..1024",
              "hts.queue_depth=1..1024", "hts.spec_ids=1..32"]
    start = time.perf_counter()
    status, stderr = _explore(*(arg for key in ranges for arg in ("--key", key)), "--random", "3")
    assert status == 1 and time.perf_counter() - start < 2
    assert stderr == ("1,509,354 points (7 loop_depth x 9 gprs x 11 tracker_entries x 11 tlb_entries x 11 "
                      "queue_depth x 6 spec_ids x 3 programs) are more than the 10,000 allowed: sweep fewer "
                      "values, or raise the cap with --max-points N\n")
    with pytest.raises(HTSError, match="2 points .* are more than the 1 allowed"):
        points(load_config("tiny"), SweepSpec({"hts.queue_depth": (1, 2)}, {"a": "", }), synth=False, max_points=1)


def test_max_points_raises_the_cap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("ok.s").write_text(PROGRAM.read_text())
    status, stderr = _explore("ok.s", "--key", "hts.queue_depth=1,2,4", "--max-points", "2", "-c", "tiny")
    assert status == 1 and "3 points (3 queue_depth x 1 program) are more than the 2 allowed" in stderr
    assert len(points(load_config("tiny"), SweepSpec({"hts.queue_depth": (1, 2, 4)}, {"ok": ""}), synth=False,
                      max_points=3)) == 3


@pytest.mark.parametrize("damage", [b'{"cycles": ', b"[1]\n", b"\xff\xfe", b"{" * 100_000])
def test_a_damaged_cache_entry_is_run_again(tmp_path, damage):
    """Issue 49, found beside it: a cache entry cut short or changed by hand was a
    JSONDecodeError or TypeError traceback on every later run."""
    program = (Path(__file__).resolve().parents[1] / "examples" / "paper_independent.s").read_text()
    sweep = points(load_config("tiny"), SweepSpec({"hts.queue_depth": (1,)}, {"p": program}), synth=False)
    first = explore(sweep, workers=0, progress=lambda line: None)
    (entry,) = (tmp_path / "cache").iterdir()
    entry.write_bytes(damage)
    again = explore(sweep, workers=0, progress=lambda line: None)
    assert again.jobs_reused == 0 and again.outcomes[0].row == first.outcomes[0].row
    assert {"program": "p", **json.loads(entry.read_text())} == first.outcomes[0].row
