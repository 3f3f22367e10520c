"""Mixed-GPU builds and upgrades of what the buyer owns.

Published (llama.cpp, Llama 3 70B Q4_K_M, one stream, tg 1024, https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-
Inference, 2024-05): 2x RTX 3090 16.29 tokens/s, 2x RTX 4090 19.06. No published run of one 3090 with one 4090 on
the same model was found, so the reference is derived from those two: llama.cpp splits the layers by memory (24 and
24 GB: half each), each card runs its half at its own speed, one after the other, so a token takes half the 3090
pair's time plus half the 4090 pair's: 1 / (0.5 / 16.29 + 0.5 / 19.06) = 17.57 tokens/s. Mixed pairs pace at the
slower card in layer split ("the pair runs at ~B60-class speed (slower card sets the pace)", a measured B60 + B70
layer split, https://github.com/steveseguin/b70-optimization-lab/pull/17, 2026-08).

Reference prices (the shipped rows): RTX 3090 used US$700, RTX 4090 street US$1,700, Threadripper PRO 7975WX
US$3,899; eBay's 12.9 % final value fee on a sale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_plan_offer import cli

from gpuadvisor.catalog.platforms import load_prices
from gpuadvisor.errors import InputError
from gpuadvisor.plan import Need, load_build, run_plan

DESKTOP = 'cpu = "ryzen-9-7950x"\nram_gib = 128\npsu_watts = 1600\n[price]\nplatform_usd = 2500\n'


def _file(tmp_path: Path, name: str, gpu: str) -> str:
    f = tmp_path / f"{name}.toml"
    f.write_text(f'name = "{name}"\n{gpu}\n{DESKTOP}')
    return str(f)


def _serve(builds: list, engine: str | None, writing: bool = False) -> dict[str, float | None]:
    need = Need(task="inference", context=4096, concurrency=1, engine=engine)
    kw = {"model": "llama-3-70b", "weight_quant": "awq-4bit", "quantization": "awq"}
    p = run_plan(builds, need, kw, prices=load_prices())
    if writing:  # one stream's writing speed: what llama.cpp's tg figures time
        return {r.build.name: r.serving.generation_tokens_per_second if r.serving else None for r in p.rows}
    return {r.build.name: r.tokens_per_second for r in p.rows}


def test_a_mixed_build_is_described_with_its_pace_card(tmp_path):
    b = load_build(_file(tmp_path, "mixed", 'gpu = ["1x rtx-4090", "1x RTX 3090"]'))
    assert b.mixed and b.count == 2 and b.gpu.id == "rtx-3090"
    assert [g.id for g in b.cards] == ["rtx-4090", "rtx-3090"]
    p = run_plan([b], Need(task="qlora", tokens=2e8), {"model": "llama-3-8b"}, prices=load_prices())
    row = p.to_dict()["builds"][0]
    assert row["gpu_kinds"] == [
        {"gpu": "NVIDIA GeForce RTX 4090", "count": 1},
        {"gpu": "NVIDIA GeForce RTX 3090", "count": 1},
    ]
    assert row["pace_gpu"] == "NVIDIA GeForce RTX 3090"
    assert row["cost"]["purchase_usd"] == pytest.approx(1700 + 700 + 699 + 2500)  # the cards, the 7950X, the rest
    assert any(f["code"] == "GA301" for f in row["findings"])  # the rules see the two models


def test_layer_split_of_a_mixed_pair_is_the_time_weighted_sum(tmp_path):
    mixed = load_build(_file(tmp_path, "mixed", 'gpu = ["1x rtx-4090", "1x rtx-3090"]'))
    pairs = [load_build(_file(tmp_path, f"2x{g}", f'gpu = "rtx-{g}"\ncount = 2')) for g in ("3090", "4090")]
    tps = _serve([mixed, *pairs], "llama.cpp")
    slow, fast, mix = tps["2x3090"], tps["2x4090"], tps["mixed"]
    assert slow and fast and mix
    assert slow < mix < fast
    assert mix == pytest.approx(1 / (0.5 / slow + 0.5 / fast), rel=1e-3)  # the cards differ a little in memory
    writing = _serve([mixed], "llama.cpp", writing=True)["mixed"]
    assert writing and 0.75 <= writing / 17.57 <= 1.33  # the reference derived from the published pairs


def test_tensor_parallel_on_a_mixed_pair_runs_at_the_slowest_card(tmp_path):
    mixed = load_build(_file(tmp_path, "mixed", 'gpu = ["1x rtx-4090", "1x rtx-3090"]'))
    pair = load_build(_file(tmp_path, "2x3090", 'gpu = "rtx-3090"\ncount = 2'))
    tps = _serve([mixed, pair], None)
    assert tps["mixed"] == pytest.approx(tps["2x3090"], rel=1e-9)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('gpu = ["1x rtx-4090", "1x rtx-3090"]\ncount = 3', "count"),
        ('gpu = ["1x rtx-4090", "1x rtx-3090"]\nfabric = "bridge"', "NVLink joins cards of one model"),
        ('gpu = ["1x rtx-4090", "1x rtx-3090"]\nrent = true', "rented build is one GPU model"),
        ('gpu = ["1x rtx-4090", "two rtx-3090"]', "gpu"),
    ],
)
def test_a_wrong_mixed_build_is_one_line(tmp_path, extra, says):
    with pytest.raises(InputError, match=says) as e:
        load_build(_file(tmp_path, "bad", extra))
    assert "\n" not in str(e.value)


def _plan_json(capsys, *args: str) -> dict:
    code, out, err = cli(capsys, "plan", *args, "--model", "llama-3-8b", "--task", "qlora", "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_adding_two_cards_to_two_needs_a_board_with_more_slots(capsys):
    d = _plan_json(capsys, "2x5090-9950x", "--have", "2x rtx-3090", "--add", "2x rtx-3090")
    rows = {r["build"]: r for r in d["builds"]}
    owned = rows["owned:2xrtx-3090"]
    assert owned["cost"]["purchase_usd"] == 0
    up = rows["upgrade:2xrtx-3090+2xrtx-3090"]
    assert up["gpu_count"] == 4 and up["cpu"].startswith("AMD Ryzen Threadripper PRO 7975WX")
    # two cards + the workstation platform (the Ryzen 9 5950X boards have three slots for GPUs)
    assert up["cost"]["purchase_usd"] == pytest.approx(2 * 700 + 3899 + 7000)
    assert "a new platform" in up["cost"]["purchase_basis"]
    # selling the owned pair for another build: their used price less eBay's fee comes off its price
    sell = rows["2x5090-9950x"]["cost"]["purchase_basis"]
    assert "selling the owned rtx-3090" in sell and f"{700 * (1 - 0.129):,.0f}" in sell


def test_adding_a_card_on_the_same_board_buys_the_card_and_the_power(capsys, tmp_path):
    box = tmp_path / "mybox.toml"
    box.write_text(
        'name = "mybox"\ngpu = "rtx-3090"\ncount = 1\ncpu = "ryzen-9-7950x"\nram_gib = 64\npsu_watts = 850\n'
    )
    d = _plan_json(capsys, "1x4090-7950x", "--have", str(box), "--add", "1x rtx-4090")
    rows = {r["build"]: r for r in d["builds"]}
    assert rows["owned:mybox"]["cost"]["purchase_usd"] == 0
    up = rows["upgrade:mybox+1xrtx-4090"]
    assert up["gpu_kinds"][1] == {"gpu": "NVIDIA GeForce RTX 4090", "count": 1}
    assert up["cost"]["purchase_usd"] == pytest.approx(1700 + 400)  # the card and a second PSU (assumed)
    assert "PSU" in up["cost"]["purchase_basis"] and up["psu_watts"] > 850


def test_add_needs_what_it_is_added_to(capsys):
    for args, says in (
        (("--add", "1x rtx-4090"), "--have"),
        (("--have", "3x rtx-4090", "--add", "1x rtx-4090"), "build file"),
        (("--have", "1x", "rtx-3090"), "quote"),
    ):
        code, _, err = cli(capsys, "plan", "1x4090-7950x", "--model", "llama-3-8b", *args)
        assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


def test_two_more_cards_for_one_stream_on_llama_cpp_gain_what_llama_cpp_measures(capsys):
    """I own 2x RTX 3090: add two more, or sell them for 2x RTX 5090? For one stream of 70B at 4-bit on llama.cpp
    the published gain of two more 3090s is 16.29 -> 16.89 tokens/s (+3.7 %): the upgrade is not worth its
    platform, and the owned pair as it is (nothing to buy) is recommended over it."""
    args = ["--model", "llama-3-70b", "--task", "inference", "--context", "4096", "--concurrency", "1"]
    args += ["--weights", "awq-4bit", "--engine", "llama.cpp", "--format", "json"]
    code, out, err = cli(capsys, "plan", "2x5090-9950x", "--have", "2x rtx-3090", "--add", "2x rtx-3090", *args)
    assert code == 0, err
    d = json.loads(out)
    rows = {r["build"]: r for r in d["builds"]}
    owned, up = rows["owned:2xrtx-3090"], rows["upgrade:2xrtx-3090+2xrtx-3090"]
    assert owned["owned"] and up["owned"]
    assert 0.97 <= up["tokens_per_second"] / owned["tokens_per_second"] <= 16.89 / 16.29 * 1.03
    assert d["verdict"]["build"] == "owned:2xrtx-3090"
    assert not any("owned:" in line and "beats renting" in line for line in d["recommendation"])
    # selling the pair for two 5090s: their price less the pair's sale (US$700 used, less eBay's 12.9 %)
    assert rows["2x5090-9950x"]["cost"]["purchase_usd"] == pytest.approx(2 * 1999 + 649 + 2800 - 2 * 700 * 0.871)


def test_simulate_takes_a_mixed_build_file(tmp_path):
    from gpuadvisor.plan.simulate import simulate_any

    rig = simulate_any(_file(tmp_path, "mixed", 'gpu = ["1x rtx-4090", "1x rtx-3090"]'))
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090"]
    assert [g.memory_total_bytes for g in rig.gpus][0] > 0


def test_an_owned_card_in_a_mixed_build_costs_nothing(tmp_path):
    from gpuadvisor.plan import Ownership
    from gpuadvisor.plan.owned import parse_have

    b = load_build(_file(tmp_path, "mixed", 'gpu = ["1x rtx-4090", "1x rtx-3090"]'))
    own = Ownership(have=parse_have(("1x rtx-3090",)))
    p = run_plan([b], Need(task="qlora", tokens=2e8), {"model": "llama-3-8b"}, prices=load_prices(), own=own)
    assert p.rows[0].cost is not None
    assert p.rows[0].cost.purchase_usd == pytest.approx(1700 + 699 + 2500)  # the 3090 owned: the 4090 and the rest
