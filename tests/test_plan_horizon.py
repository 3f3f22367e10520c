"""Ownership horizons true at both ends: what a machine fetches when sold (the used price by age, less the cost
of selling it), renting for a short horizon, and the break-even horizon of every owned build.

Published figures used as cases:
- H100 residual value by age: 60-65 % after 12 months, 40-45 % after 24, 25-35 % after 36 (GPU Lease Rate Index,
  500+ secondary-market transactions, updated 2026-01-08: https://v2-pseo-ai.pages.dev/residual/h100-depreciation-
  calculator).
- eBay's final value fee, most categories: 12.9 % + US$0.30 an order from 2023-02-15
  (https://export.ebay.com/en/seller-updates/releases-archive/2023-winter-seller-update/fees-financials/).
- RTX 3090: US$1,499 at launch (2020-09), US$500-800 used in 2026 (https://www.local-llm.net/blog/rtx-3090-best-
  value-2026).
"""

from __future__ import annotations

import pytest

from gpuadvisor.catalog.platforms import load_prices
from gpuadvisor.plan import Need, Ownership, load_build, run_plan
from gpuadvisor.plan.horizon import break_even_months, net_resale, used_fraction


@pytest.mark.parametrize(("months", "low", "high"), [(12, 0.60, 0.65), (24, 0.40, 0.45), (36, 0.25, 0.35)])
def test_data_centre_used_price_follows_the_published_h100_residuals(months, low, high):
    assert low <= used_fraction("datacenter", months) <= high


def test_a_rtx_3090_five_years_on_sells_within_its_published_used_range():
    # 2020-09 to 2026-01 is 64 months: US$500-800 of US$1,499
    assert 500 / 1499 <= used_fraction("geforce", 64) <= 800 / 1499


def test_resale_is_never_above_the_used_price_after_fees():
    # sold after two weeks: at most what a buyer pays for a used card, less eBay's 12.9 %
    assert net_resale("geforce", 0.5) <= 1 - 0.129
    assert net_resale("datacenter", 0.5) < used_fraction("datacenter", 0.5) < 1.0
    assert net_resale("geforce", 0) == pytest.approx(1 - 0.129)


def test_break_even_months_is_where_owning_meets_renting():
    # US$199,000 of 8x A100 against US$14.32/h (8 x US$1.79), energy US$1.54/h, 24 h/day: owning the machine
    # costs its purchase less what it fetches; renting the hours. The month found is the first where owning wins.
    m = break_even_months(199000, "datacenter", 14.32, 1.54, 24.0)
    assert m is not None
    per_month = (14.32 - 1.54) * 730
    assert 199000 * (1 - net_resale("datacenter", m)) <= per_month * m
    assert 199000 * (1 - net_resale("datacenter", m - 0.5)) > per_month * (m - 0.5)
    assert break_even_months(199000, "datacenter", 1.0, 1.54, 24.0) is None  # rent below the energy: never


def test_a_two_week_job_on_a_two_node_cluster_rents():
    """Two 8x A100 nodes (US$438,000 with their network) for a two-week job (0.5 months, 24 h/day): a machine
    sold after two weeks fetches a used price less the broker's margin, so renting is recommended and says why."""
    builds = [load_build(n) for n in ("2x8xa100-sxm-used-ib", "rent-2x8xh100-ib")]
    own = Ownership(months=0.5, hours_per_day=24, given=("months", "hours_per_day"))
    p = run_plan(builds, Need(task="full", tokens=2e10), {"model": "llama-3-8b"}, prices=load_prices(), own=own)
    assert p.verdict is not None and p.verdict.kind == "rent"
    assert any("0.5-month horizon" in s and "renting is recommended" in s for s in p.recommendation)
    owned = next(r for r in p.rows if not r.build.rent)
    assert owned.job.period_usd > 0.15 * owned.cost.purchase_usd  # at least the broker's margin is lost


def test_every_owned_build_says_its_break_even_horizon(capsys):
    from gpuadvisor.cli import main

    with pytest.raises(SystemExit) as e:
        main(["plan", "8xa100-sxm-used", "rent-8xa100", "--model", "llama-3-8b", "--task", "full", "--tokens", "1e9"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "break-even against renting the same GPUs: after" in " ".join(out.split())
