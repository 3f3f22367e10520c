"""How long a buyer keeps a machine: what it fetches when sold (a used-price curve by age, less the cost of
selling it), and the horizon at which owning starts to beat renting the same GPUs.

Resale = the used-market price of a machine of that age (a fraction of its purchase price) x (1 - the selling
cost). A machine sold after two weeks is a used machine: it fetches the used price, never the new one, and the
marketplace or the broker takes its cut, so a short horizon is never nearly free.
"""

from __future__ import annotations

from dataclasses import dataclass

# The used-market curve: the fraction of the purchase price a machine fetches at 36 months; GeForce cards scaled
# by age as kept ** (months / 36) (value lost at a steady rate a month), data-centre GPUs on DATACENTER_CURVE.
USED_36M: dict[str, tuple[float, str]] = {
    "geforce": (
        0.622,
        "GeForce cards hold value: an RTX 3090 (US$1,499 at launch, 2020-09) sold used for US$500-800 "
        "in 2026 (https://www.local-llm.net/blog/rtx-3090-best-value-2026): 43 % after 64 months, 62 % after 36 "
        "at the same monthly rate",
    ),
    "datacenter": (
        0.30,
        "used H100s trade at US$15,000-28,000 and depreciation accelerates after about two years "
        "(Silicon Data's listings analysis, https://www.computeforecast.com/long-reads/"
        "secondary-market-ai-hardware-gpu-economy-neocloud-economics/); H100 residual 60-65 % after 12 months, "
        "40-45 % after 24, 25-35 % after 36 (GPU Lease Rate Index, 500+ secondary-market transactions, 2026-01: "
        "https://v2-pseo-ai.pages.dev/residual/h100-depreciation-calculator)",
    ),
}
# What selling costs the seller, as a fraction of the sale price.
SELLING_COST: dict[str, tuple[float, str]] = {
    "geforce": (
        0.129,
        "eBay's final value fee of 12.9 % + US$0.30 an order in most categories, from 2023-02-15 "
        "(https://export.ebay.com/en/seller-updates/releases-archive/2023-winter-seller-update/fees-financials/)",
    ),
    "datacenter": (
        0.15,
        "an IT-asset-disposition broker's margin: refurbished data-centre GPUs sell for 15-25 points more than "
        "used ones (https://www.computeforecast.com/long-reads/"
        "secondary-market-ai-hardware-gpu-economy-neocloud-economics/)",
    ),
}
# Data-centre GPUs: the H100's residual by age (midpoints of the GPU Lease Rate Index's table), linear between;
# past the last point the value falls no further.
DATACENTER_CURVE = ((0.0, 1.0), (12.0, 0.625), (24.0, 0.425), (36.0, 0.30), (48.0, 0.175), (60.0, 0.125))
SHORT_HORIZON_MONTHS = 3.0  # under this, a bought machine is sold nearly new at a used price: renting is the answer
MAX_BREAK_EVEN_MONTHS = 120.0


def used_fraction(gpu_class: str, months: float) -> float:
    """What a machine of this class fetches on the used market after ``months``, before the selling cost."""
    m = max(months, 0.0)
    if gpu_class == "datacenter":
        pts = DATACENTER_CURVE
        for (m0, v0), (m1, v1) in zip(pts, pts[1:], strict=False):
            if m <= m1:
                return v0 + (v1 - v0) * (m - m0) / (m1 - m0)
        return pts[-1][1]
    kept, _ = USED_36M[gpu_class]
    return float(kept ** (m / 36.0))


def net_resale(gpu_class: str, months: float) -> float:
    """What the seller keeps: the used price after ``months`` less the selling cost."""
    fee, _ = SELLING_COST[gpu_class]
    return used_fraction(gpu_class, months) * (1.0 - fee)


def resale_basis(gpu_class: str) -> str:
    kept, src = USED_36M[gpu_class]
    fee, fee_src = SELLING_COST[gpu_class]
    return (
        f"used price {kept:.0%} of the purchase after 36 months (scaled by age), less a {fee:.1%} selling cost; "
        f"{src}; selling cost: {fee_src}"
    )


@dataclass
class Horizon:
    """When owning beats renting the same GPUs: at the buyer's hours a day, after how many months."""

    months: float | None  # None: not within MAX_BREAK_EVEN_MONTHS at these hours
    hours_per_day: float


def break_even_months(
    purchase_usd: float,
    gpu_class: str,
    rent_usd_per_hour: float,
    energy_usd_per_hour: float,
    hours_per_day: float,
    resale: float | None = None,
) -> float | None:
    """The first month (in half months) at which owning (purchase - resale + energy) costs no more than renting
    for the same hours; None when renting stays cheaper for ten years. ``resale`` given: that fraction, at any
    age."""
    hours_per_month = hours_per_day * 730.0 / 24.0
    margin = (rent_usd_per_hour - energy_usd_per_hour) * hours_per_month
    if margin <= 0:
        return None
    m = 0.5
    while m <= MAX_BREAK_EVEN_MONTHS:
        kept = resale if resale is not None else net_resale(gpu_class, m)
        if purchase_usd * (1 - kept) <= margin * m:
            return m
        m += 0.5
    return None
