"""The hts command, run as a user runs it: exit status, messages, files written or not."""

import json
import re
import shutil
import subprocess
import sys
from importlib import resources

import pytest

from hts.isa import RESERVED_ACCEL_ID, Opcode, Word

EXAMPLES = resources.files("hts.examples")


def hts(*args, cwd=None, timeout=120):
    """``hts ARGS`` as a subprocess; ``timeout`` only guards against a hang."""
    return subprocess.run([sys.executable, "-m", "hts", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def example(name):
    return str(EXAMPLES.joinpath(name))


def test_console_script_is_installed():
    assert shutil.which("hts") is not None


def test_help_lists_subcommands():
    result = hts("--help")
    assert result.returncode == 0
    for command in ("asm", "disasm", "config", "demo"):
        assert command in result.stdout


def test_asm_help_describes_usage():
    result = hts("asm", "--help")
    assert result.returncode == 0
    assert "PROG.s" in result.stdout and "--config" in result.stdout and ".bin" in result.stdout


@pytest.mark.parametrize("suffix", [".hex", ".bin"])
def test_asm_then_disasm(tmp_path, suffix):
    out = tmp_path / f"branch{suffix}"
    result = hts("asm", example("paper_branch.s"), "-o", out)
    assert result.returncode == 0, result.stderr
    assert "12 instructions" in result.stdout
    listing = hts("disasm", out)
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert len(lines) == 12 and lines[3] == "if 93 a 12 0 1 0 d 0000"


def test_asm_default_output_is_in_the_current_folder_not_beside_the_source(tmp_path):
    (tmp_path / "src").mkdir()
    src = tmp_path / "src" / "loop.s"
    src.write_text(EXAMPLES.joinpath("paper_loop.s").read_text())
    assert hts("asm", src, cwd=tmp_path).returncode == 0
    assert len((tmp_path / "loop.hex").read_text().splitlines()) == 8
    assert sorted(path.name for path in (tmp_path / "src").iterdir()) == ["loop.s"]


def test_malformed_listing_exits_nonzero_and_writes_nothing(tmp_path):
    out = tmp_path / "bad.hex"
    result = hts("asm", example("paper_branch_malformed.s"), "-o", out)
    assert result.returncode == 1
    assert "paper_branch_malformed.s:2:1: 8 fields were given and 9 are expected" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_config_names_key_and_writes_nothing(tmp_path):
    cfg = tmp_path / "system.yaml"
    cfg.write_text("accelerators:\n  - {name: real_fir, latency: 921}\nhts:\n  tlb_entries: 0\n")
    out = tmp_path / "x.hex"
    result = hts("asm", example("paper_independent.s"), "-c", cfg, "-o", out)
    assert result.returncode == 1
    assert "system.yaml:4:16: hts.tlb_entries: must be >= 1, got 0" in result.stderr
    assert not out.exists()


def test_unknown_output_suffix_is_refused(tmp_path):
    result = hts("asm", example("paper_loop.s"), "-o", tmp_path / "prog.txt")
    assert result.returncode == 1 and "suffix '.txt'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_missing_source_is_an_error(tmp_path):
    result = hts("asm", tmp_path / "absent.s")
    assert result.returncode == 1 and "absent.s: cannot read" in result.stderr


def test_config_shows_assigned_ids():
    result = hts("config", "-c", "tiny")
    assert result.returncode == 0
    assert "fft_256" in result.stdout and "hts.tlb_entries" in result.stdout


def test_tools_lists_every_bundled_tool_with_a_readable_version():
    result = hts("tools")
    assert result.returncode == 0, result.stderr
    versions = dict(line.split(maxsplit=1) for line in result.stdout.splitlines())
    for tool in ("amaranth", "yosys", "symbiyosys", "nextpnr-ecp5", "yices", "verilator"):
        assert re.match(r"\d+\.\d+", versions[tool]), f"{tool}: {versions[tool]}"
    assert versions["verilator"].startswith("5.0") and "VERILATOR_ROOT=" in versions["verilator"]


def test_demo_runs(tmp_path):
    result = hts("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hts-nospec" in result.stdout and "matches sequential" in result.stdout
    assert "the assembler names the line\n  examples/paper_branch_malformed.s:" in result.stdout
    last = result.stdout.splitlines()[-1]
    assert re.fullmatch(r"== on the paper's audio compression, HTS takes [\d,]+ cycles, \d+\.\dx faster than naive, "
                        r"within \d+\.\d% of the proven optimum; every scheduler's memory equals in-order "
                        r"execution", last), last
    assert (tmp_path / "audio_compression_compare.png").exists()


BENCHMARKS = resources.files("hts.benchmarks")


def benchmark(name):
    return str(BENCHMARKS.joinpath(f"{name}.s"))


def test_run_json_has_the_documented_keys(tmp_path):
    trace = tmp_path / "trace.jsonl"
    result = hts("run", benchmark("audio_compression"), "--json", "--trace", trace)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {"cycles", "tasks", "memory_digest", "utilization", "stalls"} <= summary.keys()
    assert summary["tasks"] == 25 and summary["cycles"] > 1000
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [e["event"] for e in events].count("dispatch") >= 25
    assert all(list(e)[:2] == ["cycle", "event"] for e in events)


def test_run_schedulers_agree_on_memory():
    digests = set()
    for scheduler in ("hts", "hts-nospec", "runtime", "naive", "sequential"):
        result = hts("run", benchmark("branch_taken_dependency"), "--scheduler", scheduler, "--json")
        assert result.returncode == 0, result.stderr
        digests.add(json.loads(result.stdout)["memory_digest"])
    assert len(digests) == 1


def test_run_text_report(tmp_path):
    result = hts("run", example("paper_loop.s"))
    assert result.returncode == 0
    assert "cycles" in result.stdout and "utilization" in result.stdout and "iir" in result.stdout


def test_run_reports_a_bad_program_at_its_line(tmp_path):
    src = tmp_path / "bad.s"
    src.write_text("real_fir 10 1 40 1 0 0 0 0\nfft 1 1 1 1 0 0 0 0\n")
    trace = tmp_path / "t.jsonl"
    result = hts("run", src, "--trace", trace)
    assert result.returncode == 1 and "bad.s:2:1: unknown keyname 'fft'" in result.stderr
    assert not trace.exists()


def test_run_refuses_an_unknown_scheduler():
    result = hts("run", example("paper_loop.s"), "--scheduler", "magic")
    assert result.returncode == 1 and "invalid choice" in result.stderr


def test_run_stops_a_program_that_never_ends(tmp_path):
    src = tmp_path / "forever.s"
    src.write_text("top: real_fir 10 1 40 1 0 0 0 0\njump 0 0 top 0 0 0 0 0\n")
    result = hts("run", src, "--max-steps", "1000")
    assert result.returncode == 1
    assert "process 0 executed 1000 instructions without ending; the last 64 ran at pc 0..1 (lines 1..2)" \
        in result.stderr


@pytest.mark.system
@pytest.mark.parametrize("scheduler", ["hts", "sequential"])   # the cycle model, and the executor
def test_the_default_limit_stops_a_spin_on_every_scheduler(tmp_path, scheduler):
    """Issue 15, defect 5: a one-instruction endless loop ran for hours under ``hts run``."""
    src = tmp_path / "spin.s"
    src.write_text("spin: jump 0 0 spin 0 0 0 0\n")
    # 200,000 steps take the cycle model some 55 s of CPU alone: a loaded machine needs more than 120.
    result = hts("run", src, "--scheduler", scheduler, timeout=600)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "executed 200000 instructions without ending" in result.stderr and "pc 0..0" in result.stderr


@pytest.mark.system
def test_one_limit_for_every_scheduler(tmp_path):
    """A finite program longer than the limit fails on every scheduler alike, and runs with a higher one."""
    src = tmp_path / "long.s"
    src.write_text("lbeg 0d3000 r1 0 0 0 0 0\nmov 0 0 r2 0 0 0 0\nlend 0 r1 0 0 0 0 0\n")
    for scheduler in ("hts", "naive", "sequential"):
        assert hts("run", src, "--scheduler", scheduler, "--max-steps", "5000").returncode == 1
        assert hts("run", src, "--scheduler", scheduler, "--max-steps", "7000").returncode == 0


def test_run_refuses_too_many_programs():
    result = hts("run", example("paper_loop.s"), example("paper_loop.s"))
    assert result.returncode == 1 and "hts.processes" in result.stderr


def test_compare_writes_table_and_plot(tmp_path):
    plot = tmp_path / "cmp.png"
    result = hts("compare", benchmark("loop_no_dependency"), "--plot", plot, "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["scheduler"]: row for row in json.loads(result.stdout)["schedulers"]}
    assert set(rows) == {"naive", "runtime", "hts-nospec", "hts", "sequential"}
    assert rows["naive"]["cycles"] > rows["runtime"]["cycles"] > rows["hts"]["cycles"]
    assert all(row["memory_matches_sequential"] for row in rows.values())
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scaling_shows_progress_and_fewer_cycles_with_more_instances(tmp_path):
    plot = tmp_path / "scaling.png"
    result = hts("scaling", "--bands", "4,8", "--instances", "1,4", "--plot", plot, "--json")
    assert result.returncode == 0, result.stderr
    assert "[4/4]" in result.stderr
    cycles = {(row["bands"], row["instances"]): row["cycles"] for row in json.loads(result.stdout)["rows"]}
    assert cycles[(8, 4)] < cycles[(8, 1)] and cycles[(4, 4)] < cycles[(4, 1)]
    assert cycles[(8, 1)] > cycles[(4, 1)]
    assert plot.exists()


def test_scaling_rejects_bad_lists(tmp_path):
    result = hts("scaling", "--bands", "4,x")
    assert result.returncode == 1 and "--bands: expected an integer, got 'x'" in result.stderr


def test_bench_table_checks_every_benchmark(tmp_path):
    result = hts("bench", "--plot", tmp_path / "b.png", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert len(rows) == 11 and all(row["memory_matches_sequential"] for row in rows)
    assert all(row["naive"] > row["hts"] for row in rows)


@pytest.mark.parametrize("command", [
    ["asm", "{src_hex}"],                                   # a source named .hex: the default output is itself
    ["asm", "{src}", "-o", "{src}"],
    ["run", "{src}", "--trace", "{src}"],
    ["compare", "{src}", "--plot", "{src}"],
    ["run", "{src}", "--trace", "{dir}"],
    ["asm", "{src}", "-o", "{dir}"],
])
def test_an_output_over_an_input_or_a_directory_is_refused(tmp_path, command):
    """Issue 15, defect 3: these overwrote the user's source (or gave a traceback) and exited 0."""
    text = EXAMPLES.joinpath("paper_independent.s").read_text()
    files = {"src": tmp_path / "a.s", "src_hex": tmp_path / "src.hex", "dir": tmp_path / "out"}
    files["src"].write_text(text)
    files["src_hex"].write_text(text)
    files["dir"].mkdir()
    before = {path: path.read_text() for path in tmp_path.iterdir() if path.is_file()}
    result = hts(*(arg.format(**files) for arg in command), cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "would overwrite the input" in result.stderr or "is a directory" in result.stderr
    assert {path: path.read_text() for path in tmp_path.iterdir() if path.is_file()} == before
    assert list(files["dir"].iterdir()) == []


def test_a_negative_seed_is_a_usage_error():
    """Issue 15, defect 9: ``--seed -1`` gave a numpy traceback."""
    result = hts("run", benchmark("no_dependency"), "--seed", "-1")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "--seed: must be 0 to 2^63 - 1, got -1" in result.stderr


def _image(path, words):
    path.write_bytes(b"".join(Word(**fields).encode().to_bytes(16, "little") for fields in words))
    return path


@pytest.mark.parametrize("words,message", [
    # An output region past the end of memory ran and wrote TM without a word.
    ([dict(accel_id=0, a=0x10, b=1, c=0xFFFF, d=4)], "word 0: output region [0xffff, 0x10003) lies past the end"),
    ([dict(accel_id=RESERVED_ACCEL_ID[Opcode.LEND], b=1)], "word 0: lend without lbeg"),   # an AssertionError
    ([dict(accel_id=RESERVED_ACCEL_ID[Opcode.MOV], a=1, c=200)], "word 0: register r200 does not exist"),
    # A jump before the start: "model deadlock ... a bug in the model" under hts.
    ([dict(accel_id=0, a=0x10, b=1, c=0x40, d=1), dict(accel_id=RESERVED_ACCEL_ID[Opcode.JUMP], c=(-5) & 0xFFFF)],
     "word 1: target -4 lies before the start of the program"),
    ([dict(accel_id=0x7F)], "word 0: accelerator ID 0x7f is not in the configuration"),  # a KeyError
])
@pytest.mark.parametrize("command", ["run", "disasm"])
def test_an_image_gets_every_check_a_source_gets(tmp_path, words, message, command):
    """Issue 15, defect 4 (and 9: .bin errors named no word; disasm printed words that do not
    assemble back): raw images skipped every check."""
    result = hts(command, _image(tmp_path / "x.bin", words))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"x.bin: {message}" in result.stderr


def test_config_refuses_a_function_that_does_not_exist_at_its_line(tmp_path):
    """Issue 15, defect 9: it passed ``hts config``; only ``hts run`` refused it, with no line."""
    cfg = tmp_path / "fn.yaml"
    cfg.write_text("accelerators:\n  - {name: real_fir, latency: 921}\n  - {name: fir_b, latency: 600, function: nope}\n")
    for command in (["config"], ["run", example("paper_independent.s")]):
        result = hts(*command, "-c", cfg)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert "fn.yaml:3:43: accelerators[1].function: no accelerator function 'nope'" in result.stderr


def test_a_process_writing_outside_its_window_faults_and_run_exits_1():
    """Issue 15, defect 1: two processes writing one block ran to the end without a word."""
    programs = [example("windows_p0.s"), example("windows_p1.s")]
    result = hts("run", *programs, "-c", example("windows.yaml"), "--json")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith("windows_p1.s:6: process 1 faulted at pc 3: output region [0x30, 0x31) "
                                          "(from r1) leaves the window [0x100, 0x200)")
    [fault] = json.loads(result.stdout)["faults"]
    assert (fault["pid"], fault["pc"], fault["cause"]) == (1, 3, "OUTPUT")
    for scheduler in ("sequential", "naive"):
        assert hts("run", *programs, "-c", example("windows.yaml"), "--scheduler", scheduler).returncode == 1
    assert hts("run", programs[0], "-c", example("windows.yaml")).returncode == 0


def test_compare_refuses_a_faulting_program_and_writes_nothing(tmp_path):
    chart = tmp_path / "chart.png"
    result = hts("compare", example("windows_p0.s"), example("windows_p1.s"), "-c", example("windows.yaml"),
                 "--plot", chart)
    assert result.returncode == 1 and "process 1 faulted at pc 3" in result.stderr
    assert not chart.exists()


def test_config_lists_each_process_window():
    out = hts("config", "-c", example("windows.yaml")).stdout
    assert "windows[0]" in out and "[0x100, 0x200)" in out


def test_demo_conclusion_compares_hts_with_the_best_offline_schedule_and_naive():
    from hts.cli.demo import conclusion
    rows = [{"scheduler": "naive", "cycles": 4000, "memory_matches_sequential": True},
            {"scheduler": "hts", "cycles": 1010, "memory_matches_sequential": True}]
    reference = [{"scheduler": "heft", "cycles": 1005, "proven_optimal": None},
                 {"scheduler": "cp-sat", "cycles": 1000, "proven_optimal": False},
                 {"scheduler": "lower-bound", "cycles": 900, "proven_optimal": None}]
    assert conclusion(rows, reference) == ("HTS takes 1,010 cycles, 4.0x faster than naive, within 1.0% of the best "
                                           "schedule cp-sat found; every scheduler's memory equals in-order execution")
    rows[0]["memory_matches_sequential"] = False
    assert conclusion(rows, []).endswith("4.0x faster than naive; a scheduler's memory DIFFERS from in-order execution")


def test_examples_copies_the_shipped_programs_out_and_they_run(tmp_path):
    result = hts("examples", tmp_path / "hts-examples")
    assert result.returncode == 0, result.stderr
    copied = tmp_path / "hts-examples"
    shipped = {f"examples/{item.name}" for item in EXAMPLES.iterdir() if item.name.endswith((".s", ".yaml", ".v"))}
    shipped |= {f"benchmarks/{item.name}" for item in resources.files("hts.benchmarks").iterdir()
                if item.name.endswith(".s")}
    assert {str(path.relative_to(copied)) for path in copied.rglob("*") if path.is_file()} == shipped
    assert (copied / "examples" / "paper_loop.s").read_text() == EXAMPLES.joinpath("paper_loop.s").read_text()
    run = hts("run", copied / "benchmarks" / "no_dependency.s", "--json")
    assert run.returncode == 0, run.stderr


def test_examples_writes_over_nothing(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "paper_loop.s").write_text("mine\n")
    result = hts("examples", tmp_path)
    assert result.returncode == 1 and "nothing copied" in result.stderr
    assert (tmp_path / "examples" / "paper_loop.s").read_text() == "mine\n"
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["examples", "paper_loop.s"]
