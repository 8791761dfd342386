"""System configuration: presets, validation errors that name the key path and line."""

import textwrap

import pytest

from hts.base.config import PRESETS, SystemConfig, load_config, parse_config, with_value, with_values
from hts.base.errors import ConfigError
from hts.isa import FIRST_RESERVED_ACCEL_ID

# Table II of the HTS paper, typed in from the paper.
TABLE_II_CYCLES = {
    "real_fir": 921, "complex_fir": 3696, "adaptive_fir": 4384, "iir": 2450, "vector_dot": 53,
    "vector_add": 131, "vector_max": 55, "fft_256": 18673, "dct_64": 874, "correlation": 753,
}

MINIMAL = """\
accelerators:
  - {name: fft_256, count: 2, latency: 18673}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_hold_table_ii(preset):
    config = load_config(preset)
    assert {acc.name: acc.latency for acc in config.accelerators} == TABLE_II_CYCLES
    assert config.timing.interrupt_latency == 876 and config.timing.l2_latency == 23


def test_default_is_the_default(default_config):
    assert load_config(None) == default_config
    assert default_config.memory.block_words == 64 and default_config.memory.blocks == 4096


def test_tiny_has_one_entry_everywhere(tiny_config):
    h = tiny_config.hts
    assert (h.tracker_entries, h.tlb_entries, h.queue_depth) == (1, 1, 1)
    assert {acc.count for acc in tiny_config.accelerators} == {1}


def test_inflight128_grows_only_what_holds_tasks_in_flight(default_config):
    config = load_config("inflight128")
    h, d = config.hts, default_config.hts
    changed = {name for name in vars(h) if getattr(h, name) != getattr(d, name)}
    assert changed == {"tracker_entries", "tracker_lanes", "tlb_entries", "tm_blocks"}
    assert h.tracker_entries == h.tlb_entries == 128 and h.tm_blocks // h.tlb_entries == 16
    # Its searches take four cycles, against the default's two.
    assert (h.tracker_rows, d.tracker_rows) == (4, 2)
    assert config.accelerators == default_config.accelerators and config.memory == default_config.memory


def test_missing_sections_take_defaults():
    config = parse_config(MINIMAL)
    assert config.hts == SystemConfig().hts
    assert config.accelerators[0].id == 0 and config.accelerators[0].count == 2


def test_ids_auto_assigned_around_explicit_ones():
    config = parse_config(textwrap.dedent("""\
        accelerators:
          - {name: a, latency: 1}
          - {name: b, latency: 1, id: 0}
          - {name: c, latency: 1}
          - {name: d, latency: 1, id: 1}
        """))
    assert [acc.id for acc in config.accelerators] == [2, 0, 3, 1]


def test_widths_are_derived_from_sizes(default_config, tiny_config):
    assert default_config.widths.gpr_index == 4
    assert default_config.widths.phys_block == 13       # 4096 home + 256 TM blocks
    assert tiny_config.widths.instance == 1
    assert default_config.widths.tag == 4 and default_config.widths.pc == 10
    assert default_config.widths.region_blocks == 8


BAD_CONFIGS = [
    # (yaml, key path in the message, line, message fragment)
    (MINIMAL + "hts: {queue_depth: 0}\n", "hts.queue_depth", 3, "must be >= 1, got 0"),
    (MINIMAL + "hts:\n  windw: 4\n", "hts.windw", 4, "unknown key"),
    (MINIMAL + "hts:\n  speculation: 1\n", "hts.speculation", 4, "must be true or false"),
    (MINIMAL + "hts:\n  gprs: many\n", "hts.gprs", 4, "must be an integer"),
    (MINIMAL + "memory: {block_words: 48}\n", "memory.block_words", 3, "power of two"),
    (MINIMAL + "memory: {blocks: 70000}\n", "memory.blocks", 3, "must be <= 65536"),
    (MINIMAL + "hts: {processes: 17}\n", "hts.processes", 3, "must be <= 16"),
    (MINIMAL + "timing: {interrupt_latency: -1}\n", "timing.interrupt_latency", 3, ">= 0"),
    (MINIMAL + "memroy: {}\n", "memroy", 3, "unknown key"),
    ("hts: {queue_depth: 4}\n", "accelerators", 1, "missing"),
    ("accelerators: []\n", "accelerators", 1, "non-empty list"),
    ("accelerators:\n  - {name: fft, count: 2}\n", "accelerators[0]", 2, "missing required key 'latency'"),
    ("accelerators:\n  - {name: fft, latency: 0}\n", "accelerators[0].latency", 2, ">= 1"),
    ("accelerators:\n  - {name: a, latency: 1}\n  - {name: a, latency: 2}\n", "accelerators[1].name", 3,
     "already named accelerators[0]"),
    ("accelerators:\n  - {name: a, latency: 1, id: 5}\n  - {name: b, latency: 1, id: 5}\n",
     "accelerators[1].id", 3, "already taken"),
    ("accelerators:\n  - {name: mov, latency: 1}\n", "accelerators[0].name", 2, "reserved"),
    ("accelerators:\n  - {name: Fft-256, latency: 1}\n", "accelerators[0].name", 2, "not a keyname"),
    (f"accelerators:\n  - {{name: a, latency: 1, id: {FIRST_RESERVED_ACCEL_ID}}}\n", "accelerators[0].id", 2,
     f"must be <= {FIRST_RESERVED_ACCEL_ID - 1}"),
    ("accelerators:\n  - {name: a, latency: 1, colour: red}\n", "accelerators[0].colour", 2, "unknown key"),
    (MINIMAL + "hts: {queue_depth: 4}\nhts: {queue_depth: 5}\n", "hts", 4, "given twice"),
    ("- just\n- a list\n", "", 1, "must be a mapping"),
    (MINIMAL + "windows:\n  - {base: 0, blocks: 8}\n  - {base: 8, blocks: 8}\n", "windows", 4,
     "one window {base, blocks} per process (hts.processes = 1)"),
    (MINIMAL + "memory: {blocks: 64}\nwindows:\n  - {base: 0x30, blocks: 0x20}\n", "windows[0].blocks", 5,
     "passes the end of home memory"),
    (MINIMAL + "hts: {processes: 2}\nwindows:\n  - {base: 0, blocks: 8}\n  - {base: 4, blocks: 8, shared: true}\n",
     "windows[1].base", 6, "overlaps windows[0]"),
    (MINIMAL + "windows:\n  - {base: 0, blocks: 0}\n", "windows[0].blocks", 4, "must be >= 1"),
]


def test_windows_may_overlap_where_both_are_shared():
    config = parse_config(MINIMAL + "hts: {processes: 3}\nwindows:\n  - {base: 0, blocks: 8, shared: true}\n"
                                    "  - {base: 4, blocks: 8, shared: true}\n  - {base: 12, blocks: 4}\n")
    assert [(w.base, w.end, w.shared) for w in config.windows] == [(0, 8, True), (4, 12, True), (12, 16, False)]
    assert config.window(2).holds(12, 4) and not config.window(2).holds(11, 2) and config.window(2).holds(0, 0)


def test_without_windows_every_process_sees_all_of_home_memory(default_config):
    window = default_config.window(0)
    assert (window.base, window.end) == (0, default_config.memory.blocks)


@pytest.mark.parametrize("text,key,line,fragment", BAD_CONFIGS)
def test_bad_config_names_key_and_line(tmp_path, text, key, line, fragment):
    path = tmp_path / "system.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert err.key == key
    assert fragment in str(err)
    assert err.location.file.endswith("system.yaml")
    assert err.location.line == line
    assert str(err).startswith(f"{err.location}: {key}" if key else str(err.location))


def test_invalid_yaml_names_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(MINIMAL + "hts: {queue_depth: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML") as info:
        load_config(path)
    assert info.value.location.line is not None


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such configuration file or preset"):
        load_config(tmp_path / "absent.yaml")


def test_config_is_frozen(default_config):
    with pytest.raises(AttributeError):
        default_config.hts.queue_depth = 3


@pytest.mark.parametrize("text,line", [
    # Nine levels of nine-fold aliases took 60 s and 3.85 GB before a MemoryError traceback.
    ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b]\n", 2),
    ("a: &a [*a]\n", 1),                # a self-referencing alias gave a RecursionError traceback
])
def test_yaml_aliases_are_refused_with_their_line(text, line):
    """Issue 15, defect 9: YAML alias bombs."""
    with pytest.raises(ConfigError, match=rf"bomb\.yaml:{line}:\d+: not valid YAML: aliases"):
        parse_config(text, "bomb.yaml")


def test_a_memory_too_large_to_simulate_is_refused_at_its_key():
    """Issue 15, defect 9: the largest legal sizes passed ``hts config``; ``hts run`` then
    tried to allocate 16 GiB."""
    text = textwrap.dedent("""\
        memory:
          block_words: 65536
          blocks: 65536
        accelerators:
          - {name: real_fir, latency: 921}
        hts:
          tm_blocks: 65536
        """)
    with pytest.raises(ConfigError, match=r"big\.yaml:2:16: memory\.block_words: .* = 8,589,934,592 words "
                                          r"\(32\.0 GiB\) is more than the simulators hold"):
        parse_config(text, "big.yaml")


def test_with_value_sets_accelerator_fields_for_every_class_or_one():
    tiny = load_config("tiny")
    assert {acc.count for acc in with_value(tiny, "accelerators.count", 2).accelerators} == {2}
    one = with_value(tiny, "accelerators.fft_256.latency", 100)
    assert [acc.latency for acc in one.accelerators if acc.name == "fft_256"] == [100]
    assert [acc for acc in one.accelerators if acc.name != "fft_256"] == \
        [acc for acc in tiny.accelerators if acc.name != "fft_256"]
    with pytest.raises(ConfigError, match="accelerators.fir.count: no accelerator class 'fir'"):
        with_value(tiny, "accelerators.fir.count", 2)
    with pytest.raises(ConfigError, match="accelerators.count"):
        with_value(tiny, "accelerators.count", 0)


def test_with_values_sets_several_keys_and_validates_them_together():
    tiny = load_config("tiny")
    both = with_values(tiny, {"hts.queue_depth": 4, "accelerators.fft_256.latency": 7, "memory.blocks": 100})
    assert (both.hts.queue_depth, both.memory.blocks) == (4, 100)
    assert [acc.latency for acc in both.accelerators if acc.name == "fft_256"] == [7]
    assert both.source == "<preset tiny> with hts.queue_depth=4, accelerators.fft_256.latency=7, memory.blocks=100"
    assert with_values(tiny, {}) == tiny
    with pytest.raises(ConfigError, match="hts.queue_depth: must be >= 1"):
        with_values(tiny, {"hts.queue_depth": 0, "memory.blocks": 100})


# ---- issue 49: bounded reads, one loader, clear errors -------------------------------------

def test_a_configuration_nested_5000_deep_is_an_error_at_its_line(tmp_path):
    """Issue 49: ``hts run PROG -c deep.yaml`` and ``hts config -c deep.yaml`` were
    RecursionError tracebacks."""
    path = tmp_path / "deep.yaml"
    path.write_text("hts:\n  queue_depth: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.yaml:2:46: not valid YAML: nested deeper than 32 levels"):
        load_config(path)


def test_an_alias_bomb_of_400_bytes_is_refused_quickly(tmp_path):
    import time
    from test_files import ALIAS_BOMB
    path = tmp_path / "bomb.yaml"
    path.write_text(MINIMAL + ALIAS_BOMB)
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert time.perf_counter() - start < 0.5 and len(info.value.message) < 200
    assert (info.value.location.line, info.value.location.col) == (4, 8)
    assert info.value.message.startswith("not valid YAML: aliases (*name) are not accepted: a configuration "
                                         "needs none")


def test_a_configuration_past_its_size_limit_is_refused(tmp_path):
    from hts.base import files
    path = tmp_path / "big.yaml"
    path.write_text(MINIMAL + "#" * (files.CONFIG_BYTES - len(MINIMAL)))
    assert load_config(path).accelerators[0].name == "fft_256"
    path.write_text(MINIMAL + "#" * (files.CONFIG_BYTES - len(MINIMAL) + 1))
    with pytest.raises(ConfigError, match=rf"big\.yaml: the configuration file is larger than {files.CONFIG_BYTES:,} "
                                          "bytes"):
        load_config(path)


@pytest.mark.parametrize("value,fragment", [
    ("1" + "0" * 5000, "not valid YAML: a number of 5,001 characters"),       # a ValueError traceback
    ("1" + "0" * 300, "not valid YAML: a number of 301 characters"),          # echoed in full
    ("2001-02-30", "not valid YAML: 2001-02-30: day is out of range for month"),
    ('"\\x1b[31mred\\u202e"', r"must be an integer, got '\x1b[31mred\u202e'"),
    ('"' + "x" * 5000 + '"', "must be an integer, got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (5,002 characters)"),
])
def test_values_are_refused_briefly_and_printably(value, fragment):
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + f"hts: {{queue_depth: {value}}}\n", "v.yaml")
    assert str(info.value).startswith("v.yaml:3:20: ") and fragment in str(info.value)
    assert len(str(info.value)) < 200 and str(info.value).isprintable()


def test_keys_are_shown_escaped():
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + 'hts: {"bo\\x1bgus\\0": 1}\n', "k.yaml")
    assert str(info.value).startswith("k.yaml:3:22: hts.bo\\x1bgus\\x00: unknown key")
    with pytest.raises(ConfigError) as info:
        with_value(load_config("tiny"), "accelerators.\x1b]0;x\x07.count", 2)
    assert "no accelerator class '\\x1b]0;x\\x07'" in str(info.value) and str(info.value).isprintable()


def test_a_value_set_on_every_class_is_written_without_aliases():
    """``accelerators.count=[1]`` sets one list in every class; it is refused as a wrong
    type, not as an alias of the internal file."""
    with pytest.raises(ConfigError, match=r"accelerators\[0\]\.count: must be an integer, got \[1\]"):
        with_value(load_config("tiny"), "accelerators.count", [1])
