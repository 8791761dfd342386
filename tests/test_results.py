"""docs/results.md's tables rewritten in place (``python -m hts.flows.results``): markers
parsed with their lines, only the text between them replaced, the chosen tables measured,
and a stale table found by ``--check``. A fake registry stands in for the measurements,
except in the last test, which checks one real table of the real page."""

from pathlib import Path

import pytest

from hts.base.errors import HTSError
from hts.flows import results
from hts.flows.results import Table, block_text, parse_blocks, regenerate, replace_blocks, stale_tables

PAGE = Path(__file__).resolve().parents[1] / "docs" / "results.md"

PROSE_BEFORE = "# Results\n\nProse with  two spaces,\ttabs and trailing blanks   \n\n"
PROSE_BETWEEN = "\nMore prose: `| not | a table |`.\n\n"
PROSE_AFTER = "\nThe end, with no final newline."


def _page(first="old first\n", second="old second\n") -> str:
    return (PROSE_BEFORE + "<!-- results:first -->\n" + first + "<!-- /results -->\n" + PROSE_BETWEEN
            + "<!-- results:second -->\n" + second + "<!-- /results -->\n" + PROSE_AFTER)


class Registry:
    """Tables whose bodies are set by the test, counting how often each was measured."""

    def __init__(self, **kinds):
        self.bodies = {name: f"| {name} |\n|---|" for name in ("first", "second", "third")}
        self.measured = []
        self.tables = {name: Table(name, f"make {name}", self._make(name), **kinds.get(name, {}))
                       for name in self.bodies}

    def _make(self, name):
        def make(run):
            self.measured.append(name)
            return self.bodies[name]
        return make


def _write(tmp_path, text) -> Path:
    page = tmp_path / "results.md"
    page.write_text(text)
    return page


def _quiet(message):
    pass


# ---- markers -------------------------------------------------------------------------------

def test_markers_give_each_table_its_name_and_lines():
    blocks = parse_blocks(_page(), "results.md")
    assert [(block.name, block.start, block.end) for block in blocks] == [("first", 4, 6), ("second", 10, 12)]


@pytest.mark.parametrize("text, line, words", [
    ("a\n<!-- results:one -->\nx\n", 2, "not closed"),
    ("<!-- results:one -->\n<!-- results:two -->\n<!-- /results -->\n", 2, "starts inside table 'one'"),
    ("a\nb\n<!-- /results -->\n", 3, "without a table open"),
    ("<!-- results:one -->\n<!-- /results -->\n<!-- results:one -->\n<!-- /results -->\n", 3, "marked twice"),
    ("<!-- results:Bench_Default -->\n<!-- /results -->\n", 1, "lower-case words"),
])
def test_a_marker_out_of_place_is_an_error_at_its_line(text, line, words):
    with pytest.raises(HTSError, match=words) as caught:
        parse_blocks(text, "page.md")
    assert (caught.value.location.file, caught.value.location.line) == ("page.md", line)


def test_replacing_a_table_leaves_every_other_line_as_it_was():
    text = _page()
    new = replace_blocks(text, parse_blocks(text, "results.md"), {"second": "new\nlines\n"})
    assert new == _page(second="new\nlines\n")
    assert new.startswith(PROSE_BEFORE) and new.endswith(PROSE_AFTER) and PROSE_BETWEEN in new


# ---- rewriting -----------------------------------------------------------------------------

def test_a_plain_run_rewrites_the_cheap_tables_with_heading_and_date_and_nothing_else(tmp_path):
    registry = Registry(second={"expensive": True})
    page = _write(tmp_path, _page())
    assert regenerate(page, tables=registry.tables, today="2030-01-02", progress=_quiet) == ["first"]
    assert registry.measured == ["first"]
    first = registry.tables["first"]
    assert page.read_text() == _page(first=block_text(first, "2030-01-02", registry.bodies["first"]))
    assert ("Measured 2030-01-02 by `make first`; regenerate: `python -m hts.flows.results --table first`.\n\n"
            "| first |\n|---|\n\n") == block_text(first, "2030-01-02", registry.bodies["first"])


