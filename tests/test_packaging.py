"""Every Python package in the source tree is installed under the hts namespace."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_source_package_is_listed_in_pyproject():
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = setup["package-dir"]
    expected = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            expected.add(".".join([package, *relative.parts]))
    assert expected == set(setup["packages"])


def test_no_top_level_package_named_like_a_folder():
    """Installing must not put packages called isa or models at the top of site-packages."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert all(package == "hts" or package.startswith("hts.") for package in setup["packages"])
