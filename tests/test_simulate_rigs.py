"""One rig description format: `--simulate` takes the GPU rigs (H200, B200, RTX 6000 Ada, L40S, L4), the plan's
built-in builds and plan build files (compact, with chassis, PSU and prices), simulated through the plan's
layout; presets and rig description files work as before.

Memory per GPU from the datasheets: H200 141 GB HBM3e, B200 180 GB (HGX B200: 1,440 GB for eight), RTX 6000 Ada
48 GB GDDR6, L40S 48 GB GDDR6, L4 24 GB GDDR6 (NVIDIA product pages)."""

from __future__ import annotations

import json

import pytest
from test_plan_offer import cli


@pytest.mark.parametrize(
    ("rig", "count", "name", "gb"),
    [
        ("h200", 8, "H200", 141),
        ("b200", 8, "B200", 180),
        ("rtx-6000-ada", 4, "RTX 6000 Ada", 48),
        ("l40s", 8, "L40S", 48),
        ("l4", 1, "L4", 24),
    ],
)
def test_gpu_rigs_simulate(capsys, tmp_path, rig, count, name, gb):
    out_json = tmp_path / "s.json"
    code, _, err = cli(capsys, "scan", "--simulate", rig, "--json", str(out_json))
    assert code == 0, err
    gpus = json.loads(out_json.read_text())["gpus"]
    assert len(gpus) == count and all(name in g["name"] for g in gpus)
    mem = gpus[0]["memory_total_bytes"]
    assert 0.9 * gb * 1e9 <= mem <= 1.1 * gb * 1e9


def test_a_plan_build_file_with_its_chassis_and_prices_simulates(capsys, tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(
        'name = "mine"\ngpu = "rtx-4090"\ncount = 2\ncpu = "ryzen-9-7950x"\nram_gib = 128\npsu_watts = 1600\n'
        'chassis = "full tower"\n[price]\nsystem_usd = 6599\ndate = "2026-11"\nsource = "shop"\n'
    )
    code, out, err = cli(capsys, "check", "--simulate", str(f))
    assert code in (0, 1), err
    assert "unknown key" not in err and "2 GPUs" in out


def test_presets_and_unknown_names(capsys):
    code, out, _ = cli(capsys, "check", "--simulate", "dgx-h100")
    assert code in (0, 1) and "8 GPUs" in out
    code, _, err = cli(capsys, "check", "--simulate", "h300")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "h200" in err and "dgx-h100" in err
