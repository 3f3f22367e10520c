"""A plain `pip install` of the built wheel into a fresh virtual environment gives a working command with
every data file the package reads at run time (presets, templates, catalog, the advisor's error bands), run
from another directory: no test here passes by reading the source tree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Where each installed sub-package's files live in the checkout (pyproject.toml's package-dir).
SOURCE_DIRS = {
    "gpuadvisor": ROOT / "gpuadvisor",
    "gpuadvisor/probes": ROOT / "probes",
    "gpuadvisor/reports": ROOT / "reports",
}
# Files in the package trees that are documentation for developers, not read at run time.
NOT_RUNTIME = {"README.md"}


def _tracked_data_files() -> list[str]:
    """Every non-Python file git tracks under the package trees, as its path inside the wheel."""
    out = []
    for prefix, src in SOURCE_DIRS.items():
        listed = (
            subprocess.run(["git", "ls-files", "-z", "--", str(src)], cwd=ROOT, capture_output=True, check=True)
            .stdout.decode()
            .split("\0")
        )
        for rel in filter(None, listed):
            path = ROOT / rel
            inner = path.relative_to(src).as_posix()
            if path.suffix == ".py" or path.name in NOT_RUNTIME:
                continue
            if prefix == "gpuadvisor" and inner.split("/")[0] in ("probes", "reports"):
                continue
            out.append(f"{prefix}/{inner}")
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    # Build from a copy of the files git would commit: a stale build/ or *.egg-info in the checkout (setuptools
    # reuses both) must not put into the wheel a file the project's own package-data leaves out.
    src = tmp / "src"
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # The project's own packaging configuration draws no warning from the build backend (what `make example`
    # would otherwise print before its output): no license table, no data folder missing from `packages`.
    log = built.stdout + built.stderr
    for warning in (
        "`project.license` as a TOML table is deprecated",
        "is absent from the `packages` configuration",
        "SetuptoolsDeprecationWarning",
    ):
        assert warning not in log, warning
    (wheel,) = dist.glob("gpuadvisor-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(dist), "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    # The dependencies come from the suite's own environment (no network needed): expose its site-packages.
    site = subprocess.run(
        [sys.executable, "-c", "import jinja2, os; print(os.path.dirname(os.path.dirname(jinja2.__file__)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (next((env_dir / "lib").glob("python3*")) / "site-packages" / "suite-deps.pth").write_text(site + "\n")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return wheel, env_dir, elsewhere


def _run(installed, *args):
    _, env_dir, elsewhere = installed
    return subprocess.run(
        [str(env_dir / "bin" / "gpuadvisor"), *args], cwd=elsewhere, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_wheel_holds_every_data_file_the_package_reads(installed):
    wheel = installed[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = _tracked_data_files()
    assert "gpuadvisor/advisor/calibration.toml" in wanted and "gpuadvisor/catalog/gpus.toml" in wanted
    missing = [w for w in wanted if w not in names]
    assert missing == [], f"data files not in the wheel (add them to pyproject's package-data): {missing}"
    assert "gpuadvisor/probes/nvml.py" in names and "gpuadvisor/cli.py" in names


@pytest.mark.slow
def test_installed_scan_runs_from_another_directory(installed):
    _, env_dir, elsewhere = installed
    out = _run(installed, "scan", "--simulate", "dgx-h100", "--json", "s.json")
    assert out.returncode == 0, out.stderr
    assert "SIMULATED rig — preset dgx-h100" in out.stdout
    back = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "gpuadvisor", "scan", "--from", "s.json"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert back.returncode == 0 and back.stdout == out.stdout
    presets = _run(installed, "presets")
    assert "dgx2-v100" in presets.stdout


@pytest.mark.slow
def test_installed_advise_gives_every_candidate_a_band(installed):
    out = _run(installed, "advise", "--simulate", "dgx-h100", "--model", "llama-3-8b", "--json", "-")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    candidates = doc["candidates"]
    assert candidates
    for c in candidates:
        if c.get("tokens_per_second") is None:
            continue
        band = c["band"]
        assert band is not None, c["name"]
        tps = band["tokens_per_second"]
        assert tps["low"] < c["tokens_per_second"] < tps["high"], (c["name"], tps)
        assert tps["cases"] >= 10


@pytest.mark.slow
def test_installed_advise_inference_gives_every_serving_figure_a_band(installed):
    """The serving bands (gpuadvisor/advisor/serving_fit.toml) ship in the wheel."""
    out = _run(
        installed,
        "advise",
        "--simulate",
        "dgx-h100",
        "--model",
        "llama-3-8b",
        "--task",
        "inference",
        "--concurrency",
        "16",
        "--input-len",
        "1024",
        "--output-len",
        "256",
        "--json",
        "-",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for c in doc["candidates"]:
        sv = c["serving"]
        assert sv is not None and sv["fits"], c["name"]
        for key in (
            "output_tokens_per_second",
            "ttft_s",
            "itl_s",
            "output_tokens_per_second_per_user",
            "e2e_s",
            "prefill_s",
            "decode_step_s",
        ):
            band = sv["band"][key]
            assert band is not None and band["low"] <= sv[key] <= band["high"], (c["name"], key)
