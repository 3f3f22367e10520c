"""Power where it is plugged in: the wall circuit, the continuous-load rule, PSUs split over circuits, and the
power cap that makes a build fit, with its speed cost, all from the one power model (gpuadvisor.power).

Published figures used as cases:
- NEC 210.19(A)(1)/210.20(A): a continuous load (3 h or more) may use 80 % of a branch circuit's rating:
  1,440 W on 120 V / 15 A, 1,920 W on 120 V / 20 A.
- RTX 4090 total graphics power 450 W (https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/);
  Threadripper PRO 7975WX TDP 350 W (AMD); 150 W for the rest of the platform (Intel's ATX 3.0 sizing example).
- RTX 3090 training under nvidia-smi -pl: 95 % of its speed at 320 W, 90 % at 280 W, 80 % at 230 W of 480 W
  (https://blog.qwertyforce.dev/posts/optimal_power_limit, TF32 ViT-B/16); 6x RTX 3090 llama.cpp prefill at 198K
  context: 9,893 tok/s at 350 W, 5,941 at 200 W, 2,549 at 150 W
  (https://llmgarage.ai/power-limit-tokens-per-second-benchmark).
"""

from __future__ import annotations

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.power import circuit_fit, parse_circuit, power_budget


@pytest.mark.parametrize(
    ("text", "count", "continuous"),
    [("120V/15A", 1, 1440.0), ("120V/20A", 1, 1920.0), ("2x120V/20A", 2, 1920.0), ("230V/16A", 1, 3680.0)],
)
def test_circuits_and_the_continuous_load_rule(text, count, continuous):
    c = parse_circuit(text)
    assert c.count == count and c.continuous_w == pytest.approx(continuous)


def test_watts_given_are_the_continuous_limit():
    assert parse_circuit("2.4kW").continuous_w == 2400 and parse_circuit("1800W").continuous_w == 1800


@pytest.mark.parametrize("bad", ["120V", "15A", "120V/15", "0V/15A", "120V/15A/3", "1e308W", "99x120V/15A"])
def test_a_circuit_not_understood_is_one_line(bad):
    with pytest.raises(InputError, match="--circuit"):
        parse_circuit(bad)


def _four_4090s() -> tuple[float, list[float]]:
    pb = power_budget([450.0] * 4, ["rtx-4090"] * 4, 350.0)
    return pb.load_w, [450.0] * 4


def test_four_4090s_over_one_120v_15a_circuit_get_the_cap_that_fits():
    load, boards = _four_4090s()
    assert load == 2300  # 4 x 450 + 350 + 150
    fit = circuit_fit(load, boards, 2, parse_circuit("120V/15A"))
    assert not fit.fits and fit.per_circuit_w == 2300
    # (1,440 - 350 - 150) / 4 = 235 W a card: 52 % of 450 W. Two published sweeps reach that deep: the ViT
    # training run (between 80 % at 48 % and 90 % at 58 % of power) and the prefill run (between 26 % at 43 % and
    # 60 % at 57 %); the cap's cost lies between them, and training is slower than the ViT run alone said
    assert fit.cap_w == 235
    assert 0.43 < fit.speed_fraction < 0.85
    assert "nvidia-smi -pl 235" in fit.text and "the mean of 3 published power-limit sweeps" in fit.text
    assert any("llmgarage.ai" in s for s in fit.sources) and any("qwertyforce" in s for s in fit.sources)


def test_two_psus_on_two_circuits_fit_without_a_cap():
    load, boards = _four_4090s()
    fit = circuit_fit(load, boards, 2, parse_circuit("2x120V/15A"))
    assert fit.fits and fit.per_circuit_w == 1150 and fit.circuits_used == 2 and fit.cap_w is None


def test_one_psu_cannot_use_a_second_circuit():
    load, boards = _four_4090s()
    assert not circuit_fit(load, boards, 1, parse_circuit("2x120V/15A")).fits


def test_a_cap_below_every_published_sweep_is_not_predicted():
    """0.3 of board power: only the prefill sweep (down to 150 of 350 W) reaches below the ViT run's 48 %."""
    load, boards = _four_4090s()
    fit = circuit_fit(load, boards, 1, parse_circuit("900W"))
    assert not fit.fits and fit.cap_w is None and "no power cap" in fit.text


def test_the_8xh100_cap_states_the_nameplate_and_the_measured_draw(tmp_path):
    """DGX H100 datasheet: 10.2 kW maximum; Newkirk et al. 2025 (arXiv 2506.14551): intensive training at 76 % of
    it, 7,752 W. On 230 V / 32 A (7,360 W): (7,360 - (10,200 - 8 x 700)) / 8 = 345 W on the rating, and
    (7,360 - (7,752 - 5,600)) / 8 = 651 W on the measured draw (rounded down to 650)."""
    p, rows = _plan(("8xh100-sxm",), "llama-3-8b", circuit=parse_circuit("230V/32A"))
    fit = rows["8xh100-sxm"].circuit
    assert fit.cap_w == 345
    assert "10,200 W rating" in fit.text and "NEC 645.5(A)" in fit.text and "7,752 W" in fit.text
    assert "-pl 650" in fit.text


