"""Pre-purchase planning: candidate builds side by side for a workload, with prices, power and a report.

Public API:
    load_build(ref), builtin_builds()     candidate builds (built-in names, preset:NAME, .toml files)
    run_plan(builds, need, model_kw, ...) -> Plan
    render_text(plan), plan.to_dict()     terminal table / JSON
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.plan.build import Build, builtin_builds, load_build
from gpuadvisor.plan.costs import DEFAULT_KWH_USD, DEFAULT_MONTHS, HOURS_PER_MONTH, REST_OF_SYSTEM_W
from gpuadvisor.plan.evaluate import Need, Row, evaluate_build, workload_for
from gpuadvisor.plan.rank import rank, recommend

__all__ = ["Build", "Need", "Plan", "Row", "builtin_builds", "load_build", "run_plan"]


@dataclass
class Plan:
    need: Need
    model: str
    rows: list[Row]
    recommendation: list[str]
    assumptions: list[str] = field(default_factory=list)
    calibration: dict[str, Any] | None = None
    kwh_usd: float = DEFAULT_KWH_USD
    months: float = DEFAULT_MONTHS

    def to_dict(self) -> dict[str, Any]:
        from gpuadvisor import __version__

        return {
            "kind": "gpuadvisor-plan",
            "version": 1,
            "tool_version": __version__,
            "need": dict(self.need.__dict__),
            "model": self.model,
            "kwh_usd": self.kwh_usd,
            "months": self.months,
            "calibration": self.calibration,
            "recommendation": self.recommendation,
            "assumptions": self.assumptions,
            "builds": [r.to_dict() for r in self.rows],
        }


def run_plan(
    builds: list[Build],
    need: Need,
    model_kw: dict[str, Any],
    *,
    prices: Any,
    kwh_usd: float = DEFAULT_KWH_USD,
    months: float = DEFAULT_MONTHS,
    calibration: Any = None,
) -> Plan:
    workload = workload_for(need, model_kw)
    rows = [
        evaluate_build(b, need, workload, prices, kwh_usd=kwh_usd, months=months, calibration=calibration)
        for b in builds
    ]
    rows = rank(rows)
    assumptions = [
        "every figure is predicted for a machine that is not there: the advisor's model on a simulated rig of the "
        "build",
        "power at load: the build's sourced system figure where it has one, else GPU board power + CPU TDP + "
        f"{REST_OF_SYSTEM_W:g} W",
        f"energy at US${kwh_usd:g}/kWh{' (assumed: pass --kwh-price)' if kwh_usd == DEFAULT_KWH_USD else ''}; a "
        "purchase written off over "
        f"{months:g} months ({months * HOURS_PER_MONTH:,.0f} "
        f"hours){' (assumed: pass --months)' if months == DEFAULT_MONTHS else ''}",
        "prices are reference prices (launch list price, or a public on-demand cloud page) with their date; a street "
        "or used price differs: pass --prices",
    ]
    if need.task == "inference":
        from gpuadvisor.plan.serving import ASSUMPTIONS

        assumptions.append(ASSUMPTIONS)
    adv = next((r.advice for r in rows if r.advice), None)
    if adv:
        assumptions += [a for a in adv.get("assumptions", []) if isinstance(a, str)][:6]
    model = (
        adv["workload"].get("model_label") or adv["workload"].get("model")
        if adv
        else str(model_kw.get("model") or model_kw.get("params"))
    )
    return Plan(
        need=need,
        model=str(model),
        rows=rows,
        recommendation=recommend(rows, need),
        assumptions=assumptions,
        calibration=calibration.to_dict() if calibration else None,
        kwh_usd=kwh_usd,
        months=months,
    )
