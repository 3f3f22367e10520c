"""No test may skip itself when one of the project's own modules fails to import (conftest.py turns such a skip
into a failure at run time); this reads the suite for the patterns that did it, so they do not come back."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_importorskip_of_project_modules():
    bad = []
    for path in sorted(TESTS.glob("*.py")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"importorskip\(\s*[\"'](gpuadvisor|probes|reports)\b", line):
                bad.append(f"{path.name}:{no}: {line.strip()}")
            if re.search(r"pytest\.skip\([^)]*(not in this (tree|build)|does not exist yet)", line):
                bad.append(f"{path.name}:{no}: {line.strip()}")
    assert bad == [], "tests that would turn a regression into a skip:\n" + "\n".join(bad)


def test_a_skip_on_a_missing_project_module_fails(pytester):
    hook = (TESTS / "conftest.py").read_text().split("@pytest.hookimpl(hookwrapper=True)")[1]
    pytester.makeconftest("import pytest\n\n@pytest.hookimpl(hookwrapper=True)" + hook)
    pytester.makepyfile(
        test_it="""
import pytest
def test_skips():
    pytest.importorskip("gpu" + "advisor.no_such_module")
"""
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
