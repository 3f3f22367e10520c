"""plan prices serving with the advisor's serving model: a rented 2x H100 build serving Llama 3.3 70B in fp8 with
NVIDIA NIM, at the settings of NVIDIA's published NIM benchmark (5,000 input / 500 output tokens, concurrency 1 to
50), lands within 0.75-1.33 of the published output tokens/s, each row read from the calibration cases file."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    c
    for c in tomllib.loads((ROOT / "benchmarks" / "serving_cases.toml").read_text())["serving"]
    if c["source_id"] == "nim-1.8.0" and c["input_len"] == 5000 and c["concurrency"] <= 64
]
BUILD = """name = "rent-2xh100"
title = "Rent 2x H100 SXM"
description = "Two H100 SXM on NVLink, by the hour."
gpu = "h100-sxm5-80gb"
count = 2
cpu = "xeon-platinum-8480"
sockets = 2
ram_gib = 512
layout = "hgx"
rent = true
"""


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_plan_serving_matches_published_nim(case, tmp_path):
    build = tmp_path / "rent-2xh100.toml"
    build.write_text(BUILD)
    args = [
        sys.executable, "-m", "gpuadvisor", "plan", str(build), "--model", case["model"], "--task", "inference",
        "--weights", case["quantization"], "--kv-cache-dtype", case["kv_cache_dtype"], "--engine", case["engine"],
        "--input-len", str(case["input_len"]), "--output-len", str(case["output_len"]),
        "--context", str(case["input_len"] + case["output_len"]), "--concurrency", str(case["concurrency"]),
        "--format", "json",
    ]  # fmt: skip
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)["builds"][0]
    assert row["serving"]["tensor_parallel"] == case["tp"]
    ratio = row["tokens_per_second"] / case["output_tokens_per_second"]
    assert 0.75 <= ratio <= 1.33, ratio
    low, high = row["serving"]["band"]
    assert low < row["tokens_per_second"] < high


def test_cases_cover_concurrency_1_to_50():
    assert sorted(c["concurrency"] for c in CASES) == [1, 5, 25, 50]


def test_two_nodes_serve_replicas_on_every_gpu_of_the_build():
    """The advisor's pick with its replicas over the whole build: two nodes of 8x H100 hold twice the replicas of
    one (the serving call is given every GPU of the build, not one node's)."""
    from gpuadvisor.catalog.platforms import load_prices
    from gpuadvisor.plan import Need, load_build, run_plan

    builds = [load_build("rent-8xh100"), load_build("rent-2x8xh100-ib")]
    need = Need(task="inference", context=8192, concurrency=64)
    p = run_plan(builds, need, {"model": "llama-3-70b"}, prices=load_prices())
    one, two = (next(r for r in p.rows if r.build.name == n) for n in ("rent-8xh100", "rent-2x8xh100-ib"))
    assert one.serving and two.serving
    assert two.serving.tensor_parallel * two.serving.replicas == 16  # every GPU of both nodes serves
    assert (two.tokens_per_second or 0) > 1.5 * (one.tokens_per_second or 0)
