"""``hts config`` and ``hts tools``: what the toolkit is set up with."""

from hts import __version__
from hts.base.config import describe

from .arguments import add_config, system
from .command import Command


def run_config(args) -> int:
    config = system(args.config)
    print(f"configuration {config.source}")
    print(f"\n{'accelerator':<16}{'id':>5}{'count':>7}{'latency':>10}")
    for acc in config.accelerators:
        print(f"{acc.name:<16}{acc.id:>#5x}{acc.count:>7}{acc.latency:>10}")
    print()
    rows = describe(config)
    width = max(len(key) for key, _, _ in rows) + 2
    for key, value, doc in rows:
        print(f"{key:<{width}}{str(value).lower() if isinstance(value, bool) else value:>8}  {doc}")
    return 0


def run_tools(args) -> int:
    from hts.base.toolchain import bundled_tools
    print(f"{'hts':<14}{__version__}")
    for tool, version in bundled_tools():
        print(f"{tool:<14}{version}")
    return 0


CONFIG = Command(
    "config", help="show a validated system configuration",
    description="Validate a configuration and print its accelerator classes (with the accelerator IDs programs "
                "are assembled with) and every scheduler parameter.",
    add_arguments=add_config, run=run_config)

TOOLS = Command(
    "tools", help="show the versions of the bundled tools",
    description="Print the versions of the tools the toolkit runs, found without any PATH set-up by the user.",
    add_arguments=lambda parser: None, run=run_tools)
