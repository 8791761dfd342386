"""Assembler and disassembler: the paper's listings, every error check, round trips."""

import re
from importlib import resources

import pytest
from hypothesis import given, settings

from hts.assembler import assemble, disassemble, read_image, write_image
from hts.base.config import with_values
from hts.base.errors import HTSError, SourceError
from hts.isa import Word

from program_text import program_sources

EXAMPLES = resources.files("hts.examples")


def source(name: str) -> str:
    return EXAMPLES.joinpath(name).read_text()


@pytest.mark.parametrize("name,count", [("paper_independent.s", 5), ("paper_loop.s", 8), ("paper_branch.s", 12)])
def test_paper_listings_assemble(default_config, name, count):
    program = assemble(source(name), default_config, name)
    assert len(program) == count
    again = assemble("\n".join(disassemble(program, default_config)), default_config)
    assert again.words == program.words


def test_first_listing_words(default_config):
    # real_fir 10 2 13 2 0 0 0 0000: accel 0, A=0x10, B=2, C=0x13, D=2, all else zero
    program = assemble(source("paper_independent.s"), default_config)
    assert program.words[0] == 0x0002_0013_0200_1000
    assert program.lines == (1, 2, 3, 4, 5)


def test_branch_listing_fields(default_config):
    program = assemble(source("paper_branch.s"), default_config)
    branch = next(w for w in program.decoded if w.opcode.name == "IF")
    assert (branch.a, branch.b, branch.offset) == (0x93, 0xA, 18)
    assert branch.memory_branch and branch.speculate and branch.cond.name == "NEQ"
    mov = program.decoded[0]     # eight fields as printed: K = 1, metadata left out
    assert (mov.a, mov.c, mov.k, mov.metadata) == (3, 0xA, 1, 0)


def test_malformed_listing_fails_at_line_2(default_config):
    with pytest.raises(SourceError) as info:
        assemble(source("paper_branch_malformed.s"), default_config, "paper_branch_malformed.s")
    errors = info.value.errors
    assert len(errors) == 1
    assert errors[0].location.line == 2
    assert "8 fields were given and 9 are expected" in str(errors[0])


def test_extended_syntax_matches_plain_form(default_config):
    extended = assemble(source("labels.s"), default_config)
    plain = assemble(source("paper_loop.s"), default_config)
    # same loop, same words except lend's reserved C field (2 in the paper, 0 in labels.s)
    assert extended.words[:7] == plain.words[:7]
    assert extended.labels == {"done": 10}
    assert extended.decoded[8].offset == 2


