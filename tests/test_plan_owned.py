"""What the buyer owns (--have): owned GPUs a build uses cost nothing, those it does not use are sold at their
used price less the selling cost, so adding cards and selling to replace are compared on one basis.

Published: an RTX 3090 sells used for US$500-800 in 2026 (https://www.local-llm.net/blog/rtx-3090-best-value-
2026; the shipped reference row is US$700); eBay's final value fee 12.9 % in most categories (2023-02-15,
https://export.ebay.com/en/seller-updates/releases-archive/2023-winter-seller-update/fees-financials/)."""

from __future__ import annotations

import pytest
from test_plan_offer import cli

from gpuadvisor.catalog.platforms import load_prices
from gpuadvisor.errors import InputError
from gpuadvisor.plan import Need, Ownership, load_build, run_plan
from gpuadvisor.plan.owned import parse_have


def _prices(have: str | None) -> dict[str, float]:
    own = Ownership(have=parse_have((have,)) if have else ())
    builds = [load_build(n) for n in ("2x3090-nvlink-5950x", "2x5090-9950x")]
    p = run_plan(builds, Need(task="qlora", tokens=2e8), {"model": "llama-3-70b"}, prices=load_prices(), own=own)
    return {r.build.name: r.cost.purchase_usd for r in p.rows}


def test_owned_cards_in_the_build_cost_nothing_and_the_others_are_sold():
    new, have = _prices(None), _prices("2x rtx-3090")
    assert new["2x3090-nvlink-5950x"] - have["2x3090-nvlink-5950x"] == pytest.approx(2 * 700)
    assert new["2x5090-9950x"] - have["2x5090-9950x"] == pytest.approx(2 * 700 * (1 - 0.129))


def test_have_is_understood_or_one_line(capsys):
    assert parse_have(("2x rtx-3090", "RTX 4090")) == (("rtx-3090", 2), ("rtx-4090", 1))
    with pytest.raises(InputError, match="--have"):
        parse_have(("2x rtx-9999",))
    code, _, err = cli(capsys, "plan", "2x3090-nvlink-5950x", "--model", "llama-3-8b", "--have", "99x rtx-3090")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--have" in err
