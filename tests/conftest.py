from __future__ import annotations

import functools
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


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
