"""The speed cost of a GPU power cap, by workload kind, from published power-limit sweeps (gpuadvisor.power_curves).

Held out by source: every curve is refitted without each of its sweeps and compared with that sweep's own points;
the band of predicted / measured is printed and asserted. The plan's held-out questions' sources (the club-3090
project's issue threads, Latif et al. 2024, arXiv 2412.08602) are never fitted on.

Published figures used as cases:
- LLM Garage, 6x RTX 3090, llama.cpp (https://llmgarage.ai/power-limit-tokens-per-second-benchmark): decode at
  4K context 72.6 tok/s at 350 W, 70.7 at 250 W, 68.3 at 200 W; prefill at 198K context 9,893 tok/s at 350 W,
  8,436 at 250 W, 5,941 at 200 W.
- InventiveHQ, RTX 5060 Ti, llama.cpp (https://inventivehq.com/blog/gpu-power-limit-tokens-per-watt): 81.2 tok/s
  at 180 W, 80.4 at 150 W.
- qwertyforce, RTX 3090 ViT-B/16 training (https://blog.qwertyforce.dev/posts/optimal_power_limit): 95 % at
  320 of 480 W.
"""

from __future__ import annotations

import pytest

from gpuadvisor.power_curves import COMPUTE, DECODE, SWEEPS, capped_speed_of, held_out_errors

HELD_OUT_SOURCES = ("club-3090", "2412.08602")
# predicted / measured when each publication is left out (the measured bands; see the printout): where two of the
# others reach the point (as the plan predicts), and where one does. Decode agrees within 4 % down to 2/3 of power.
# Compute-bound work agrees within 10 % above about 2/3 of power and not below it: at half power the sweeps run
# from 57 % (A40, BERT) to 87 % (P100, BERT) of full speed, and the long-context prefill falls fastest of all
HELD_OUT_BAND = {
    (COMPUTE, 2): (0.6, 1.45),
    (DECODE, 2): (0.96, 1.05),
    (COMPUTE, 1): (0.6, 1.9),
    (DECODE, 1): (0.85, 1.2),
}


@pytest.mark.parametrize("kind", [COMPUTE, DECODE])
def test_each_curve_rests_on_four_or_more_sources_and_none_held_out(kind):
    urls = {s.url for s in SWEEPS if s.kind == kind}
    assert len(urls) >= 4
    assert not any(h in u for u in urls for h in HELD_OUT_SOURCES)


@pytest.mark.parametrize(("kind", "least"), [(COMPUTE, 2), (DECODE, 2), (COMPUTE, 1), (DECODE, 1)])
def test_each_curve_refitted_without_each_source_predicts_it(kind, least, capsys):
    errors = held_out_errors(kind, least)
    ratios = [r for rs in errors.values() for r in rs]
    with capsys.disabled():
        for url, rs in errors.items():
            print(f"\n{kind} without {url}: " + (", ".join(f"{r:.3f}" for r in rs) or "no point the others reach"))
        print(f"{kind} (>= {least} sources): held-out predicted/measured {min(ratios):.3f}-{max(ratios):.3f} over "
              f"{len(ratios)} points")  # fmt: skip
    assert len(ratios) >= 4
    low, high = HELD_OUT_BAND[kind, least]
    assert low <= min(ratios) and max(ratios) <= high


def test_decode_costs_little_where_prefill_costs_much():
    """At 200 of 350 W (57 %) the same 6x RTX 3090 rig wrote at 68.3 / 72.6 = 94 % and read prompts at
    5,941 / 9,893 = 60 % of full speed; the curves keep that order at every cap both reach."""
    for f in (0.9, 0.8, 0.7, 0.6, 0.5):
        decode, _ = capped_speed_of(DECODE, f, "geforce")
        compute, _ = capped_speed_of(COMPUTE, f, "geforce")
        assert decode is not None and compute is not None and decode > compute
    decode, _ = capped_speed_of(DECODE, 200 / 350, "geforce")
    assert decode == pytest.approx(68.3 / 72.6, abs=0.03)


def test_a_cap_at_two_thirds_power_between_the_published_training_and_prefill_points():
    """250 of 350 W (71 %): the ViT run is at 95-100 % there, the prefill run at 8,436 / 9,893 = 85 %."""
    v, used = capped_speed_of(COMPUTE, 250 / 350, "geforce")
    assert v is not None and 8436 / 9893 <= v <= 0.97 and len(used) >= 2


def test_below_where_two_sweeps_reach_nothing_is_predicted():
    assert capped_speed_of(COMPUTE, 0.40)[0] is None  # only the prefill sweep measured below 48 %
    assert capped_speed_of(DECODE, 0.30)[0] is None  # only the 6x 3090 sweep measured below 43 %
    assert capped_speed_of(COMPUTE, 1.0) == (1.0, [])


@pytest.mark.parametrize("kind", [COMPUTE, DECODE])
def test_a_data_centre_gpu_falls_back_to_the_pooled_curve_where_its_own_sources_are_too_few(kind):
    """One data-centre publication per kind (Zeus's V100/A40/P100 training trace; one H200 decode paper, arXiv
    2605.11999) is not a curve: the pooled sweeps of the kind answer."""
    own, used = capped_speed_of(kind, 0.6, "datacenter")
    pooled, _ = capped_speed_of(kind, 0.6)
    assert own == pooled and len({s.url for s in used}) >= 2


def test_zeus_data_centre_training_at_half_power_is_between_its_gpus():
    """Zeus power trace, BERT-base on SQuAD: at half the power limit the V100 trained at 65 %, the A40 at 58 %, the
    P100 at 87 % of full speed; the pooled curve at half power lies within that spread of published sweeps."""
    v, used = capped_speed_of(COMPUTE, 0.5, "datacenter")
    assert v is not None and 0.5 <= v <= 0.87
