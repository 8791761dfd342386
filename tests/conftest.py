import os

import pytest
from hypothesis import HealthCheck, settings

from configs import preset

# Property tests run without a deadline (first calls import Amaranth); CI runs them
# derandomized so a red run is reproducible from the log alone.
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session")
def default_config():
    return preset("default")


@pytest.fixture(scope="session")
def tiny_config():
    return preset("tiny")


@pytest.fixture(scope="session")
def warm_tiny_build():
    """The Verilator build of tiny in the co-simulation cache: built now if it is not there
    (minutes, once); the folder."""
    from hts.cosim.run import build
    return build(preset("tiny"), progress=lambda line: None)


# Every tier but the unit tier is a marker a test carries (pyproject.toml lists them).
TIERS = ("slow", "rtl", "system", "cosim", "formal", "synth")


@pytest.hookimpl(tryfirst=True)   # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    """A test of no other tier is a unit test, so that `pytest -m unit` is the quick loop."""
    for item in items:
        if not any(item.get_closest_marker(tier) for tier in TIERS):
            item.add_marker(pytest.mark.unit)
