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
from gpuadvisor.plan.costs import (
    DEFAULT_KWH_USD,
    DEFAULT_MONTHS,
    PUE_CLOUD,
    PUE_DESK,
    PUE_RACK,
    REST_OF_SYSTEM_W,
    Ownership,
)
from gpuadvisor.plan.evaluate import Need, Row, evaluate_build, workload_for
from gpuadvisor.plan.rank import Verdict, rank, recommend

__all__ = ["Build", "Need", "Ownership", "Plan", "Row", "Verdict", "builtin_builds", "load_build", "run_plan"]


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
    ownership: Ownership = field(default_factory=Ownership)
    verdict: Verdict | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the advisor options the plan was asked with

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
            "ownership": {k: v for k, v in self.ownership.__dict__.items() if k != "given"}
            | {
                "assumed": [
                    k
                    for k in ("hours_per_day", "months", "resale", "kwh_usd", "pue", "finance_apr")
                    if k not in self.ownership.given
                ]
            },
            "options": self.options,
            "calibration": self.calibration,
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "recommendation": self.recommendation,
            "assumptions": self.assumptions,
            "builds": [r.to_dict() for r in self.rows],
        }


def ranking_sensitivity(rows: list[Row], need: Need) -> list[str]:
    """Training: does doubling the sequence length flip the two fastest builds that meet the need (or stop one
    fitting)? Said in one sentence when it does; the advisor is re-asked on the same simulated machines."""
    if need.task == "inference":
        return []
    # The leader and the first build ranked below it (builds tied with the leader already share its place; a tie
    # among the builds behind it still leaves one to compare).
    ranked = [r for r in rows if r.meets_need and r.tokens_per_second and r.rig is not None]
    top = ranked[:1] + [r for r in ranked[1:] if ranked and r.rank != ranked[0].rank][:1]
    if len(top) < 2 or top[0].workload is None:
        return []
    from dataclasses import replace

    from gpuadvisor.advisor import advise

    seq = int(top[0].advice.workload.seq_len or 0) if top[0].advice else 0
    if not seq:
        return []
    longer: list[tuple[Row, float | None]] = []
    for r in top:
        try:
            adv = advise(r.rig, replace(r.workload, seq_len=2 * seq)).to_dict()
        except Exception:  # noqa: BLE001 - a workload the advisor refuses at that length: no sentence, not a crash
            return []
        pick = adv.get("pick_detail") or {}
        longer.append((r, pick.get("tokens_per_second") if adv.get("fits") else None))
    (a, ta), (b, tb) = longer
    if ta is None:
        return [
            f"Sensitivity: at {2 * seq:,}-token sequences {a.build.name} no longer fits; {b.build.name} "
            + ("does." if tb else "does not either.")
        ]
    if tb is not None and tb > ta:
        return [
            f"Sensitivity: at {2 * seq:,}-token sequences {b.build.name} overtakes {a.build.name} "
            f"({tb:,.0f} against {ta:,.0f} tokens/s)."
        ]
    return []


def _gguf_note(engine: str, model_kw: dict[str, Any]) -> str:
    """The GGUF file a layer-split engine reads for the weights asked for."""
    from gpuadvisor.advisor.engines import weight_format
    from gpuadvisor.plan.evaluate import SPLIT_ENGINE, split_weights

    q = split_weights(SPLIT_ENGINE[engine], model_kw)
    asked = model_kw.get("weight_quant")
    label = weight_format(q).label if q != "none" else "GGUF F16"
    return f"weights: {engine} reads GGUF files: " + (
        f"--weights {asked} is served as {label} (about the same bits per weight)"
        if asked
        else f"{label}, the usual download"
    )


def run_plan(
    builds: list[Build],
    need: Need,
    model_kw: dict[str, Any],
    *,
    prices: Any,
    own: Ownership | None = None,
    calibration: Any = None,
    circuit: Any = None,
) -> Plan:
    own = own or Ownership()
    workload = workload_for(need, model_kw)
    cache: dict[str, Any] = {}
    from gpuadvisor.advisor.search import smallest_only

    with smallest_only():  # a row's reason names the smallest rig and its own GPU's, never the whole list
        rows = [
            evaluate_build(
                b, need, workload, prices, own=own, calibration=calibration, rig_cache=cache, circuit=circuit
            )
            for b in builds
        ]
    rows = rank(rows)
    assumptions = [
        "every figure is predicted for a machine that is not there: the advisor's model on a simulated rig of the "
        "build",
        "power at load: the build's sourced system figure where it has one, else GPU board power + CPU TDP + "
        f"{REST_OF_SYSTEM_W:g} W for the platform (the PSU rule's figure)",
        f"owning against renting on the same basis: {own.label()}; owning = purchase + interest + energy x PUE - "
        "resale, spread over the hours of use",
        "prices are reference prices (launch MSRP, street or used, or public cloud pages) with their date and "
        "source; yours differ: pass --prices",
    ]
    if need.task != "inference":
        assumptions.append(
            "energy at the workload's average draw (training): a measured node figure where published, else the "
            "GPUs at the advisor's fraction of the ideal speed; the maximum sizes the PSU and the circuit"
        )
    assumptions.append(
        f"PUE by setting: {PUE_DESK[1]}; colocation or data centre {PUE_RACK[0]:g} (Uptime Institute's 2023 "
        f"survey average); {PUE_CLOUD}"
    )
    if circuit is not None:
        assumptions.append(f"plugged into {circuit.label()}: {circuit.basis}")
    stale = sorted({s for r in rows if r.cost for s in r.cost.stale})
    assumptions += stale
    if need.task == "inference":
        from gpuadvisor.plan.serving import ASSUMPTIONS, LAYER_SPLIT, LAYER_SPLIT_ENGINES

        assumptions.append(ASSUMPTIONS)
        engine = need.engine or "vllm"
        assumptions.append(
            f"engine: {engine} (--engine); "
            + (
                LAYER_SPLIT
                if engine in LAYER_SPLIT_ENGINES
                else "tensor parallel: every GPU reads its share of each "
                "layer at once, so one stream speeds up with more GPUs"
            )
        )
        if engine in LAYER_SPLIT_ENGINES:
            assumptions.append(_gguf_note(engine, model_kw))
    adv = next((r.advice for r in rows if r.advice), None)
    if adv:
        assumptions += [a for a in adv.get("assumptions", []) if isinstance(a, str)][:6]
    model = (
        adv["workload"].get("model_label") or adv["workload"].get("model")
        if adv
        else str(model_kw.get("model") or model_kw.get("params"))
    )
    lines, verdict = recommend(rows, need, own)
    with smallest_only():
        lines += ranking_sensitivity(rows, need)
    options = {k: v for k, v in model_kw.items() if k not in ("model", "params") and v is not None}
    if need.engine:
        options["engine"] = need.engine
    return Plan(
        need=need,
        model=str(model),
        rows=rows,
        recommendation=lines,
        assumptions=assumptions,
        calibration=calibration.to_dict() if calibration else None,
        kwh_usd=own.kwh_usd,
        months=own.months,
        ownership=own,
        verdict=verdict,
        options=options,
    )
