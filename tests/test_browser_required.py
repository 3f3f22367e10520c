"""Browser tests skip where Chromium is missing, but fail under CI (a green CI run means the report rendered).

The decision (browser.chromium_missing), the pytest hook that applies it (conftest.py) on a real browser test
run in a child pytest, and the Makefile's chromium step, each with Chromium made absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import chromium_missing, under_ci

ROOT = Path(__file__).resolve().parent.parent
ABSENT = "/nonexistent/chromium"


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        (None, False),
        ("", False),
        ("false", False),
        ("0", False),
        ("No", False),
        ("true", True),
        ("1", True),
        ("yes", True),
        ("TRUE", True),
    ],
)
def test_under_ci(ci, expected):
    assert under_ci({} if ci is None else {"CI": ci}) is expected


def test_chromium_absent_fails_under_ci_and_skips_elsewhere():
    action, why = chromium_missing({"CI": "true", "GPUADVISOR_CHROMIUM": ABSENT}, chromium="")
    assert action == "fail" and "under CI (CI=true) the browser tests must run, not skip" in why
    assert chromium_missing({"GPUADVISOR_CHROMIUM": ABSENT}, chromium="")[0] == "skip"
    assert chromium_missing({"CI": "false"}, chromium="")[0] == "skip"
    assert chromium_missing({"CI": "true"}, chromium="/usr/bin/chromium") is None


def _pytest(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "GPUADVISOR_CHROMIUM")}
    env.update(env_extra)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "tests/test_html_browser.py",
            "-k",
            "test_browser_downgraded_link_has_fail_class or test_prints_to_pdf",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_browser_tests_fail_not_skip_under_ci_without_chromium():
    p = _pytest({"CI": "true", "GPUADVISOR_CHROMIUM": ABSENT})
    assert p.returncode == 1, p.stdout[-2000:]
    assert "skipped" not in p.stdout.splitlines()[-1]
    assert " error" in p.stdout.splitlines()[-1]
    assert "under CI (CI=true) the browser tests must run, not skip" in p.stdout


def test_browser_tests_skip_with_the_reason_outside_ci():
    p = _pytest({"GPUADVISOR_CHROMIUM": ABSENT})
    assert p.returncode == 0, p.stdout[-2000:]
    last = p.stdout.splitlines()[-1]
    assert "skipped" in last and "passed" not in last and "error" not in last
    assert "chromium not installed" in p.stdout


def _make_chromium(ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GPUADVISOR_CHROMIUM", "MAKEFLAGS", "MAKELEVEL")}
    if ci is not None:
        env["CI"] = ci
    # No browser under any name, and an apt-get that fails (as when the package manager is locked).
    return subprocess.run(
        ["make", "-s", "chromium", "CHROMIUM_CMDS=gpuadvisor-no-such-browser", "APT=false"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_chromium_fails_under_ci_when_it_cannot_install():
    p = _make_chromium("true")
    assert p.returncode != 0
    assert "chromium: not found (gpuadvisor-no-such-browser)" in p.stderr
    assert "CI=true requires the browser tests, failing" in p.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_chromium_says_the_tests_will_be_skipped_outside_ci():
    p = _make_chromium(None)
    assert p.returncode == 0, p.stderr
    assert "browser tests will be SKIPPED (under CI they fail)" in p.stdout