ERRORS = [
    # (source, line, col, message fragment)
    ("fir 1 1 2 1 0 0 0 0\n", 1, 1, "unknown keyname 'fir'"),
    ("real_fir 1 1 2 1 0 0 0\n", 1, 1, "8 fields were given and 9 are expected"),
    ("mov 1 0 2 0 0 0\n", 1, 1, "7 fields were given and 8 or 9 are expected"),
    ("real_fir 1 100 2 1 0 0 0 0\n", 1, 12, "field B of real_fir = 0x100 does not fit in 8 bits"),
    ("real_fir 1 1 2 1 10 0 0 0\n", 1, 18, "does not fit in 4 bits"),
    ("real_fir 1 1 2 1 0 0 0 1000000000000000\n", 1, 24, "does not fit in 60 bits"),
    ("real_fir 1 1 2 1 0 1 0 0\n", 1, 20, "pid 1 does not exist (hts.processes = 1)"),
    ("jump 0 0 nowhere 0 0 0 0 0\n", 1, 10, "undefined label 'nowhere'"),
    ("top: mov 1 0 2 0 0 0 0 0\ntop: mov 1 0 2 0 0 0 0 0\n", 2, 1, "duplicate label 'top' (first defined at line 1)"),
    ("beef: mov 1 0 2 0 0 0 0 0\n", 1, 1, "reads as a number"),
    ("lend 0 r1 0 0 0 0 0 0\n", 1, 1, "lend without lbeg"),
    ("lbeg 2 r1 0 0 0 0 0 0\n", 1, 1, "lbeg without lend"),
    ("lbeg 2 r1 0 0 0 0 0 0\nlend 0 r2 0 0 0 0 0 0\n", 2, 8, "innermost open loop (line 1) is counted by r1"),
    ("".join(f"lbeg 2 r{i} 0 0 0 0 0 0\n" for i in range(5)) + "".join(
        f"lend 0 r{i} 0 0 0 0 0 0\n" for i in reversed(range(5))), 5, 1, "hts.loop_depth = 4"),
    ("add r1 r2 r16 0 0 0 0 0\n", 1, 11, "register r16 does not exist (hts.gprs = 16)"),
    ("mov 1 0 r1 0 0 0 0\n" * 1025, 1025, 1, "more than program memory holds (hts.program_words = 1024)"),
    ("add 1 2 10 0 0 0 0 0\n", 1, 9, "register r16 does not exist"),
    ("real_fir fff 2 0 1 0 0 0 0\n", 1, 10, "input region [0xfff, 0x1001) lies past the end of memory"),
    ("real_fir 0 1 ffe 3 0 0 0 0\n", 1, 14, "output region [0xffe, 0x1001)"),
    ("if 1000 r1 2 0 0 0 8 0\n", 1, 4, "block 0x1000 read by the branch lies past the end of memory"),
    ("real_fir r1 1 2 1 0 0 0 0\n", 1, 10, "'r1' names a register, but field A of real_fir holds a block index "
                                          "(set K bit 0"),
    ("mov r1 0 r2 0 0 0 0 0\n", 1, 5, "field A of mov holds a number"),
    ("real_fir 1 1 2 1 0 0 0 zz\n", 1, 24, "'zz' is not a number"),
    ("real_fir 1 -1 2 1 0 0 0 0\n", 1, 12, "cannot be negative"),
    ("jump 0 0 -8001 0 0 0 0 0\n", 1, 10, "does not fit in 16 signed bits"),
    ("jump 0 0 -1 0 0 0 0 0\n", 1, 10, "target -1 lies before the start"),
    ("jump 0 0 2 0 0 0 0 0\nlbeg 2 r1 0 0 0 0 0 0\nin: mov 1 0 r2 0 0 0 0 0\nlend 0 r1 0 0 0 0 0 0\n", 1, 10,
     "different loop body"),
    ("lbeg 2 r1 0 0 0 0 0 0\njump 0 0 out 0 0 0 0 0\nlend 0 r1 0 0 0 0 0 0\nout: mov 1 0 r2 0 0 0 0 0\n", 2, 10,
     "only through lbeg and lend"),
    ("mov 1 0 r2 0 0 0 0 0 next:\n", 1, 22, "must start its line"),
]


@pytest.mark.parametrize("text,line,col,fragment", ERRORS)
def test_error_names_line_and_column(default_config, text, line, col, fragment):
    with pytest.raises(SourceError) as info:
        assemble(text, default_config, "bad.s")
    first = getattr(info.value, "errors", [info.value])[0]
    assert fragment in first.message
    assert (first.location.file, first.location.line, first.location.col) == ("bad.s", line, col)
    assert str(first).startswith(f"bad.s:{line}:{col}: ")


def test_all_errors_of_a_pass_are_reported(default_config):
    text = "add r1 r2 r20 0 0 0 0 0\nmov 1 0 r2 0 0 0 0 0\nmul r30 r1 r1 0 0 0 0 0\n"
    with pytest.raises(SourceError) as info:
        assemble(text, default_config, "bad.s")
    assert [e.location.line for e in info.value.errors] == [1, 3]


def test_jumps_may_leave_everything_by_ending_the_program(default_config):
    program = assemble("lbeg 2 r1 0 0 0 0 0 0\njump 0 0 40 0 0 0 0 0\nlend 0 r1 0 0 0 0 0 0\n", default_config)
    assert program.decoded[1].offset == 0x40


@settings(max_examples=300)
@given(program_sources(__import__("hts.base.config", fromlist=["load_config"]).load_config("default")))
def test_assemble_disassemble_assemble_is_identity(text):
    from hts.base.config import load_config
    config = load_config("default")
    program = assemble(text, config)
    plain = disassemble(program, config)
    assert assemble("\n".join(plain), config).words == program.words


@pytest.mark.parametrize("suffix", [".hex", ".bin"])
def test_image_round_trip(default_config, tmp_path, suffix):
    program = assemble(source("paper_branch.s"), default_config)
    path = tmp_path / f"prog{suffix}"
    write_image(path, program)
    assert read_image(path).words == program.words
    data = path.read_bytes()
    if suffix == ".hex":
        lines = data.decode().splitlines()
        assert len(lines) == 12 and all(len(line) == 32 for line in lines)
    else:
        assert len(data) == 12 * 16
        assert int.from_bytes(data[:16], "little") == program.words[0]


