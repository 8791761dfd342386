"""Synthesis results against the size of a structure: ``python -m hts.flows.synth_sweep``.

Each sweep synthesizes one RTL block (``hts synth``, ECP5) for several values of one
configuration key, prints a table, and draws LUT4s and Fmax against the value in a PNG
beside it. Every point is a Dask task (:mod:`hts.flows.fanout`), on a LocalCluster here or on an
existing cluster. The default run is a few points per sweep (minutes, not hours); it is
run by hand, never in CI. A new sweep is one line in :data:`SWEEPS`.
"""

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from hts.base.config import PRESETS, SystemConfig, load_config, with_value
from hts.base.errors import HTSError

from .fanout import add_arguments as add_fanout_arguments, fan_out
from .plots import plot_synth_sweep
from .synth import synthesize

__all__ = ["SWEEPS", "SweepPoint", "synth_point", "sweep", "main"]

# (configuration key, values, block): what grows with the tasks in flight.
SWEEPS = [
    ("hts.tracker_entries", (4, 8, 16, 32), "memory_tracker"),
    ("hts.tracker_entries", (4, 8, 16, 32), "wakeup"),
    ("hts.tracker_entries", (4, 8, 16, 32), "ready_lists"),
]


@dataclass(frozen=True)
class SweepPoint:
    config: SystemConfig
    key: str
    value: int
    block: str
    freq_mhz: float


def synth_point(point: SweepPoint) -> dict:
    """One point's ``hts synth`` figures; runs on a Dask worker."""
    return {"key": point.key, "value": point.value,
            **synthesize(with_value(point.config, point.key, point.value), point.block, freq_mhz=point.freq_mhz,
                         progress=lambda message: None)}


def sweep(config: SystemConfig, key: str, values, block: str, freq_mhz: float,
          scheduler_address: str | None = None, workers: int = 2) -> tuple[list[dict], list[str]]:
    """Rows in the order of ``values``, and an error line for each point that failed (left out)."""
    rows, errors = {}, []
    sweep_points = [SweepPoint(config, key, value, block, freq_mhz) for value in values]
    for done, (point, row, error) in enumerate(fan_out(synth_point, sweep_points, scheduler_address, workers),
                                               start=1):
        print(f"[{done}/{len(values)}] {block}: {key} = {point.value}: "
              f"{f'failed: {error}' if error else str(row['lut_sites']) + ' LUT4 sites'}", file=sys.stderr, flush=True)
        if error:
            errors.append(f"{key} = {point.value}: {error}")
        else:
            rows[point.value] = row
    return [rows[value] for value in values if value in rows], errors


def _print_table(key: str, block: str, rows: list[dict]):
    print(f"{block}: {key}")
    print(f"{key.rpartition('.')[2]:>16}{'LUT4':>8}{'CCU2C':>8}{'DPR16X4':>9}{'LUT4 sites':>12}{'FFs':>8}{'BRAM':>6}"
          f"{'DSP':>6}{'Fmax MHz':>10}")
    for row in rows:
        fmax = "-" if row["fmax_mhz"] is None else f"{row['fmax_mhz']:.1f}"
        print(f"{row['value']:>16}{row['luts']:>8}{row['carry_cells']:>8}{row['lut_rams']:>9}{row['lut_sites']:>12}"
              f"{row['ffs']:>8}{row['brams']:>6}{row['dsps']:>6}{fmax:>10}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hts.flows.synth_sweep",
        description="Synthesize RTL blocks (as `hts synth`) for several values of a configuration key; print a "
                    "table and draw LUT4s and Fmax against the value (PNG). Progress goes to stderr.")
    parser.add_argument("-c", "--config", metavar="CFG", default="default",
                        help=f"base configuration: a preset ({', '.join(PRESETS)}) or a YAML file (default: default)")
    parser.add_argument("--freq", metavar="MHZ", type=float, default=100.0,
                        help="clock constraint for place and route, in MHz (default 100)")
    parser.add_argument("--plot-prefix", metavar="PREFIX", default="synth_sweep",
                        help="plots are PREFIX_<block>.png (default synth_sweep)")
    parser.add_argument("--block", action="append", choices=[block for _, _, block in SWEEPS],
                        help="run only this block's sweep (repeatable; default: every sweep)")
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON object")
    add_fanout_arguments(parser)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        results, failed = [], []
        for key, values, block in SWEEPS:
            if args.block and block not in args.block:
                continue
            rows, errors = sweep(config, key, values, block, args.freq, args.scheduler, args.workers)
            failed += [f"{block}: {error}" for error in errors]
            plot = Path(f"{args.plot_prefix}_{block}.png")
            plot_synth_sweep(rows, key, plot, f"{block} on {config.source}, ECP5 (LFE5U-85F-6)")
            results.append({"key": key, "block": block, "plot": str(plot), "rows": rows})
            if not args.json:
                _print_table(key, block, rows)
                print(f"plot: {plot}\n")
    except HTSError as err:
        print(err, file=sys.stderr)
        return 1
    for error in failed:
        print(f"FAILED {error}", file=sys.stderr)
    if args.json:
        print(json.dumps({"config": config.source, "sweeps": results, "errors": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
