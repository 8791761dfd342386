"""Model speed: simulated cycles per second of wall time on the audio compression.

    python -m hts.flows.model_speed [--bands 32] [--repeat 3]

Prints one line per branch outcome. The figure depends on how much of the run can be
fast-forwarded (long accelerator latencies) and on the Python work per stepped cycle.
"""

import argparse
import time

from hts.assembler import assemble
from hts.base.config import load_config
from hts.benchmarks import audio_compression
from hts.models.hts import HTSModel
from hts.models.memory import initial_memory


def measure(bands: int, taken: bool, repeat: int, config_name: str) -> tuple[int, int, float]:
    config = load_config(config_name)
    program = assemble(audio_compression(bands, taken), config)
    best = float("inf")
    for _ in range(repeat):
        memory = initial_memory(config)
        start = time.perf_counter()
        result = HTSModel(config, [program], memory).run()
        best = min(best, time.perf_counter() - start)
    return result.cycles, result.simulated_cycles, best


def main():
    parser = argparse.ArgumentParser(prog="python -m hts.flows.model_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--bands", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the fastest counts")
    parser.add_argument("-c", "--config", default="default")
    args = parser.parse_args()
    for taken in (False, True):
        cycles, stepped, seconds = measure(args.bands, taken, args.repeat, args.config)
        print(f"audio_compression bands={args.bands} branch {'taken' if taken else 'not taken'}: "
              f"{cycles} cycles ({stepped} stepped) in {seconds:.3f} s = {cycles / seconds:,.0f} simulated "
              f"cycles/s, {stepped / seconds:,.0f} stepped cycles/s")


if __name__ == "__main__":
    main()