def test_an_expensive_table_is_measured_when_named(tmp_path):
    registry = Registry(second={"expensive": True, "duration": "an hour"})
    page = _write(tmp_path, _page())
    regenerate(page, ["second"], tables=registry.tables, today="2030-01-02", progress=_quiet)
    assert registry.measured == ["second"]
    assert "Measured 2030-01-02 by `make second`; regenerate (an hour): " in page.read_text()
    assert "old first\n" in page.read_text()


def test_unknown_names_are_errors_before_anything_is_measured(tmp_path):
    registry = Registry()
    page = _write(tmp_path, _page())
    with pytest.raises(HTSError, match="--table: unknown table 'fourth'"):
        regenerate(page, ["first", "fourth"], tables=registry.tables, progress=_quiet)
    with pytest.raises(HTSError, match="'third' has no <!-- results:third --> marker"):
        regenerate(page, ["third"], tables=registry.tables, progress=_quiet)
    unknown = _write(tmp_path, _page() + "\n<!-- results:fifth -->\n<!-- /results -->\n")
    with pytest.raises(HTSError, match="unknown table 'fifth'") as caught:
        regenerate(unknown, tables=registry.tables, progress=_quiet)
    assert caught.value.location.line == 16
    assert registry.measured == []


def test_a_page_without_markers_is_refused(tmp_path):
    page = _write(tmp_path, "# Some other page\n\n| a | b |\n")
    with pytest.raises(HTSError, match="not a results page") as caught:
        regenerate(page, tables=Registry().tables, progress=_quiet)
    assert caught.value.location.file.endswith("results.md")
    assert page.read_text() == "# Some other page\n\n| a | b |\n"


def test_a_table_that_fails_leaves_the_page_as_it_was(tmp_path):
    registry = Registry()

    def broken(run):
        raise HTSError("the tool failed")

    tables = {**registry.tables, "second": Table("second", "make second", broken)}
    page = _write(tmp_path, _page())
    with pytest.raises(HTSError, match="the tool failed"):
        regenerate(page, tables=tables, progress=_quiet)
    assert registry.measured == ["first"]
    assert page.read_text() == _page()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.md"]


# ---- checking ------------------------------------------------------------------------------

def test_check_finds_the_stale_table_and_ignores_the_dates(tmp_path):
    registry = Registry(second={"timed": True})
    page = _write(tmp_path, _page())
    regenerate(page, ["first", "second"], tables=registry.tables, today="2001-02-03", progress=_quiet)
    written = page.read_text()
    assert stale_tables(page, tables=registry.tables, progress=_quiet) == []      # another day, same figures
    registry.bodies["first"] = "| first |\n|---|\n| one more row |"
    registry.bodies["second"] = "| a timed figure that never repeats |"
    registry.measured.clear()
    assert stale_tables(page, tables=registry.tables, progress=_quiet) == ["first"]
    assert registry.measured == ["first"]                 # timed tables are not checked unless named
    assert page.read_text() == written                    # --check writes nothing


def test_the_command_line_exits_1_on_a_stale_page(tmp_path, monkeypatch, capsys):
    registry = Registry()
    monkeypatch.setattr(results, "TABLES", registry.tables)
    page = _write(tmp_path, _page())
    assert results.main([str(page), "--check"]) == 1
    assert "table 'first' differs" in capsys.readouterr().err
    assert results.main([str(page)]) == 0
    assert results.main([str(page), "--check"]) == 0
    assert results.main([str(page), "--table", "nonesuch"]) == 1
    assert "unknown table 'nonesuch'" in capsys.readouterr().err
    assert results.main([str(page), "--list"]) == 0
    listing = capsys.readouterr().out
    assert "first" in listing and "not on the page" in listing.splitlines()[2]


# ---- the real page -------------------------------------------------------------------------

def test_every_marker_of_the_page_names_a_table_with_a_dated_heading():
    text = PAGE.read_text()
    blocks = parse_blocks(text, PAGE)
    assert {block.name for block in blocks} == set(results.TABLES)
    for name, content in results.block_contents(text, blocks).items():
        assert results.measured_date(content), f"table {name!r} has no date"
        assert content.startswith(results.heading(results.TABLES[name], results.measured_date(content)))


def test_the_tiny_benchmark_table_of_the_page_is_current():
    assert stale_tables(PAGE, ["bench-tiny"], progress=_quiet) == []
