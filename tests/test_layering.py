"""The packages import downward only: isa <- foundation <- assembler <- models <- hdl <-
(formal, cosim) <- flows <- cli. Read from every module's source, so an upward import
fails here before anything runs it."""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Layers, lowest first. A module may import its own package and any lower layer; packages
# of one layer do not import each other. The ISA is fixed and imports nothing of the
# toolkit; the configuration is checked against it (reserved keynames and accelerator IDs,
# the region-size field), so it lies under the foundation. The root package ``hts`` holds
# only the version; the shipped programs (benchmarks, examples) are data any layer may read.
LAYERS = (
    {"hts.isa"},
    {"hts", "hts.base", "hts.benchmarks", "hts.examples"},
    {"hts.assembler"},
    {"hts.models"},
    {"hts.hdl"},
    {"hts.formal", "hts.cosim"},
    {"hts.flows"},
    {"hts.cli"},
)

# ``python -m hts`` is the command line's second door.
_ENTRY_POINTS = {"hts.__main__": "hts.cli"}


def package_of(module: str) -> str:
    """The layered package a module belongs to: ``hts.X`` of ``hts.X.Y...``, or ``hts``."""
    if module in _ENTRY_POINTS:
        return _ENTRY_POINTS[module]
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> int:
    package = package_of(module)
    return next(rank for rank, layer in enumerate(LAYERS) if package in layer)


def modules(root: Path) -> dict[str, Path]:
    """Module name -> source file of every module the package installs, from pyproject's folders."""
    folders = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    found = {}
    for package, folder in folders.items():
        for path in sorted((root / folder).glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def _import_module_literal(node: ast.Call) -> str | None:
    function = node.func
    named = (isinstance(function, ast.Attribute) and function.attr == "import_module") or \
            (isinstance(function, ast.Name) and function.id == "import_module")
    if named and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every ``hts`` import in the file, relative ones resolved,
    in functions too, and ``import_module("...")`` with a literal name."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.append((node.lineno, target))
        elif isinstance(node, ast.Call) and (name := _import_module_literal(node)):
            found.append((node.lineno, name))
    return [(line, target) for line, target in found if target == "hts" or target.startswith("hts.")]


def violations(root: Path) -> list[str]:
    """``file:line: module imports target`` for every import that does not run downward."""
    found = []
    for module, path in modules(root).items():
        own, rank = package_of(module), layer_of(module)
        for line, target in imports(module, path):
            if package_of(target) != own and layer_of(target) >= rank:
                found.append(f"{path.relative_to(root)}:{line}: {module} imports {target}")
    return found


def test_every_package_is_in_a_layer():
    unplaced = {package_of(module) for module in modules(ROOT)} - set().union(*LAYERS)
    assert not unplaced, f"packages in no layer: {sorted(unplaced)}"


def test_imports_run_downward_only():
    assert violations(ROOT) == []


@pytest.mark.parametrize("source, upward", [
    ("from hts.cli import main", True),                        # a model reaching up to the CLI
    ("def f():\n    from hts.flows.synth import build", True),  # inside a function too
    ("import importlib\nimportlib.import_module('hts.cosim.run')", True),
    ("from hts.base.config import SystemConfig", False),
    ("from .memory import Memory", False),
])
def test_an_upward_import_is_caught(tmp_path, source, upward):
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"hts.models" = "models"\n')
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "memory.py").write_text("")
    (tmp_path / "models" / "stage.py").write_text(source + "\n")
    assert bool(violations(tmp_path)) == upward


def test_cosim_imports_nothing_from_flows_or_cli():
    for module, path in modules(ROOT).items():
        if package_of(module) == "hts.cosim":
            assert not [target for _, target in imports(module, path)
                        if package_of(target) in {"hts.flows", "hts.cli"}], module
