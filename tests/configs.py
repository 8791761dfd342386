"""The configurations tests run on: the presets, and variants of them named where they are used.

Variants are made with :func:`hts.base.config.with_values`, so each is validated as a file
that sets those keys would be.
"""

from functools import cache

from hts.base.config import SystemConfig, load_config, with_values

__all__ = ["preset", "config_named", "latencies"]


@cache
def preset(name: str) -> SystemConfig:
    return load_config(name)


def config_named(name: str, variants: dict[str, tuple[str, dict]] | None = None) -> SystemConfig:
    """The preset ``name``, or the variant of that name: ``variants`` maps it to (preset, {key: value})."""
    if variants and name in variants:
        base, values = variants[name]
        return with_values(preset(base), values)
    return preset(name)


def latencies(config: SystemConfig, cycles) -> dict[str, int]:
    """The keys that give ``config``'s accelerator classes the latencies ``cycles``, in class
    order (classes past the end of ``cycles`` keep theirs), for :func:`with_values`."""
    return {f"accelerators.{acc.name}.latency": latency for acc, latency in zip(config.accelerators, cycles)}
