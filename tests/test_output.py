"""Result files appear whole, together, or not at all: errors and Ctrl-C leave no debris."""

import pytest

from hts.base.errors import HTSError
from hts.base.output import all_or_none, atomic_path, check_files


def _write(path, text):
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def test_a_group_of_files_appears_together(tmp_path):
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    with all_or_none():
        _write(first, "new a")
        assert not first.exists()           # held back until the group ends
        _write(second, "new b")
    assert (first.read_text(), second.read_text()) == ("new a", "new b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]


def test_ctrl_c_inside_a_group_leaves_the_old_files_and_no_temporaries(tmp_path):
    """Issue 15, defect 8: an interrupt while ``hts compare`` wrote its charts left 0-byte
    hidden temporaries and a mix of old and new charts."""
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    first.write_text("old a")
    second.write_text("old b")
    with pytest.raises(KeyboardInterrupt):
        with all_or_none():
            _write(first, "new a")
            with atomic_path(second) as tmp:
                tmp.write_text("half")
                raise KeyboardInterrupt
    assert (first.read_text(), second.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]


def test_outputs_are_checked_against_inputs_and_directories(tmp_path):
    source = tmp_path / "a.s"
    source.write_text("")
    with pytest.raises(HTSError, match="would overwrite the input"):
        check_files([tmp_path / "." / "a.s"], [source])
    with pytest.raises(HTSError, match="is a directory"):
        check_files([tmp_path], [])
    check_files([tmp_path / "b.s", None], [source, None])
