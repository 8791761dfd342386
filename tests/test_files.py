"""Issue 49: every read of a user's file bounded, one YAML loader, clear errors.

``hts.base.files`` reads only regular files, at most one byte past a stated limit, as
UTF-8 with errors at ``file:line:col``, and YAML through one loader without aliases and
with bounded nesting; ``hts.base.errors.shown`` keeps what a user wrote short and
printable in messages. The last tests run each command that reads a file on a named pipe
and on a link to ``/dev/zero``.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from hts.base import files
from hts.base.errors import HTSError, Location, SourceError, SourceErrors, escaped, shown
from hts.base.files import decode_text, load_yaml, read_bytes, read_text

# ---- what messages show ---------------------------------------------------------------------


def test_shown_escapes_invisible_characters():
    assert shown("nul\x00 bom\ufeff esc\x1b[31m nl\n tab\t del\x7f") == \
        "nul\\x00 bom\\ufeff esc\\x1b[31m nl\\n tab\\t del\\x7f"
    assert shown("plain r300") == "plain r300"
    assert shown("é×…") == "é×…"                          # printable, if not ASCII


def test_shown_cuts_a_long_value_and_gives_its_length():
    text = shown("x" * 5000)
    assert text == "x" * 40 + "... (5,000 characters)"
    assert shown("\x00" * 100, limit=4) == "\\x00" * 4 + "... (100 characters)"
    assert shown(12345) == "12345"


def test_an_error_escapes_control_characters_but_keeps_its_lines():
    """A value that reaches a message without shown() is escaped all the same."""
    error = HTSError("bad \x1b[2J value\nsecond line", Location("f\x00.s", 3, 4))
    assert str(error) == "f\\x00.s:3:4: bad \\x1b[2J value\nsecond line"
    errors = SourceErrors([SourceError("one \x00", Location("a.s", 2)), SourceError("two \ufeff", Location("a.s", 1))])
    assert str(errors) == "a.s:1: two \\ufeff\na.s:2: one \\x00"
    assert escaped(str(errors), keep="\n") == str(errors)          # escaping twice changes nothing


# ---- bytes ----------------------------------------------------------------------------------

def test_a_file_is_read_up_to_its_limit_and_refused_one_byte_past_it(tmp_path):
    path = tmp_path / "f.s"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, 100) == b"x" * 100
    with pytest.raises(HTSError, match=r"f\.s: the program is larger than 99 bytes, its limit \(because\)"):
        read_bytes(path, 99, "program", "because")


def test_at_most_limit_plus_one_bytes_are_read_whatever_the_size(tmp_path, monkeypatch):
    """st_size is never trusted: a file of 2 GiB (sparse) costs one byte past the limit."""
    path = tmp_path / "big.bin"
    with open(path, "wb") as out:
        out.truncate(2 << 30)
    asked = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, n))
    with pytest.raises(HTSError, match="larger than 1,000 bytes"):
        read_bytes(path, 1000)
    assert sum(asked) == 1001


def _finishes(function, seconds=5.0):
    """What ``function()`` returned or raised, failing the test if it blocks."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function()
        except BaseException as error:       # noqa: BLE001 - handed to the test
            outcome["error"] = error
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read blocked"
    return outcome


@pytest.fixture
def specials(tmp_path):
    """A named pipe, a link to /dev/zero, a directory and a socket, by the kind named in errors."""
    os.mkfifo(tmp_path / "pipe.s")
    (tmp_path / "zero.s").symlink_to("/dev/zero")
    (tmp_path / "folder.s").mkdir()
    short = Path(tempfile.mkdtemp(prefix="hts"))        # a socket's path has a length limit
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(short / "sock.s"))
    yield {tmp_path / "pipe.s": "a named pipe (FIFO)", tmp_path / "zero.s": "a character device",
           tmp_path / "folder.s": "a directory", short / "sock.s": "a socket"}
    server.close()
    (short / "sock.s").unlink()
    short.rmdir()


def test_only_a_regular_file_is_read(specials):
    for path, kind in specials.items():
        outcome = _finishes(lambda: read_bytes(path, 1 << 20))
        assert isinstance(outcome.get("error"), HTSError), path
        assert str(outcome["error"]) == f"{path}: cannot read: {kind}, not a regular file"