def test_hex_image_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.hex"
    path.write_text("0" * 32 + "\n" + "g" * 32 + "\n")
    with pytest.raises(SourceError, match=r"bad.hex:2:1: 'g+' is not a 128-bit hex word"):
        read_image(path)


def test_disassembler_rejects_unknown_ids(default_config):
    from hts.assembler import Program
    with pytest.raises(SourceError, match="0x80 is not in the configuration"):
        disassemble(Program((Word(accel_id=0x80).encode(),)), default_config)
    with pytest.raises(SourceError, match="0xff is reserved"):
        disassemble(Program((Word(accel_id=0xFF).encode(),)), default_config)


@pytest.mark.parametrize("distance,fits", [(-32768, True), (32767, True), (-40000, False), (32768, False)])
def test_a_label_out_of_offset_reach_is_refused(default_config, distance, fits):
    """Issue 15, defect 2: a jump 40,000 instructions back used to wrap to a wrong offset."""
    config = with_values(default_config, {"hts.program_words": 65536})
    filler = ["mov 0 0 r0 0 0 0 0"] * (abs(distance) - 1)
    if distance < 0:
        lines = ["far:", "mov 0 0 r0 0 0 0 0", *filler, "jump 0 0 far 0 0 0 0"]
    else:
        lines = ["jump 0 0 far 0 0 0 0", *filler, "far:", "mov 0 0 r0 0 0 0 0"]
    if fits:
        program = assemble("\n".join(lines), config, "far.s")
        jump = next(word for word in program.decoded if word.opcode.name == "JUMP")
        assert jump.offset == distance
    else:
        message = re.escape(f"label 'far' is {distance:+d} instructions away")
        with pytest.raises(SourceError, match=rf"far\.s:\d+:\d+: {message}"):
            assemble("\n".join(lines), config, "far.s")


@pytest.mark.parametrize("separator", ["\f", "\u2028", "\x1c", "\v"])
def test_a_comment_ends_only_at_a_line_end(default_config, separator):
    """Issue 15, defect 9: ``str.splitlines`` ended a comment at a form feed or U+2028, so the
    "commented-out" task after it was assembled, and later line numbers shifted."""
    text = f"; old: {separator}real_fir 10 1 40 1 0 0 0 0\nreal_fir 10 1 40 1 0 0 0 0\nbad\n"
    with pytest.raises(SourceError) as info:
        assemble(text, default_config, "sep.s")
    assert [error.location.line for error in info.value.errors] == [3]
    assert len(assemble(text.replace("bad\n", ""), default_config)) == 1


def test_lines_end_at_lf_crlf_and_cr(default_config):
    program = assemble("real_fir 10 1 40 1 0 0 0 0\r\nreal_fir 10 1 40 1 0 0 0 0\rreal_fir 10 1 40 1 0 0 0 0\n",
                       default_config)
    assert program.lines == (1, 2, 3)


@pytest.mark.parametrize("token", ["0d" + "9" * 5000, "1" * 100_000])
def test_a_huge_number_is_refused_briefly(default_config, token):
    """Issue 15, defect 9: 5,000 decimal digits gave a ValueError traceback; 100,000 hex digits
    were echoed in full."""
    with pytest.raises(SourceError) as info:
        assemble(f"real_fir {token} 1 40 1 0 0 0 0", default_config, "big.s")
    message = str(info.value)
    assert "big.s:1:10:" in message and "is too long for field A" in message
    assert f"({len(token):,} characters)" in message and len(message) < 200


def test_an_oversized_source_is_refused_before_it_is_read(default_config, tmp_path):
    """Issue 15, defect 9: a 50 MB source took 152 s and 5.5 GB before the size check."""
    from hts.assembler import assemble_file, source_limit
    limit = source_limit(default_config)
    path = tmp_path / "huge.s"
    path.write_text(";" * (limit + 1))
    with pytest.raises(HTSError, match=rf"huge\.s: the source is larger than {limit:,} bytes, its limit "
                                       r"\(512 per instruction of program memory, hts\.program_words = 1024"):
        assemble_file(path, default_config)
    path.write_text(";" * limit)
    assert len(assemble_file(path, default_config)) == 0
    with pytest.raises(SourceError, match="is longer than any program"):
        assemble(";" * (limit + 1), default_config, "text.s")


