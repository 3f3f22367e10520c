"""scan/advise with the storage options, end to end (a fake /proc and /sys for the live probe)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.test_storage_probe import build_tree


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"},
    )


def test_scan_probes_named_dirs_and_judges_them(tmp_path: Path) -> None:
    root = build_tree(tmp_path)
    data, ckpt = tmp_path / "data", tmp_path / "ckpt"
    data.mkdir()
    ckpt.mkdir()
    out = tmp_path / "s.json"
    p = run(
        "scan", "--sysfs-root", str(root), "--data-dir", str(data), "--checkpoint-dir", str(ckpt), "--json", str(out)
    )
    assert p.returncode == 0, p.stderr
    assert f"data: {data}" in p.stdout and "PCIe Gen4 x2 (capable Gen4 x4), NUMA 0" in p.stdout
    assert "GA901" in p.stdout
    saved = json.loads(out.read_text())
    paths = [(s["role"], s["path"]) for s in saved["storage"]["paths"]]
    assert paths == [("data", str(data)), ("checkpoint", str(ckpt))]
    assert saved["storage"]["page_cache_bytes"] == 1500000000 * 1024
    assert saved["provenance"]["storage"] == "read"
    assert all(len(line) <= 100 for line in p.stdout.splitlines())


def test_bad_data_dir_and_simulated_source(tmp_path: Path) -> None:
    p = run("scan", "--data-dir", str(tmp_path / "nope"))
    assert p.returncode == 2 and p.stderr.startswith("gpuadvisor: error: --data-dir ") and p.stderr.count("\n") == 1
    p = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-8b", "--checkpoint-dir", str(tmp_path))
    assert p.returncode == 2 and "simulated source" in p.stderr


def test_advise_gives_checkpoint_plan() -> None:
    p = run(
        "advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--checkpoint-every", "30m", "--format", "json"
    )
    assert p.returncode == 0, p.stderr
    ck = json.loads(p.stdout)["checkpoint"]
    assert ck["params"] == 70553706496 and ck["write_provenance"] == "assumed"
    assert ck["total_bytes"] == int(70553706496 * ck["bytes_per_param"])
    assert ck["interval_seconds"] == 1800
    p = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--checkpoint-every", "soon")
    assert p.returncode == 2 and "--checkpoint-every 'soon'" in p.stderr
    p = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--checkpoint-every", "2h")
    assert "Checkpoints and data" in p.stdout and "[assumed]" in p.stdout and "every 120 min" in p.stdout
    p = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-70b")
    assert "Checkpoints and data" not in p.stdout  # the default advice stays short; --explain shows it
    p = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--explain")
    assert "Checkpoints and data" in p.stdout
