"""Held-out buying questions for `gpuadvisor plan`, judged as a buyer would against measured public answers that no
other test (and no catalog row) uses.

Each case first writes down the published figure, its settings, its source (URL) and its date, as data; then it
runs the plan command a buyer would type and compares. Speeds and energy must land within 0.75-1.33 of the
published figure; decisions (rent or buy, a power cap, a refusal) must follow from what the source implies. Where
the plan is outside the band or wrong, the case is marked xfail(strict=True) with what is wrong and why: the file
records the failure, it does not fix it.

The bars (the issue's): 1 rent for short horizons; 2 engine named and layer-split speeds; 3 the wall circuit;
4 node energy; 5 upgrades and mixed builds; 6 an undated prices file refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_plan_offer import cli

BAND = (0.75, 1.33)


def _plan(capsys, *args: str) -> dict:
    code, out, err = cli(capsys, "plan", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _known_wrong(reason: str) -> pytest.MarkDecorator:
    """A case the plan gets wrong today: recorded, not fixed (strict: it must keep failing until it is fixed)."""
    return pytest.mark.xfail(strict=True, reason=reason)


def _row(plan: dict, name: str) -> dict:
    return next(b for b in plan["builds"] if b["build"] == name)


def _within(predicted: float, published: float) -> bool:
    return BAND[0] <= predicted / published <= BAND[1]


def _config(tmp_path: Path, name: str, **dims: int) -> str:
    """A Hugging Face config.json with a Qwen3 model's published dimensions (shared: head_dim 128, 8 KV heads,
    vocabulary 151,936, untied embeddings)."""
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128}
    cfg |= {"num_key_value_heads": 8, "vocab_size": 151936, "max_position_embeddings": 40960}
    cfg |= {"tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_size": 5120} | dims
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(cfg))
    return str(f)


# ---- bar 2: the engine is named; one stream on a layer split matches published llama.cpp-family tables ----------

# ik_llama.cpp (a llama.cpp fork with the same default split mode "layer"), llama-sweep-bench, 2x RTX 3090, one
# stream, TG 128 tokens after a 2,048-token prompt at N_KV = 0, split mode "layer" tables of the PR descriptions.
LAYER_SPLIT_2X3090 = [
    pytest.param(
        # https://github.com/ikawrakow/ik_llama.cpp/pull/1106 (2026-01-05): Qwen3-14B Q4_0, layer: S_TG 95.54 t/s.
        # Dimensions: https://huggingface.co/Qwen/Qwen3-14B/blob/main/config.json
        {"num_hidden_layers": 40, "num_attention_heads": 40, "intermediate_size": 17408},
        95.54,
        id="ik_llama.cpp#1106-qwen3-14b-q4_0-2x3090",
    ),
    pytest.param(
        # https://github.com/ikawrakow/ik_llama.cpp/pull/1107 (2026-01-05): Qwen3-VL-32B Q4_K_M (text part), layer:
        # S_TG 42.33 t/s. Text dimensions as Qwen3-32B: https://huggingface.co/Qwen/Qwen3-32B/blob/main/config.json
        {"num_hidden_layers": 64, "num_attention_heads": 64, "intermediate_size": 25600},
        42.33,
        id="ik_llama.cpp#1107-qwen3-vl-32b-q4_k_m-2x3090",
    ),
]


@pytest.mark.parametrize(("dims", "published_tg"), LAYER_SPLIT_2X3090)
def test_layer_split_writing_speed_on_2x3090_matches_published_sweep_bench(tmp_path, capsys, dims, published_tg):
    model = _config(tmp_path, "qwen3", **dims)
    p = _plan(capsys, "2x3090-nvlink-5950x", "--model", model, "--task", "inference", "--engine", "llama.cpp",
              "--weights", "gptq-4bit", "--concurrency", "1", "--input-len", "2048", "--output-len", "128")  # fmt: skip
    assert p["options"]["engine"] == "llama.cpp"
    assert any(a.startswith("engine: llama.cpp (--engine); a layer-split engine") for a in p["assumptions"])
    got = _row(p, "2x3090-nvlink-5950x")["serving"]["generation_tokens_per_second"]
    # predicted: Qwen3-14B 80.6 (0.84), Qwen3-32B 36.3 (0.86); the plan serves --weights gptq-4bit as Q4_K_M
    assert _within(got, published_tg), (got, published_tg)


def test_two_used_3090s_write_llama_70b_q4_at_the_published_18_to_22_tokens_per_second(capsys):
    """Two used RTX 3090s, no NVLink, Llama 70B at Q4: 18-22 tokens/s ("How to run two RTX 3090s for LLM inference
    in 2026", Best GPU for LLM, 2026: https://dev.to/thurmon_demich/how-to-run-two-rtx-3090s-for-llm-inference-in-2026-1h1j).
    A chat turn: 512 prompt tokens, 128 written; the midpoint 20 tokens/s is the published figure."""
    p = _plan(capsys, "2x3090-nvlink-5950x", "--model", "llama-3-70b", "--task", "inference", "--engine", "ollama",
              "--weights", "gptq-4bit", "--concurrency", "1", "--input-len", "512", "--output-len", "128")  # fmt: skip
    assert p["options"]["engine"] == "ollama"
    row = _row(p, "2x3090-nvlink-5950x")
    assert row["pick"] == "layer split over 2 GPUs x1"
    assert _within(row["serving"]["generation_tokens_per_second"], 20.0)  # predicted 17.2 (0.86)


# ---- bar 4: node energy at the measured average draw --------------------------------------------------------------


def test_8xh100_training_energy_is_near_the_measured_node_average(capsys):
    """Newkirk et al., "Empirically-Calibrated H100 Node Power Models ..." (arXiv 2506.14551, 2025-06-17):
    Brookhaven measurements on 8-GPU H100 nodes: even computationally intensive training runs at 76 % of the
    10.2 kW rating, 7.75 kW. Question: a full fine-tune of Llama 2 13B on an 8x H100 SXM node."""
    published_w = 0.76 * 10_200
    p = _plan(capsys, "8xh100-sxm", "--model", "llama-2-13b", "--task", "full", "--tokens", "1e9")
    cost = _row(p, "8xh100-sxm")["cost"]
    assert _within(cost["average_w"], published_w)  # predicted 6,741 W (0.87)
    assert cost["average_w"] < cost["power_w"]


def test_8xh100_training_average_stays_under_the_measured_peak_and_the_maximum_covers_it(capsys):
    """Latif et al., "Empirical Measurements of AI Training Power Demand on a GPU-Accelerated Node" (arXiv
    2412.08602, 2024-12; IEEE Access 13, 2025): 8x H100 HGX node training Llama2-13b: maximum observed draw
    8.4 kW (18 % under the 10.2 kW rating) with the GPUs near full use. An average cannot exceed that peak; the
    figure that sizes the PSU and the circuit must cover it."""
    measured_peak_w = 8_400
    p = _plan(capsys, "8xh100-sxm", "--model", "llama-2-13b", "--task", "full", "--tokens", "1e9")
    cost = _row(p, "8xh100-sxm")["cost"]
    assert cost["average_w"] <= measured_peak_w <= cost["power_w"]


def test_2x3090_serving_energy_basis_is_near_a_measured_wall_draw(capsys):
    """mitchross/talos-argocd-proxmox PR #1845 (2026-08-03,
    https://github.com/mitchross/talos-argocd-proxmox/pull/1845): a Threadripper box with 2x RTX 3090 serving with vLLM
    measured 896 W at the wall (cards capped at 290 W, each drawing about 245 W). Serving has no published
    average in the plan; the power it counts energy at must still be near what such a box draws serving."""
    measured_w = 896
    p = _plan(capsys, "2x3090-nvlink-5950x", "--model", "llama-3-8b", "--task", "inference", "--concurrency", "8")
    cost = _row(p, "2x3090-nvlink-5950x")["cost"]
    assert _within(cost["average_w"] or cost["power_w"], measured_w)  # predicted 955 W at load (1.07)


# TechnoLynx, "Data Center GPU for AI Workloads: Own vs Rent, TCO, and NVLink Architecture" (2026-05-07,
# https://www.technolynx.com/post/data-center-gpu-for-ai-workloads): an 8x H100 SXM node costs about
# US$300,000-400,000; at 80 %+ sustained use, owned hardware recovers its capital in 12-18 months.
NODE_PRICE = """[[system]]
id = "8xh100-sxm"
usd = 350000
date = "2026-05"
source = "TechnoLynx, Own vs Rent (midpoint of US$300,000-400,000)"
"""


# ---- bar 3: the wall circuit --------------------------------------------------------------------------------------

FOUR_3090 = """name = "4x3090-tr-pro"
gpu = "rtx-3090"
count = 4
cpu = "threadripper-pro-5975wx"
ram_gib = 256
psu_watts = 2000
[price]
system_usd = 8000
"""


def test_four_3090s_on_a_15a_circuit_get_a_named_cap_at_or_under_the_measured_ones(tmp_path, capsys):
    """Puget Systems (Matt Bach, 2020-10, as reported by The FPS Review:
    https://www.thefpsreview.com/2020/10/22/puget-systems-tests-four-blower-style-geforce-rtx-3090-cards-in-a-single-workstation-1717-watt-peak-power-draw/):
    four RTX 3090 power-limited to 300 W drew 1,717 W peak at the wall, over the 1,440 W a 120 V / 15 A circuit
    carries continuously. Puget (Donald Kinghorn, 2020-11-13,
    https://www.pugetsystems.com/labs/hpc/quad-rtx3090-gpu-wattage-limited-maxq-tensorflow-performance-1974/):
    at 280 W per card the wall load was reasonable for a US 110 V / 15 A line, at over 95 % of full performance."""
    f = tmp_path / "4x3090.toml"
    f.write_text(FOUR_3090)
    p = _plan(capsys, str(f), "--model", "llama-3-8b", "--task", "lora", "--tokens", "1e9", "--circuit", "120V/15A")
    circuit = _row(p, "4x3090-tr-pro")["circuit"]
    assert not circuit["fits"] and "nvidia-smi -pl" in circuit["text"]
    assert circuit["cap_w"] <= 300  # 300 W measured over the circuit; predicted -pl 250
    assert _within(circuit["speed_fraction"], 0.95)  # predicted 0.957
    assert p["verdict"]["build"] == "4x3090-tr-pro"
    assert any("nvidia-smi -pl" in line for line in p["recommendation"])


def _four_3090s_writing(tmp_path: Path, capsys, *circuit: str) -> tuple[float, dict | None]:
    f = tmp_path / "4x3090.toml"
    f.write_text(FOUR_3090)
    p = _plan(capsys, str(f), "--model", "llama-3-70b", "--task", "inference", "--engine", "llama.cpp", "--weights",
              "gptq-4bit", "--concurrency", "1", "--input-len", "512", "--output-len", "128", *circuit)  # fmt: skip
    row = _row(p, "4x3090-tr-pro")
    return row["serving"]["generation_tokens_per_second"], row.get("circuit")


@_known_wrong(
    "the sources disagree, the plan follows the majority: the writing speed now takes a decode curve fitted on six "
    "other published sweeps (6x RTX 3090 llama.cpp, LLM Garage: 94% of full speed at 57% of power; RTX 5090 "
    "llama.cpp, qwen38-mtp PR 47: 95% at 67%; RTX 5060 Ti llama.cpp, InventiveHQ: 99% at 83%; RTX 3090 llama.cpp, "
    "jeanfbrito: 99% at 80%; J. Mattheij: no loss at 2/3; H200 decode, arXiv 2605.11999: the cap never binds "
    "above 43%), and at -pl 230 (66% of 350 W) predicts 2% "
    "slower, where this source measured 42% slower at 230 W than at 370 W (the same project elsewhere reports well "
    "under 10% lost at 230 W on another model); outside the band by x1.69, and no fitted source supports it"
)
def test_a_power_capped_3090_build_writes_as_slowly_as_llama_cpp_decode_was_measured(tmp_path, capsys):
    """noonghunna/club-3090 issue #222, maintainer's comment (2026-05-25,
    https://github.com/noonghunna/club-3090/issues/222): "llama.cpp decode on a 3090 is very power-sensitive: on
    our own rig, mainline loses ~42% going from 370 W down to a 230 W cap". A 1,350 W supply for four 3090s
    (280 W CPU + 150 W platform) leaves 230 W a card."""
    published_fraction = 1 - 0.42
    uncapped, _ = _four_3090s_writing(tmp_path, capsys)
    capped, circuit = _four_3090s_writing(tmp_path, capsys, "--circuit", "1350W")
    assert circuit is not None and circuit["cap_w"] == 230
    assert _within(capped / uncapped, published_fraction)  # predicted 1.0 (1.72); the request's 0.944 (1.63)


def test_two_3090s_measured_under_a_15a_circuit_need_no_cap(capsys):
    """The 2x RTX 3090 box above (mitchross/talos-argocd-proxmox PR #1845, 2026-08-03) measured 896 W at the wall
    serving: about half of a 120 V / 15 A circuit. The plan must not demand a cap there."""
    p = _plan(capsys, "2x3090-nvlink-5950x", "--model", "llama-3-8b", "--task", "inference", "--concurrency", "8",
              "--circuit", "120V/15A")  # fmt: skip
    circuit = _row(p, "2x3090-nvlink-5950x")["circuit"]
    assert circuit["fits"] and circuit["cap_w"] is None
    assert p["verdict"]["build"] == "2x3090-nvlink-5950x"


def _node_on_circuit(tmp_path: Path, capsys, circuit: str) -> dict:
    prices = tmp_path / "p.toml"
    prices.write_text(NODE_PRICE)
    return _plan(capsys, "8xh100-sxm", "--model", "llama-3-8b", "--task", "full", "--tokens", "1e10",
                 "--circuit", circuit, "--prices", str(prices))  # fmt: skip


def test_8xh100_on_a_230v_16a_circuit_is_not_recommended(tmp_path, capsys):
    """Latif et al. 2024 (arXiv 2412.08602): an 8x H100 HGX node drew up to 8.4 kW training: over twice the
    3,680 W of one 230 V / 16 A circuit (IEC 60898: full rating), beyond any power cap's reach."""
    p = _node_on_circuit(tmp_path, capsys, "230V/16A")
    assert p["verdict"]["build"] is None
    assert not _row(p, "8xh100-sxm")["circuit"]["fits"]


@_known_wrong(
    "the nameplate is kept, by choice: a dedicated circuit is sized for the rated input of the equipment it feeds "
    "(NEC 645.5(A): 125% of the connected load; an IEC 60364 final circuit's design current for one item is its "
    "rated current), and no publication other than this held-out one reports a measured peak of the node (Newkirk "
    "et al. 2025: 7.75 kW, an operating level of intensive training; MLPerf Training v4.0: 6.741 kW, an average). "
    "The plan names -pl 345 on the 10.2 kW rating (predicted 38% slower, the sweeps 19-59%) and states beside it "
    "that the 7.75 kW measured draw alone would need -pl 650; 345 is 0.60 of the -pl ~570 this peak implies",
)
def test_8xh100_on_a_230v_32a_circuit_gets_a_cap_sized_from_the_measured_peak(tmp_path, capsys):
    """Latif et al. 2024 (arXiv 2412.08602): 8.4 kW measured peak training on 8x H100 (700 W board power each).
    On one 230 V / 32 A circuit (7,360 W) the node must shed 1,040 W at peak: 130 W per GPU, a cap near 570 W."""
    needed_cap_w = 700 - (8_400 - 7_360) / 8
    p = _node_on_circuit(tmp_path, capsys, "230V/32A")
    circuit = _row(p, "8xh100-sxm")["circuit"]
    assert "nvidia-smi -pl" in circuit["text"]  # the bar itself holds: the recommendation names its cap
    assert _within(circuit["cap_w"], needed_cap_w)  # predicted 345 W (0.60)


# ---- bar 1: rent for short horizons; the break-even is printed ---------------------------------------------------


def test_a_three_week_job_on_an_8xh100_node_is_rented(tmp_path, capsys):
    prices = tmp_path / "p.toml"
    prices.write_text(NODE_PRICE)
    p = _plan(capsys, "8xh100-sxm", "rent-8xh100", "--model", "llama-3-8b", "--task", "full", "--tokens", "2e10",
              "--months", "0.75", "--hours-per-day", "24", "--prices", str(prices))  # fmt: skip
    assert p["verdict"]["kind"] == "rent"
    assert any("0.75-month horizon" in line and "renting is recommended" in line for line in p["recommendation"])
    owned = _row(p, "8xh100-sxm")["job"]
    assert owned["break_even_months"] is not None and owned["break_even_hours_per_day"] is not None
    assert any("beats renting the same GPUs above" in line for line in p["recommendation"])


def test_owning_an_8xh100_node_breaks_even_where_the_published_tco_says(tmp_path, capsys):
    """At 80 % use (19.2 h/day) the published break-even is 12-18 months (midpoint 15)."""
    prices = tmp_path / "p.toml"
    prices.write_text(NODE_PRICE)
    p = _plan(capsys, "8xh100-sxm", "rent-8xh100", "--model", "llama-3-8b", "--task", "full", "--tokens", "2e10",
              "--hours-per-day", "19.2", "--prices", str(prices))  # fmt: skip
    assert _within(_row(p, "8xh100-sxm")["job"]["break_even_months"], 15.0)  # predicted 15 (1.0)


# ---- bar 5: upgrades priced as upgrades; mixed builds accepted and judged ---------------------------------------


def test_adding_two_used_3090s_prices_only_the_cards_and_the_platform_change(capsys):
    """SpecPicks, heterogeneous-GPU layer splitting (mid-2026,
    https://specpicks.com/reviews/heterogeneous-gpu-weighting-layer-splitting-local-llm-2026): a 3090 24GB is
    US$700-900 used (midpoint 800). The buyer owns 2x RTX 3090 and asks about adding two more."""
    p = _plan(capsys, "--have", "2x3090-nvlink-5950x", "--add", "2x rtx-3090", "--model", "llama-3-70b", "--task",
              "inference", "--engine", "llama.cpp", "--weights", "gptq-4bit", "--concurrency", "1")  # fmt: skip
    owned = _row(p, "owned:2x3090-nvlink-5950x")
    assert owned["cost"]["purchase_usd"] == 0
    upgrade = _row(p, "upgrade:2x3090-nvlink-5950x+2xrtx-3090")
    basis = upgrade["cost"]["purchase_basis"]
    assert upgrade["gpu_count"] == 4 and basis.startswith("owned: US$0 for what you have + 2 x US$")
    assert _within(_price_of(basis, "NVIDIA GeForce RTX 3090"), 800.0)  # predicted US$700 (0.88)
    # a layer split gives one stream no speed from the two added cards (the published sweep-bench tables above)
    assert upgrade["serving"]["generation_tokens_per_second"] == owned["serving"]["generation_tokens_per_second"]


MIXED = """name = "4090+3090-7950x"
gpu = ["1x rtx-4090", "1x rtx-3090"]
cpu = "ryzen-9-7950x"
ram_gib = 128
psu_watts = 1300
[price]
platform_usd = 2500
"""

# platform-fools, "Asymmetric splits" (2026-04-11, https://platform-fools.pages.dev/posts/2026-04-11-asymmetric-splits):
# one RTX 4090 and one RTX 3090 in one llama-server (layer split); "a 4090 is usually around double the price,
# ~$2,000 for a 4090 and just under $1,000 for a 3090"; the 4090 finishes its layers first and waits on the 3090.
MIXED_PUBLISHED_USD = {"NVIDIA GeForce RTX 4090": 2000.0, "NVIDIA GeForce RTX 3090": 990.0}


def _mixed(tmp_path: Path, capsys) -> dict:
    f = tmp_path / "mixed.toml"
    f.write_text(MIXED)
    return _plan(capsys, str(f), "2x3090-nvlink-5950x", "2x4090-7950x", "--model", "llama-3-70b", "--task",
                 "inference", "--engine", "llama.cpp", "--weights", "gptq-4bit", "--concurrency", "1",
                 "--input-len", "512", "--output-len", "128")  # fmt: skip


def test_a_4090_plus_3090_build_is_accepted_paced_by_the_3090_and_between_the_pairs(tmp_path, capsys):
    p = _mixed(tmp_path, capsys)
    mixed = _row(p, "4090+3090-7950x")
    assert mixed["pace_gpu"] == "NVIDIA GeForce RTX 3090"
    assert {k["gpu"] for k in mixed["gpu_kinds"]} == set(MIXED_PUBLISHED_USD)
    tg = {n: _row(p, n)["serving"]["generation_tokens_per_second"] for n in ("2x3090-nvlink-5950x", "2x4090-7950x")}
    assert tg["2x3090-nvlink-5950x"] < mixed["serving"]["generation_tokens_per_second"] < tg["2x4090-7950x"]
    # both card kinds priced together within the band of the published pair (US$2,990): predicted US$2,400 (0.80)
    gpu_usd = sum(_price_of(mixed["cost"]["purchase_basis"], gpu) for gpu in MIXED_PUBLISHED_USD)
    assert _within(gpu_usd, sum(MIXED_PUBLISHED_USD.values()))


@_known_wrong(
    "the used RTX 3090 reference price (US$700, a 2026 US$500-800 range) is 0.71 of the April 2026 quote "
    "(just under US$1,000); other 2026 sources say US$600 and US$700-900: the used market's spread is wider than "
    "the band and the plan shows one point price, not the range",
)
def test_each_card_kind_of_the_mixed_build_is_priced_near_its_published_price(tmp_path, capsys):
    p = _mixed(tmp_path, capsys)
    basis = _row(p, "4090+3090-7950x")["cost"]["purchase_basis"]
    for gpu, published in MIXED_PUBLISHED_USD.items():
        usd = _price_of(basis, gpu)
        assert _within(usd, published), (gpu, usd, published)


def _price_of(basis: str, gpu: str) -> float:
    """The per-card price the purchase basis gives a GPU kind ("1 x US$1,700 NVIDIA GeForce RTX 4090 ...")."""
    short = gpu.removeprefix("NVIDIA GeForce ")
    for part in basis.split(" + "):
        if short in part and "x US$" in part:
            return float(part.split("x US$", 1)[1].split()[0].replace(",", ""))
    raise AssertionError(f"{gpu} not priced in {basis!r}")


# ---- bar 6: a prices file without a date is refused in one line -------------------------------------------------


@pytest.mark.parametrize(
    ("table", "row", "what"),
    [
        # TechnoLynx 2026-05-07 (above): the node price, copied without the date it was read
        ("system", 'id = "8xh100-sxm"\nusd = 350000\nsource = "TechnoLynx"\n', "system[0].date: None"),
        # platform-fools 2026-04-11 (above): a used 3090 just under US$1,000, without its date
        ("gpu", 'id = "rtx-3090"\nusd = 990\nsource = "platform-fools"\n', "gpu[0].date: None"),
    ],
)
def test_a_published_price_copied_without_its_date_is_refused_in_one_line(tmp_path, capsys, table, row, what):
    f = tmp_path / "prices.toml"
    f.write_text(f"[[{table}]]\n{row}")
    code, _, err = cli(capsys, "plan", "8xh100-sxm", "2x3090-nvlink-5950x", "--model", "llama-3-8b", "--task",
                       "qlora", "--prices", str(f))  # fmt: skip
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and what in lines[0] and str(f) in lines[0], err
