"""`gpuadvisor scan` end to end: facts -> measurements -> findings -> strategy -> JSON / HTML, one command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_findings_and_strategy_land_in_the_json_and_html(tmp_path):
    s, h = tmp_path / "s.json", tmp_path / "r.html"
    out = run("scan", "--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--json", str(s), "--html", str(h))
    assert out.returncode == 0, out.stderr
    d = json.loads(s.read_text())
    bad = sorted((f["code"], tuple(f["gpus"])) for f in d["findings"] if f["severity"] in ("warn", "fail"))
    assert bad == [("GA101", (2,)), ("GA203", (0, 1, 2, 3)), ("GA206", (0, 1, 2, 3))]
    assert d["advice"]["kind"] == "gpuadvisor-advice"
    assert "Findings" in out.stdout and "Strategy" in out.stdout and "GA101 pcie-link-downgraded" in out.stdout
    html = h.read_text()
    assert html.startswith("<!DOCTYPE html>") and "GA101" in html and "simulated" in html.lower()
    # The saved scan re-renders to the same findings on any machine.
    again = run("scan", "--from", str(s), "--format", "json")
    assert [f["code"] for f in json.loads(again.stdout)["findings"]] == [f["code"] for f in d["findings"]]


def test_from_nvidia_smi_directory(tmp_path):
    for name in ("smi.txt", "smi-q.xml"):
        shutil.copy(FIXTURES / "h100-vm" / name, tmp_path / name)
    out = run("scan", "--from-nvidia-smi", str(tmp_path), "--format", "json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["source"]["kind"] == "imported"
    assert d["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and d["gpus"][0]["pcie"]["current_gen"] == 5
    assert "IMPORTED from" in run("scan", "--from-nvidia-smi", str(tmp_path)).stdout


def test_bench_refuses_a_simulated_rig():
    out = run("scan", "--simulate", "dgx-h100", "--bench")
    assert out.returncode == 2 and "--bench measures this machine" in out.stderr


def test_bad_model_fails_before_probing():
    out = run("scan", "--simulate", "dgx-h100", "--model", "gpt-9")
    assert out.returncode == 2 and "--model gpt-9: not a preset" in out.stderr


@pytest.mark.slow
def test_scan_bench_on_cpu_runs_real_gloo_processes(tmp_path):
    s = tmp_path / "s.json"
    out = run("scan", "--bench", "--quick", "--backend", "gloo", "--nproc", "2", "--budget", "120", "--json", str(s))
    assert out.returncode == 0, out.stderr
    d = json.loads(s.read_text())
    kinds = {m["kind"] for m in d["measurements"]}
    assert {"all_reduce", "all_gather", "reduce_scatter", "broadcast"} <= kinds
    ar = next(m for m in d["measurements"] if m["kind"] == "all_reduce")
    assert ar["backend"] == "gloo" and ar["world_size"] == 2 and ar["status"] == "ok"
    for row in ar["rows"]:
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert row["correct"] is True
    assert "Measured bandwidth" in out.stdout


@pytest.mark.slow
def test_scan_bench_sigterm_keeps_the_partial_scan(tmp_path):
    import signal
    import time

    s = tmp_path / "s.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "gpuadvisor", "scan", "--bench", "--backend", "gloo", "--nproc", "2", "--json", str(s)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    seen = ""
    while time.time() < deadline:  # wait for the first measured size, reported on stderr
        line = p.stderr.readline()
        seen += line
        if "busbw" in line:
            break
    p.send_signal(signal.SIGTERM)
    rest = p.communicate(timeout=60)[1]
    assert p.returncode == 143, seen + rest
    assert "gpuadvisor: interrupted (SIGTERM)" in rest
    d = json.loads(s.read_text())
    assert any(pr.startswith("benchmark interrupted (SIGTERM)") for pr in d["problems"])
    assert d["measurements"] and d["measurements"][0]["rows"], "the sizes measured before the signal are kept"
