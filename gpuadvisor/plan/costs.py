"""What a build costs: its price, its power at load, the energy and the money a job takes, and when buying
beats renting the same GPUs.

Every figure says where it comes from: a reference price (dated, sourced), the build's own figure, or an
assumption shown in the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.catalog.platforms import Prices
from gpuadvisor.plan.build import Build

HOURS_PER_MONTH = 730.0  # 8,760 h / 12
REST_OF_SYSTEM_W = 200.0  # memory, disks, fans, NICs under load (the PSU rule's rule of thumb; assumed)
DEFAULT_KWH_USD = 0.15  # assumed; pass --kwh-price
DEFAULT_MONTHS = 36  # a purchase written off over three years of use (assumed); pass --months


@dataclass
class Cost:
    purchase_usd: float | None = None
    purchase_basis: str | None = None  # what the price is made of, with its labels
    purchase_unknown: str | None = None  # why there is no price
    rent_usd_per_hour: float | None = None
    rent_basis: str | None = None
    power_w: float = 0.0
    power_basis: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def build_cost(b: Build, prices: Prices) -> Cost:
    c = Cost()
    # Power at load: the build's own sourced figure, else board power of the GPUs + CPUs' TDP + the rest.
    if b.power_at_load_w:
        c.power_w = float(b.power_at_load_w)
        c.power_basis = b.power_source or f"{b.origin}: power_at_load_w"
    else:
        gpu_w = (b.gpu.tdp_w or 0) * b.count
        cpu_w = (b.cpu.tdp_w if b.cpu else 0) * b.sockets
        c.power_w = gpu_w + cpu_w + REST_OF_SYSTEM_W
        c.power_basis = (
            f"{b.count} x {b.gpu.tdp_w:g} W GPU board power + {b.sockets} x {cpu_w / max(b.sockets, 1):g} W CPU TDP "
            f"+ {REST_OF_SYSTEM_W:g} W for the rest (assumed: GPUs at board power under training)"
        )
    if b.rent:
        cloud = prices.cloud.get(b.gpu.id)
        given = b.price.get("gpu_hour_usd")
        if given:
            c.rent_usd_per_hour = float(given) * b.count
            c.rent_basis = f"{b.count} x US${given:g}/GPU-hour ({b.price.get('source', b.origin)})"
        elif cloud:
            c.rent_usd_per_hour = cloud.usd * b.count
            c.rent_basis = f"{b.count} x US${cloud.usd:g}/GPU-hour ({cloud.label()}: {cloud.source})"
        else:
            c.purchase_unknown = (
                f"no reference cloud price for {b.gpu.name}: give gpu_hour_usd in the build or a "
                "[[cloud]] row in --prices"
            )
        return c
    p = b.price
    if p.get("system_usd"):
        c.purchase_usd = float(p["system_usd"])
        c.purchase_basis = (
            f"system US${p['system_usd']:,.0f} "
            f"({'reference price, ' + p['date'] if p.get('date') else 'given'}: {p.get('source', b.origin)})"
        )
    elif b.name in prices.system or (b.rig_description is None and f"{b.name}" in prices.system):
        sp = prices.system[b.name]
        c.purchase_usd, c.purchase_basis = sp.usd, f"system US${sp.usd:,.0f} ({sp.label()}: {sp.source})"
    else:
        parts, missing = [], []
        gp = p.get("gpu_usd") or (prices.gpu[b.gpu.id].usd if b.gpu.id in prices.gpu else None)
        if gp:
            label = "given" if p.get("gpu_usd") else f"{prices.gpu[b.gpu.id].label()}: {prices.gpu[b.gpu.id].source}"
            parts.append((gp * b.count, f"{b.count} x US${gp:,.0f} GPU ({label})"))
        else:
            missing.append(f"{b.gpu.name} has no public list price")
        if b.cpu is not None:
            cp = prices.cpu.get(b.cpu.id)
            if cp:
                parts.append((cp.usd * b.sockets, f"{b.sockets} x US${cp.usd:,.0f} CPU ({cp.label()}: {cp.source})"))
            else:
                missing.append(f"{b.cpu.name} has no reference price")
        if p.get("platform_usd"):
            parts.append(
                (
                    float(p["platform_usd"]),
                    f"US${p['platform_usd']:,.0f} for the rest ({p.get('platform_note', 'given in the build')})",
                )
            )
        else:
            missing.append("the rest of the platform is not priced")
        if missing:
            c.purchase_unknown = "; ".join(missing) + " (give prices with --prices, or [price] in the build)"
        else:
            c.purchase_usd = sum(v for v, _ in parts)
            c.purchase_basis = " + ".join(t for _, t in parts)
    return c


@dataclass
class JobCost:
    hours: float | None
    energy_kwh: float | None
    energy_usd: float | None
    job_usd: float | None  # rent: hours x rate; buy: energy + the purchase written off over --months
    usd_per_million_tokens: float | None
    break_even_months: float | None
    break_even_basis: str | None
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def job_cost(
    b: Build,
    c: Cost,
    tokens_per_second: float | None,
    tokens: float | None,
    *,
    kwh_usd: float,
    months: float,
    prices: Prices,
) -> JobCost:
    notes: list[str] = []
    hours = tokens / tokens_per_second / 3600 if (tokens and tokens_per_second) else None
    kw = c.power_w / 1000
    energy_kwh = kw * hours if hours is not None else None
    energy_usd = energy_kwh * kwh_usd if energy_kwh is not None and not b.rent else None
    per_hour: float | None
    if b.rent:
        per_hour = c.rent_usd_per_hour
    elif c.purchase_usd is not None:
        per_hour = c.purchase_usd / (months * HOURS_PER_MONTH) + kw * kwh_usd
    else:
        per_hour = None
    job_usd = per_hour * hours if (per_hour is not None and hours is not None) else None
    per_m = per_hour / (tokens_per_second * 3600) * 1e6 if (per_hour is not None and tokens_per_second) else None
    be, be_basis = None, None
    cloud = prices.cloud.get(b.gpu.id)
    if not b.rent and c.purchase_usd is not None:
        if cloud:
            monthly_rent = cloud.usd * b.count * HOURS_PER_MONTH
            monthly_energy = kw * kwh_usd * HOURS_PER_MONTH
            if monthly_rent > monthly_energy:
                be = c.purchase_usd / (monthly_rent - monthly_energy)
                be_basis = (
                    f"renting {b.count} x {b.gpu.name} at US${cloud.usd:g}/GPU-hour ({cloud.label()}) around the clock "
                    f"costs US${monthly_rent:,.0f}/month against US${monthly_energy:,.0f}/month of energy"
                )
        else:
            be_basis = f"no reference cloud price for {b.gpu.name}: no break-even against renting"
    return JobCost(hours, energy_kwh, energy_usd, job_usd, per_m, be, be_basis, notes)
