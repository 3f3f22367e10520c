from __future__ import annotations

import functools
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # tests/test_no_project_skips.py runs a small suite of its own

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A test that skips because one of the project's own modules failed to import is a failure: a regression
    must not read as a skip."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and call.excinfo is not None:
        text = str(call.excinfo.value)
        if "gpuadvisor" in text and ("could not import" in text or "No module named" in text):
            report.outcome = "failed"
            report.longrepr = f"skipped on a missing project module (a regression, not a skip): {text}"
