"""``hts run --timeline``: a Chrome trace-event file, checked against the format's field
names (Google's "Trace Event Format" document, JSON object format) and against the
run's own trace."""

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from hts import benchmarks
from hts.base.config import load_config
from hts.flows.timeline import ACCELERATORS_PID, MEMORY_PID, process_pid

# Per phase, the fields the format requires (ts in microseconds; X adds dur, i a scope).
REQUIRED = {"X": {"name", "ph", "ts", "dur", "pid", "tid"}, "i": {"name", "ph", "ts", "pid", "tid", "s"},
            "M": {"name", "ph", "pid", "tid", "args"}}
METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def _benchmark(name: str) -> Path:
    return Path(benchmarks.__file__).parent / f"{name}.s"


def _run(tmp_path, program, *extra):
    out, trace = tmp_path / "timeline.json", tmp_path / "trace.jsonl"
    result = subprocess.run([sys.executable, "-m", "hts", "run", program, "--timeline", out, "--trace", trace,
                             *extra], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text()), [json.loads(line) for line in trace.read_text().splitlines()]


def _check_schema(document: dict):
    assert set(document) <= {"traceEvents", "displayTimeUnit", "otherData", "systemTraceEvents"}
    for event in document["traceEvents"]:
        assert event["ph"] in REQUIRED, event
        assert REQUIRED[event["ph"]] <= set(event), event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int) and isinstance(event["name"], str)
        if event["ph"] == "M":
            assert event["name"] in METADATA_NAMES and set(event["args"]) in ({"name"}, {"sort_index"}), event
        else:
            assert isinstance(event["ts"], int) and event["ts"] >= 0
        if event["ph"] == "X":
            assert event["dur"] > 0
        if event["ph"] == "i":
            assert event["s"] in ("g", "p", "t")


def test_audio_compression_has_a_track_per_instance_and_its_tasks_as_slices(tmp_path):
    document, trace = _run(tmp_path, _benchmark("audio_compression"))
    _check_schema(document)
    config = load_config("default")
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in document["traceEvents"]
               if e["name"] == "thread_name"}
    instance_names = [name for (pid, _), name in sorted(threads.items()) if pid == ACCELERATORS_PID]
    assert instance_names == [f"{a.name}#{i}" for a in config.accelerators for i in range(a.count)]
    slices = defaultdict(list)
    for event in document["traceEvents"]:
        if event["ph"] == "X" and event["pid"] == ACCELERATORS_PID:
            slices[threads[ACCELERATORS_PID, event["tid"]]].append((event["ts"], event["ts"] + event["dur"] - 1,
                                                                   event["args"]["pc"]))
    dispatched, expected = {}, defaultdict(list)         # tags are reused: the latest dispatch of each
    for event in trace:
        if event["event"] == "dispatch":
            dispatched[event["pid"], event["tag"]] = event
        if event["event"] == "complete":
            start = dispatched[event["pid"], event["tag"]]
            expected[f"{event['accel']}#{event['instance']}"].append((start["cycle"], event["cycle"], event["pc"]))
    assert {name: sorted(spans) for name, spans in slices.items()} == {n: sorted(s) for n, s in expected.items()}
    for spans in slices.values():                        # one task at a time on an instance
        spans.sort()
        assert all(first[1] < second[0] for first, second in zip(spans, spans[1:]))
    [run] = [e for e in document["traceEvents"] if e["ph"] == "X" and e["pid"] == process_pid(0)]
    [end] = [e for e in trace if e["event"] == "end"]
    assert run["dur"] == end["cycle"] + 1
    assert any(e["ph"] == "i" and e["pid"] == MEMORY_PID and e["name"] == "retarget" for e in document["traceEvents"])


def test_a_misprediction_shows_aborted_slices_and_the_squash(tmp_path):
    document, trace = _run(tmp_path, _benchmark("branch_taken_dependency"))
    _check_schema(document)
    aborts = sum(e["event"] == "abort" for e in trace)
    assert aborts > 0
    assert sum(e["ph"] == "X" and e["name"].endswith("(aborted)") for e in document["traceEvents"]) == aborts
    squashes = [e for e in document["traceEvents"] if e["ph"] == "i" and e["name"] == "squash"]
    assert len(squashes) == sum(e["event"] == "squash" for e in trace)


def test_a_scheduler_without_a_cycle_trace_is_refused(tmp_path):
    out = tmp_path / "t.json"
    result = subprocess.run([sys.executable, "-m", "hts", "run", _benchmark("no_dependency"), "--scheduler",
                             "naive", "--timeline", out], capture_output=True, text=True, timeout=600)
    assert result.returncode == 1 and "--timeline needs a cycle model" in result.stderr
    assert not out.exists()


def test_the_png_draws_the_timeline(tmp_path):
    png = tmp_path / "t.png"
    _run(tmp_path, _benchmark("audio_compression"), "--timeline-png", png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