def _plan(names: tuple[str, ...], model: str, circuit=None):
    from gpuadvisor.catalog.platforms import load_prices
    from gpuadvisor.plan import Need, load_build, run_plan

    p = run_plan(
        [load_build(n) for n in names],
        Need(task="lora", tokens=1e8),
        {"model": model},
        prices=load_prices(),
        circuit=circuit,
    )
    return p, {r.build.name: r for r in p.rows}


def test_an_8_gpu_server_on_a_house_circuit_is_never_recommended():
    p, rows = _plan(("8xa100-sxm-used", "4x4090-tr-pro"), "llama-3-8b", circuit=parse_circuit("120V/15A"))
    assert not rows["8xa100-sxm-used"].meets_need and "over the circuit" in rows["8xa100-sxm-used"].need_reason
    assert p.verdict.build == "4x4090-tr-pro"
    assert any(s.startswith("Power-cap it for the circuit:") and "-pl 235" in s for s in p.recommendation)


def test_circuit_on_the_command_line(capsys):
    from gpuadvisor.cli import main

    with pytest.raises(SystemExit) as e:
        main(["plan", "4x4090-tr-pro", "--model", "llama-3-8b", "--task", "lora", "--circuit", "120 volts"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--circuit" in err[0]


def test_the_sweeps_behind_the_caps_are_listed_once_after_the_reasons(capsys):
    """The recommendation names the cap and its cost, not a dozen URLs; the sweeps' sources are listed once, after
    the per-build reasons, however many capped builds use them."""
    from gpuadvisor.cli import main

    with pytest.raises(SystemExit) as e:
        main(["plan", "4x4090-tr-pro", "4x5090-tr-pro", "--model", "llama-3-8b", "--task", "lora", "--circuit",
              "120V/15A"])  # fmt: skip
    out = capsys.readouterr().out
    assert e.value.code == 0
    recommendation = out.split("Recommendation:")[1].split("Why:")[0]
    assert "nvidia-smi -pl" in recommendation and "http" not in recommendation
    sweeps = out.split("Power-limit sweeps behind the caps' speed costs:")[1].split("Assumptions:")[0]
    assert out.count("Power-limit sweeps behind") == 1
    assert out.count("qwertyforce.dev") == 1 and "qwertyforce.dev" in sweeps


def test_node_energy_at_the_measured_average_not_the_maximum():
    """MLPerf Training v4.0, Llama 2 70B LoRA on 8x H100 SXM: 6.741 kW per node on average (Sustainable Metal
    Cloud, https://smc.co/mlperfv40/results/llama2-70b-lora), against the DGX H100's 10.2 kW maximum (NVIDIA DGX
    H100 datasheet). Energy is counted at the average (within 0.75-1.33 of it); the PSU and circuit keep 10.2 kW."""
    p, rows = _plan(("8xh100-sxm", "4x4090-tr-pro"), "llama-3-70b")
    h100 = rows["8xh100-sxm"]
    assert 0.75 <= h100.cost.energy_w / 6741 <= 1.33 and h100.cost.power_w == 10200
    assert h100.job.energy_kwh == pytest.approx(h100.cost.energy_w / 1000 * 1.58 * h100.job.hours)
    ws = rows["4x4090-tr-pro"]  # no published measurement: the GPUs at the advisor's utilisation
    assert ws.cost.power_w == 2300 and ws.cost.energy_w == pytest.approx(2300 - 1800 * (1 - ws.efficiency))
    assert any(a.startswith("PUE by setting: home or office") for a in p.assumptions)


def test_a_capped_one_stream_writes_on_the_decode_curve_and_reads_prompts_on_the_compute_curve(tmp_path, capsys):
    """LLM Garage, 6x RTX 3090 llama.cpp (https://llmgarage.ai/power-limit-tokens-per-second-benchmark): at 200 of
    350 W decode kept 68.3 / 72.6 = 94 % of its speed while prefill kept 5,941 / 9,893 = 60 %. Four 3090s on a
    1,350 W supply: (1,350 - 280 - 150) / 4 = 230 W a card (66 %): the writing speed must lose less than the 6 %
    measured at 57 %, the prompt's reading more, so the request's tokens/s (prompt included) falls in between."""
    import json

    from test_plan_heldout import FOUR_3090
    from test_plan_offer import cli

    f = tmp_path / "4x3090.toml"
    f.write_text(FOUR_3090)

    def row(*circuit: str) -> dict:
        code, out, err = cli(capsys, "plan", str(f), "--model", "llama-3-70b", "--task", "inference", "--engine",
                             "llama.cpp", "--weights", "gptq-4bit", "--concurrency", "1", "--input-len", "512",
                             "--output-len", "128", *circuit, "--format", "json")  # fmt: skip
        assert code == 0, err
        return json.loads(out)["builds"][0]

    free, capped = row(), row("--circuit", "1350W")
    assert capped["circuit"]["cap_w"] == 230
    writing = capped["serving"]["generation_tokens_per_second"] / free["serving"]["generation_tokens_per_second"]
    reading = free["serving"]["ttft_s"] / capped["serving"]["ttft_s"]
    assert 68.3 / 72.6 < writing < 1.0 and reading < 0.9
    assert reading < capped["tokens_per_second"] / free["tokens_per_second"] < writing