def test_what_was_opened_is_checked_again(tmp_path, monkeypatch):
    """A path that was a regular file when looked at and is a named pipe when opened (it
    changed in between) is refused, without blocking."""
    regular = tmp_path / "regular.s"
    regular.write_text("x")
    pipe = tmp_path / "pipe.s"
    os.mkfifo(pipe)
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *args, **kwargs: real_stat(regular))
    outcome = _finishes(lambda: read_bytes(pipe, 100))
    assert "a named pipe (FIFO), not a regular file" in str(outcome.get("error"))


def test_a_missing_file(tmp_path):
    with pytest.raises(HTSError, match=r"absent\.s: cannot read: no such file"):
        read_bytes(tmp_path / "absent.s", 10)


# ---- text -----------------------------------------------------------------------------------

@pytest.mark.parametrize("data,line,col", [
    (b"caf\xe9\n", 1, 4),
    (b"one\ntwo\nab \xff", 3, 4),
    (b"one\r\ntwo\rthr\xc3\xa9e \x80", 3, 7),              # CR LF and CR end lines too; é is one column
    (b"\xef\xbb\xbfok\n\xc3", 2, 1),                        # a truncated character
])
def test_a_byte_that_is_not_utf8_is_named_at_its_line_and_column(data, line, col):
    with pytest.raises(HTSError) as info:
        decode_text(data, "t.s")
    assert info.value.location == Location("t.s", line, col)
    assert "not UTF-8 text" in str(info.value)


def test_a_leading_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "bom.s"
    path.write_bytes(b"\xef\xbb\xbfmov\n\xef\xbb\xbfx")
    assert read_text(path, 100) == "mov\n\ufeffx"              # only the leading one


# ---- YAML -----------------------------------------------------------------------------------

# Nine levels of nine-fold aliases, 9^9 nodes from 400 bytes.
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))


def test_an_alias_bomb_is_refused_at_the_alias_quickly_and_briefly():
    assert len(ALIAS_BOMB) < 450
    start = time.perf_counter()
    with pytest.raises(HTSError) as info:
        load_yaml(ALIAS_BOMB, "bomb.yaml", "sweep file")
    assert time.perf_counter() - start < 0.5
    assert info.value.location == Location("bomb.yaml", 2, 8)
    assert "aliases (*name) are not accepted: a sweep file needs none" in str(info.value)
    assert len(str(info.value)) < 200


def test_nesting_is_bounded():
    deep = files.YAML_DEPTH
    assert load_yaml("[" * deep + "]" * deep, "d.yaml").data is not None
    with pytest.raises(HTSError, match=rf"d\.yaml:1:{deep + 1}: not valid YAML: nested deeper than {deep} levels"):
        load_yaml("[" * (deep + 1) + "]" * (deep + 1), "d.yaml")
    start = time.perf_counter()
    with pytest.raises(HTSError, match="nested deeper"):           # was a RecursionError traceback
        load_yaml("a:\n" + "".join(" " * i + "- \n" for i in range(1, 5000)), "d.yaml")
    with pytest.raises(HTSError, match="nested deeper"):
        load_yaml("{a: " * 5000 + "}" * 5000, "d.yaml")
    assert time.perf_counter() - start < 1


def test_the_number_of_values_is_bounded(monkeypatch):
    monkeypatch.setattr(files, "YAML_NODES", 10)
    assert load_yaml("[1, 2, 3, 4, 5, 6, 7, 8, 9]", "n.yaml").data == list(range(1, 10))
    with pytest.raises(HTSError, match=r"n\.yaml:1:29: not valid YAML: more than 10 values"):
        load_yaml("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]", "n.yaml")


