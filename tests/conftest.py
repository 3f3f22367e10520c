from __future__ import annotations

import functools
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked ``browser`` need Chromium: skipped without it, failed without it under CI."""
    if item.get_closest_marker("browser") is None:
        return
    from browser import chromium_missing

    decision = chromium_missing()
    if decision is not None:
        action, why = decision
        if action == "fail":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


@functools.cache
def _preset(name: str):
    from gpuadvisor.collect import simulate

    return simulate(name)


@pytest.fixture
def preset():
    """Simulated preset rigs, built once per session and copied for each use (tests may mutate them)."""
    import copy

    def get(name: str):
        return copy.deepcopy(_preset(name))

    return get


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
