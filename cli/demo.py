"""``hts demo``: the paper's audio compression on every scheduler, then the assembler."""

import argparse
from importlib import resources

from hts.base.arguments import Role, add_argument
from hts.base.errors import HTSError

from .arguments import add_config, system
from .command import Command
from .compare import chart_files, compare


def _add_arguments(parser):
    add_config(parser)
    add_argument(parser, Role.OUTPUT, "--plot", metavar="FILE.png", default="audio_compression_compare.png",
                 help="bar chart to write (default audio_compression_compare.png)")


def conclusion(rows: list[dict], reference: list[dict]) -> str:
    """The comparison in one sentence: HTS against the best offline schedule and against naive."""
    by_name = {row["scheduler"]: row for row in rows}
    hts, naive = by_name["hts"], by_name["naive"]
    offline = [row for row in reference if row["proven_optimal"] is not None]
    text = f"HTS takes {hts['cycles']:,} cycles, {naive['cycles'] / hts['cycles']:.1f}x faster than naive"
    if offline:
        best = min(offline, key=lambda row: row["cycles"])
        what = "the proven optimum" if best["proven_optimal"] else f"the best schedule {best['scheduler']} found"
        text += f", within {hts['cycles'] / best['cycles'] - 1:.1%} of {what}"
    same = all(row["memory_matches_sequential"] for row in rows)
    return text + ("; every scheduler's memory equals in-order execution" if same
                   else "; a scheduler's memory DIFFERS from in-order execution")


def _assembler_round_trip(config):
    from hts.assembler import assemble, disassemble
    examples = resources.files("hts.examples")
    print("\n== the paper's branch listing, assembled and disassembled")
    program = assemble(examples.joinpath("paper_branch.s").read_text(), config, "examples/paper_branch.s")
    for word, line in zip(program.words, disassemble(program, config)):
        print(f"  {word:032x}  {line}")
    try:
        assemble(examples.joinpath("paper_branch_malformed.s").read_text(), config,
                 "examples/paper_branch_malformed.s")
    except HTSError as err:
        print("== the same listing as the paper printed it (a field short on its second line): "
              f"the assembler names the line\n  {err}")
    else:
        raise AssertionError("the malformed listing assembled")


def run(args) -> int:
    config = system(args.config)
    audio = resources.files("hts.benchmarks").joinpath("audio_compression.s")
    print("== hts compare benchmarks/audio_compression.s (Algorithm 1 of the HTS paper, 8 bands)")
    status, rows, reference = compare(argparse.Namespace(
        config=args.config, programs=[str(audio)], seed=0, plot=args.plot, json=False, instances=2,
        time_limit=5.0, optimal_max_tasks=40))
    _assembler_round_trip(config)
    print(f"\n== on the paper's audio compression, {conclusion(rows, reference)}")
    return status


DEMO = Command(
    "demo", help="the demo: audio compression on every scheduler, and the assembler",
    description="Run the paper's audio-compression application through `hts compare` (table and bar chart), "
                "then assemble and disassemble the paper's branch listing and show the error for the listing as "
                "printed.",
    add_arguments=_add_arguments, run=run, more_files=chart_files)
