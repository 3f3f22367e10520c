"""The scripts under benchmarks/ loaded as modules, for the tests that check what they compute: one loader, one
instance of each script per test session (fit_advisor and advisor_accuracy import calibration_cases by name, and get
the same one)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str) -> ModuleType:
    """benchmarks/<name>.py as the module ``name`` (loaded once)."""
    if name in sys.modules:
        return sys.modules[name]
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
