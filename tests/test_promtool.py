"""The Prometheus textfile output of `check` and `fleet` passes promtool's own parser and linter
(`promtool check metrics`, from the Prometheus project), also with hostile host names: control characters,
quotes, backslashes, newlines and Unicode line separators. Under CI a missing promtool fails; elsewhere it skips."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from browser import under_ci

HOSTILE = ["evil\x1b]0;pwned\x07host", 'q"uo\\te', "two\nlines", "sep\u2028ara\u2029tor", "nul\x00byte", "ünï—cödé"]


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    why = "promtool not installed (apt-get install prometheus, or make promtool)"
    if under_ci():
        pytest.fail(f"{why}: under CI the Prometheus output must be checked by promtool")
    pytest.skip(why)


def _check(promtool: str, text: str) -> None:
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]


def _gpuadvisor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})  # fmt: skip


@pytest.mark.parametrize("preset", ["dgx-h100", "4x4090-pcie"])
def test_check_prom_passes_promtool(promtool, preset, tmp_path):
    out = _gpuadvisor("check", "--simulate", preset, "--format", "prom")
    assert out.returncode in (0, 1), out.stderr
    _check(promtool, out.stdout)


def test_check_and_fleet_prom_with_hostile_host_names_pass_promtool(promtool, tmp_path):
    scans = tmp_path / "scans"
    scans.mkdir()
    for i, name in enumerate(HOSTILE + ["node-a", "node-b"]):
        path = scans / f"n{i}.json"
        r = _gpuadvisor("scan", "--simulate", "dgx-h100", "--json", str(path))
        assert r.returncode == 0, r.stderr
        doc = json.loads(path.read_text())
        doc["host"]["hostname"] = name
        path.write_text(json.dumps(doc))
        one = _gpuadvisor("check", "--from", str(path), "--format", "prom")
        assert one.returncode in (0, 1), one.stderr
        _check(promtool, one.stdout)
    fleet = _gpuadvisor("fleet", str(scans), "--format", "prom")
    assert fleet.returncode in (0, 1), fleet.stderr
    assert fleet.stdout.count("gpuadvisor_fleet_node_up{") == len(HOSTILE) + 2
    _check(promtool, fleet.stdout)


def test_fleet_prom_says_why_and_when_and_exports_a_duplicate_host_once(promtool, tmp_path):
    import fleet_gen as G

    scans = tmp_path / "scans"
    own = [{"code": "GA104", "name": "ecc-uncorrected", "severity": "fail", "gpus": [5], "message": "2 uncorrectable"}]
    plants = {"n01": G.Plant(lost_gpu=True), "n02": G.Plant(findings=own)}
    G.write_fleet(scans, [f"n{i:02d}" for i in range(8)], seed=4, sigma=0.01, plants=plants)
    twin = json.loads((scans / "n03.json").read_text())
    (scans / "n03-copy.json").write_text(json.dumps(twin))  # a second scan claiming host n03
    out = _gpuadvisor("fleet", str(scans), "--format", "prom", "--now", "2026-11-23T18:12:45Z", "--max-age", "7d")
    assert out.returncode == 1, out.stderr
    _check(promtool, out.stdout)
    lines = out.stdout.splitlines()
    assert "gpuadvisor_fleet_report_timestamp_seconds 1795457565" in lines  # 1767225600 (2026-01-01) + 326 d + 18:12:45
    assert 'gpuadvisor_fleet_node_scan_age_seconds{node="n00"} 86400' in lines
    assert 'gpuadvisor_fleet_node_drain_cause{node="n01",group="g1",kind="lost",code="GPUs"} 1' in lines
    assert 'gpuadvisor_fleet_node_drain_cause{node="n02",group="g1",kind="check",code="GA104"} 1' in lines
    assert 'gpuadvisor_fleet_node_duplicate{node="n03"} 1' in lines
    assert 'gpuadvisor_fleet_node_duplicate{node="n04"} 0' in lines
    assert not [ln for ln in lines if "[2]" in ln]
    assert sum(ln.startswith('gpuadvisor_fleet_node_up{node="n03"') for ln in lines) == 1
