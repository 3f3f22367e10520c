"""gpuadvisor advise: the command line, its JSON, its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.collect import simulate

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workloads"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "advise", *args], capture_output=True, text=True, timeout=120
    )


def test_advise_json_on_a_preset() -> None:
    r = run("--simulate", "dgx-h100", "--model", "llama-3-8b", "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["kind"] == "gpuadvisor-advice" and d["task"] == "train" and d["fits"] is True
    assert d["pick"] == d["pick_detail"]["name"]
    assert len(d["candidates"]) >= 7
    assert d["rig"]["gpus_per_node"] == 8 and d["rig"]["catalog_id"] == "h100-sxm5-80gb"
    assert "--nproc_per_node=8" in d["snippet"]["torchrun"]


def test_advise_text_from_a_saved_scan(tmp_path: Path) -> None:
    scan = tmp_path / "scan.json"
    simulate("2x3090-nvlink").save(scan)
    r = run("--from", str(scan), "--hf-config", str(EXAMPLES / "gpt2.config.json"), "--global-batch", "64")
    assert r.returncode == 0, r.stderr
    assert "strategy" in r.stdout and "Pick:" in r.stdout and "torchrun" in r.stdout
    # Short by default: the breakdown and the assumptions come with --explain.
    assert "Memory per GPU (GiB)" not in r.stdout and "Assumptions:" not in r.stdout and "--explain adds" in r.stdout
    r = run("--from", str(scan), "--hf-config", str(EXAMPLES / "gpt2.config.json"), "--global-batch", "64", "--explain")
    assert r.returncode == 0, r.stderr
    assert "Memory per GPU (GiB)" in r.stdout and "Assumptions:" in r.stdout


def test_advise_inference_writes_output(tmp_path: Path) -> None:
    out = tmp_path / "advice.json"
    r = run(
        "--simulate",
        "dgx-a100",
        "--model",
        "llama-3-70b",
        "--task",
        "inference",
        "--context",
        "4096",
        "--concurrency",
        "8",
        "--json",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["task"] == "inference" and d["snippet"]["command"].startswith("vllm serve")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--simulate", "dgx-h100", "--model", "llama-9-1000b"], "not a preset"),
        (["--simulate", "dgx-h100"], "no model given"),
        (["--simulate", "dgx-h100", "--params", "lots"], "not a number"),
        (["--simulate", "no-such-rig", "--model", "gpt2"], ""),
        (["--from", "/nonexistent/scan.json", "--model", "gpt2"], "no such file"),
        (["--simulate", "dgx-h100", "--hf-config", "/nonexistent/config.json"], "no such file"),
        (["--simulate", "dgx-h100", "--params", "1"], "Invalid value for '--params': 1 is out of range"),
        (["--simulate", "dgx-h100", "--params", "2e7"], "--params 2e+07: below 45.7M"),
        (
            ["--simulate", "dgx-h100", "--model", "gpt2", "--seq-len", "1"],
            "--seq-len 1: a training sequence needs at least 2 tokens",
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(args: list[str], needle: str) -> None:
    r = run(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuadvisor: error:") and needle in lines[0]
    assert "Traceback" not in r.stderr


def test_help_lists_the_workload_options() -> None:
    r = run("--help")
    assert r.returncode == 0
    for opt in (
        "--model",
        "--params",
        "--hf-config",
        "--task",
        "--precision",
        "--optimizer",
        "--seq-len",
        "--micro-batch",
        "--global-batch",
        "--checkpointing",
        "--finetune",
        "--context",
        "--concurrency",
        "--kv-cache-dtype",
        "--simulate",
        "--from",
    ):
        assert opt in r.stdout
