"""A plain `pip install` of the built wheel into a fresh virtual environment gives a working command with
its presets and templates, run from another directory (no test passes by reading the source tree)."""
from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_into_fresh_venv_and_runs(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("gpuadvisor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for preset in (ROOT / "probes" / "presets").glob("*.toml"):
        assert f"gpuadvisor/probes/presets/{preset.name}" in names
    for template in (ROOT / "reports" / "templates").rglob("*"):
        if template.is_file():
            assert f"gpuadvisor/reports/templates/{template.relative_to(ROOT / 'reports' / 'templates').as_posix()}" in names
    assert "gpuadvisor/probes/nvml.py" in names and "gpuadvisor/cli.py" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([str(env_dir / "bin" / "gpuadvisor"), "scan", "--simulate", "dgx-h100", "--json", "s.json"],
                         cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "SIMULATED rig — preset dgx-h100" in out.stdout
    back = subprocess.run([str(py), "-m", "gpuadvisor", "scan", "--from", "s.json"], cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert back.returncode == 0 and back.stdout == out.stdout
    presets = subprocess.run([str(env_dir / "bin" / "gpuadvisor"), "presets"], cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert "dgx2-v100" in presets.stdout
