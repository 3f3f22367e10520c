"""scripts/install-torch.sh (what `make setup` runs): the CPU index first, the default index with a note when it
cannot be reached, and which build it got; driven with a stand-in python that logs its pip calls."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-torch.sh"
CPU = "https://download.pytorch.org/whl/cpu"

# A stand-in for .venv/bin/python: "-m pip ..." is logged (and fails on the CPU index when CPU_DOWN=1);
# "-c ..." (the build check) prints "VERSION CUDA" as torch would.
STUB = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  shift 2
  echo "pip $*" >> "$LOG"
  case "$*" in *--index-url*) [ "${CPU_DOWN:-0}" = 1 ] && { echo "ERROR: Could not find a version" >&2; exit 1; } ;;
  esac
  exit 0
fi
if [ "$1" = "-c" ]; then echo "$TORCH_BUILD"; exit 0; fi
exit 3
"""


def _run(tmp_path: Path, cpu_down: bool, build: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    py = tmp_path / "python"
    py.write_text(STUB)
    py.chmod(0o755)
    log = tmp_path / "pip.log"
    env = {**os.environ, "LOG": str(log), "CPU_DOWN": "1" if cpu_down else "0", "TORCH_BUILD": build}
    env.pop("TORCH_CPU_INDEX", None)
    out = subprocess.run(
        ["sh", str(SCRIPT), str(py), "torch==2.13.0"], capture_output=True, text=True, env=env, timeout=30
    )
    return out, log.read_text().splitlines() if log.exists() else []


def test_cpu_index_first_and_says_the_build(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, cpu_down=False, build="2.13.0+cpu None")
    assert out.returncode == 0, out.stderr
    assert calls == [f"pip install -q --retries 1 --timeout 20 --index-url {CPU} torch==2.13.0"]
    assert out.stdout == f"install-torch: torch 2.13.0+cpu, the CPU build (pip install --index-url {CPU})\n"
    assert out.stderr == ""


def test_unreachable_cpu_index_falls_back_with_a_note(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, cpu_down=True, build="2.13.0+cpu None")
    assert out.returncode == 0, out.stderr
    assert calls == [
        f"pip install -q --retries 1 --timeout 20 --index-url {CPU} torch==2.13.0",
        "pip install -q torch==2.13.0",
    ]
    assert (
        f"install-torch: CPU index unreachable ({CPU}): installing torch==2.13.0 from the default index" in out.stderr
    )
    assert out.stdout == "install-torch: torch 2.13.0+cpu, the CPU build (the default index: CPU index unreachable)\n"


def test_fallback_that_got_the_cuda_build_says_so(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, cpu_down=True, build="2.13.0 12.8")
    assert out.returncode == 0
    assert out.stdout.startswith(
        "install-torch: note: torch 2.13.0 is a CUDA 12.8 build (the default index: CPU index unreachable), "
        "not the CPU build"
    )


def test_makefile_installs_torch_through_the_script() -> None:
    make = (ROOT / "Makefile").read_text()
    assert "sh scripts/install-torch.sh $(BIN)/python '$(TORCH)'" in make
    assert make.index("install-torch.sh") < make.index("pip install -q -e '.[test]'")  # torch before the package


@pytest.mark.skipif(not Path("/usr/bin/make").exists(), reason="make not installed")
def test_make_dry_run_calls_the_script(tmp_path: Path) -> None:
    out = subprocess.run(
        ["make", "-n", "-B", "setup", "VENV=" + str(tmp_path / "v")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert f"sh scripts/install-torch.sh {tmp_path / 'v'}/bin/python 'torch==2.13.0'" in out.stdout