@pytest.mark.parametrize("text,where,fragment", [
    ("a: 1" + "0" * 5000, (1, 4), "a number of 5,001 characters"),      # int() refuses 4,300 digits
    ("a: [1, 2001-13-45]", (1, 8), "2001-13-45: month must be in 1..12"),
    ("a: 1\nb:\n  c: 1\n  c: 2\n", (4, 3), "b.c: given twice"),
    ("a: 1\nb: \x00\n", (2, 4), "the character U+0000 is not allowed"),
    ("a: [1, 2\n", (2, 1), "not valid YAML: expected ',' or ']'"),
    ("a: !!python/object/apply:os.system [ls]", (1, 4), "could not determine a constructor"),
    ("? [1]\n: 2\n", (1, 3), "found unhashable key"),
])
def test_every_yaml_error_is_at_its_line(text, where, fragment):
    with pytest.raises(HTSError) as info:
        load_yaml(text, "e.yaml")
    assert (info.value.location.line, info.value.location.col) == where
    assert fragment in str(info.value)


def test_the_place_of_every_key_is_kept():
    document = load_yaml("keys:\n  hts.queue_depth: [4,\n    8]\nprograms: [a.s]\n", "s.yaml")
    assert document.data == {"keys": {"hts.queue_depth": [4, 8]}, "programs": ["a.s"]}
    assert document.where("keys.hts.queue_depth[1]") == Location("s.yaml", 3, 5)
    assert document.where("programs[0]") == Location("s.yaml", 4, 12)
    assert document.where("programs[7].x") == Location("s.yaml", 4, 11)     # the nearest enclosing key
    assert load_yaml("", "empty.yaml").data is None


# ---- every command, on a named pipe and on a link to /dev/zero -----------------------------

# Runs each command in one process, one after another, and reports each one's exit status,
# stderr and seconds, and the peak memory of the whole: the high-water mark of the process's
# own memory (ru_maxrss would count the test process it was forked from). Its address space
# is bounded, so that an unbounded read fails rather than the machine.
_DRIVER = """
import contextlib, io, json, re, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from hts.cli import main
cases, report = json.loads(sys.argv[1]), []
for argv in cases:
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    report.append([status, err.getvalue(), time.perf_counter() - start])
with open("/proc/self/status") as status:
    peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read())[1])
print(json.dumps({"cases": report, "peak_kib": peak}))
"""


def test_no_command_reads_a_pipe_or_a_device(tmp_path, monkeypatch):
    """Issue 49: a named pipe blocked ``hts run`` for ever, and a link to /dev/zero read
    until memory ran out; now each is a clear error at once, in little memory."""
    monkeypatch.chdir(tmp_path)
    ok = Path(__file__).resolve().parents[1] / "examples" / "paper_independent.s"
    for name in ("pipe.s", "pipe.hex", "pipe.yaml"):
        os.mkfifo(name)
    for name in ("zero.s", "zero.bin", "zero.yaml"):
        Path(name).symlink_to("/dev/zero")
    Path("lists_pipe.yaml").write_text("keys: {hts.queue_depth: [1]}\nprograms: [pipe.s]\n")
    Path("lists_zero.yaml").write_text("keys: {hts.queue_depth: [1]}\nprograms: [zero.s]\n")
    cases = {  # argv: the file named in the error
        ("run", "pipe.s"): "pipe.s", ("run", "zero.s"): "zero.s",                   # sources
        ("run", "pipe.hex"): "pipe.hex", ("disasm", "zero.bin"): "zero.bin",        # images
        ("config", "-c", "pipe.yaml"): "pipe.yaml", ("run", str(ok), "-c", "zero.yaml"): "zero.yaml",
        ("explore", "pipe.s", "--key", "hts.queue_depth=1"): "pipe.s",                   # explore's programs
        ("explore", "zero.s", "--key", "hts.queue_depth=1"): "zero.s",
        ("explore", "--sweep", "pipe.yaml"): "pipe.yaml", ("explore", "--sweep", "zero.yaml"): "zero.yaml",
        ("explore", "--sweep", "lists_pipe.yaml"): "lists_pipe.yaml:2:12: programs[0]: pipe.s",   # at its line
        ("explore", "--sweep", "lists_zero.yaml"): "lists_zero.yaml:2:12: programs[0]: zero.s",
    }
    ran = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps([list(argv) for argv in cases])],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    for (argv, name), (status, stderr, seconds) in zip(cases.items(), result["cases"]):
        assert status == 1 and stderr.startswith(f"{name}: cannot read: ") and "not a regular file" in stderr, argv
        assert "Traceback" not in stderr and seconds < 1, (argv, seconds)
    assert result["peak_kib"] < 200 * 1024
