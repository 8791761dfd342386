"""Conversions shared by the device models: seconds of a device to cycles of a clock."""

import math

__all__ = ["seconds_to_cycles", "require_positive"]

# A product such as 3e-6 s * 1e9 Hz comes out as 3000.0000000000005 in floating point;
# without the tolerance that rounding error alone would cost a whole extra cycle.
_ROUNDING_TOLERANCE = 1e-9


def seconds_to_cycles(seconds: float, clock_hz: float) -> int:
    """Whole cycles of a ``clock_hz`` clock that cover ``seconds`` (at least one: a task takes time)."""
    return max(1, math.ceil(seconds * clock_hz - _ROUNDING_TOLERANCE))


def require_positive(**values: float) -> None:
    """Raise ``ValueError`` naming the first argument that is not > 0."""
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
