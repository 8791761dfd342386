"""``hts examples``: the shipped example programs and benchmarks, copied out of the package."""

from importlib import resources
from pathlib import Path

from hts.base.arguments import Role, add_argument
from hts.base.errors import HTSError, Location, display_path
from hts.base.output import atomic_path

from .command import Command

# Package -> folder under DIR, and the files of it that are programs or configurations.
_SHIPPED = (("hts.examples", "examples"), ("hts.benchmarks", "benchmarks"))
_SUFFIXES = (".s", ".yaml", ".v")


def shipped_files() -> list[tuple[str, object]]:
    """(path under DIR, resource) of every shipped example and benchmark."""
    return sorted((f"{folder}/{item.name}", item)
                  for package, folder in _SHIPPED
                  for item in resources.files(package).iterdir() if item.name.endswith(_SUFFIXES))


def _add_arguments(parser):
    add_argument(parser, Role.OUTPUT_DIRECTORY, "directory", metavar="DIR",
                 help="folder to copy them into (made if missing)")


def run(args) -> int:
    root = Path(args.directory)
    files = shipped_files()
    taken = [name for name, _ in files if (root / name).exists()]
    if taken:
        raise HTSError(f"{len(taken)} file(s) there already, e.g. {taken[0]}; nothing copied (name a new folder)",
                       Location(display_path(root)))
    for folder in {name.split("/")[0] for name, _ in files}:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, item in files:
        with atomic_path(root / name) as tmp:
            tmp.write_bytes(item.read_bytes())
    counts = {folder: sum(name.startswith(folder + "/") for name, _ in files) for _, folder in _SHIPPED}
    print(f"{counts['examples']} examples and {counts['benchmarks']} benchmarks -> {root}/")
    print(f"try: hts run {root}/benchmarks/audio_compression.s")
    return 0


EXAMPLES = Command(
    "examples", help="copy the example programs and the paper's benchmarks into a folder",
    description="Copy the example task programs, configurations and Verilog shipped with the toolkit "
                "(DIR/examples) and the HTS paper's benchmark programs (DIR/benchmarks) out of the installed "
                "package, to read, run and change. Refuses to write over a file that exists.",
    add_arguments=_add_arguments, run=run)