@pytest.mark.parametrize("suffix", [".hex", ".bin"])
def test_an_oversized_image_is_refused_unread(default_config, tmp_path, monkeypatch, suffix):
    """Issue 49: the limit is checked on the bytes read, at most one past it, not on st_size."""
    import os
    from hts.assembler import load_program, source_limit
    path = tmp_path / f"huge{suffix}"
    with open(path, "wb") as out:             # sparse: no disk or time to write it
        out.truncate(source_limit(default_config) + 16)
    read = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    with pytest.raises(HTSError, match=rf"huge\{suffix}: the image is larger than [\d,]+ bytes, its limit"):
        load_program(path, default_config)
    assert sum(read) <= source_limit(default_config) + 1


@pytest.mark.parametrize("line,col,register", [
    ("add 4 r300 5 0 5 0 0 0001", 7, "r300"),                    # B is 8 bits: a ValueError traceback
    ("mov 58 0 r70000 0 1 0 0 0001", 10, "r70000"),              # C is 16 bits
    ("mov 58 0 r" + "1" * 5000 + " 0 1 0 0 0001", 10, "r" + "1" * 40 + "... (5,000 characters)"),
    ("mov 58 0 r300 0 1 0 0 0001", 10, "r300"),                  # fits the field: the checker's error
])
def test_a_register_past_its_field_is_an_error_at_its_column(default_config, line, col, register):
    """Issue 49: r300 in an 8-bit field, r70000 in a 16-bit one and a register of 5,000
    digits were tracebacks (``does not fit in 8 bits``, ``Exceeds the limit (4300 digits)``)."""
    with pytest.raises(SourceError) as info:
        assemble(line, default_config, "regs.s")
    assert str(info.value) == f"regs.s:1:{col}: register {register} does not exist (hts.gprs = 16)"


def test_a_source_that_is_not_utf8_is_named_at_its_line_and_column(default_config, tmp_path):
    """Issue 49: the error gave a byte offset (``position 29``), not a line."""
    from hts.assembler import assemble_file
    path = tmp_path / "latin1.s"
    path.write_bytes(b"mov 58 0 2 0 1 0 0 0001\r\nmov 58 0 2 0 1 0 0 0001 ; caf\xe9\n")
    with pytest.raises(HTSError) as info:
        assemble_file(path, default_config)
    assert str(info.value).endswith("latin1.s:2:30: not UTF-8 text: the byte 0xe9 cannot start or continue a "
                                    "character")


@pytest.mark.parametrize("text,shown_as", [
    ("mov\ufeff 58 0 2 0 1 0 0 0001", "'mov\\ufeff'"),
    ("mov 5\x008 0 2 0 1 0 0 0001", "'5\\x008'"),
    ("mov 58 0 2 0 1 0 0 00\x1b[31m01", "'00\\x1b[31m01'"),
    ("\x1b[2J: mov 58 0 2 0 1 0 0 0001", "label '\\x1b[2J' must"),
    ("real_fir 10 1 40 1 0 0 0 0\nx" + "\x07" * 500 + ": mov 58 0 2 0 1 0 0 0001", "'x" + "\\x07" * 39 + "...'"),
])
def test_invisible_characters_of_a_source_are_escaped_in_errors(default_config, text, shown_as):
    """Issue 49: a BOM, a NUL or a terminal escape in a token was echoed raw."""
    with pytest.raises(SourceError) as info:
        assemble(text, default_config, "ctl.s")
    message = str(info.value)
    assert shown_as.rstrip(".'") in message and message.isprintable() and len(message) < 300


def test_a_leading_byte_order_mark_is_no_part_of_the_source(default_config, tmp_path):
    from hts.assembler import assemble_file
    path = tmp_path / "bom.s"
    path.write_bytes(b"\xef\xbb\xbfmov 58 0 2 0 1 0 0 0001\n")
    assert len(assemble_file(path, default_config)) == 1


def test_disasm_reads_an_image_within_the_limit(default_config, tmp_path):
    """Issue 49: ``hts disasm`` read an image of any size whole."""
    from hts.assembler import load_image, source_limit
    path = tmp_path / "huge.bin"
    with open(path, "wb") as out:
        out.truncate(source_limit(default_config) + 16)
    with pytest.raises(HTSError, match=r"huge\.bin: the image is larger than 1,048,576 bytes"):
        load_image(path, default_config)
