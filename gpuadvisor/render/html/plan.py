"""The pre-purchase report: one self-contained HTML file (inline CSS and SVG, nothing fetched, the plan JSON
embedded), rendered with the scan report's jinja2 environment (autoescape on, templates compiled once)."""

from __future__ import annotations

import json
from typing import Any

from gpuadvisor.plan import Plan
from gpuadvisor.plan.evaluate import Row
from gpuadvisor.render.text.plan import _duration, _price, per_kusd


def _bars(rows: list[Row], value: Any, label: Any, band: Any = None, unknown: str | None = None) -> dict[str, Any]:
    """Horizontal bars, one per row that has the value; whiskers where a band is known. With ``unknown``, a row
    without the value is still shown, as an empty track labelled ``unknown`` (never silently dropped)."""
    every = [(r, value(r)) for r in rows]
    items = [(r, v) for r, v in every if v is not None and v > 0]
    missing = [
        {
            "name": r.build.name,
            "pct": 0.0,
            "text": unknown,
            "lo": None,
            "hi": None,
            "rent": r.build.rent,
            "unpriced": True,
        }
        for r, v in every
        if unknown and (v is None or v <= 0)
    ]
    if not items:
        return {"bars": missing}
    top = max(max(v, (band(r) or (0, v))[1] if band else v) for r, v in items)
    bars = []
    for r, v in items:
        b = band(r) if band else None
        bars.append(
            {
                "name": r.build.name,
                "pct": max(0.5, 100 * v / top),
                "text": label(r, v),
                "lo": 100 * b[0] / top if b else None,
                "hi": 100 * b[1] / top if b else None,
                "rent": r.build.rent,
                "unpriced": False,
            }
        )
    return {"bars": bars + missing}


def _hours_band(r: Row, need_tokens: float | None) -> tuple[float, float] | None:
    if not (r.band and need_tokens):
        return None
    return need_tokens / r.band[1] / 3600, need_tokens / r.band[0] / 3600


def charts(plan: Plan) -> dict[str, Any]:
    rows = [r for r in plan.rows if r.fits and r.tokens_per_second]
    tokens = plan.need.tokens
    if tokens:
        time = _bars(
            rows, lambda r: r.job.hours if r.job else None, lambda r, v: _duration(v), lambda r: _hours_band(r, tokens)
        )
        time["title"], time["unit"] = "Time for the token budget (shorter is better)", "hours"
        cost = _bars(
            rows, lambda r: r.job.job_usd if r.job else None, lambda r, v: f"US${v:,.0f}", unknown="price unknown"
        )
        cost["title"] = f"Cost of the job: rent, or owning at {plan.ownership.label()}"
    else:
        time = _bars(rows, lambda r: r.tokens_per_second, lambda r, v: f"{v:,.0f} tok/s", lambda r: r.band)
        time["title"] = "Throughput (longer is better)"
        cost = _bars(
            rows,
            lambda r: r.job.usd_per_million_tokens if r.job else None,
            lambda r, v: f"US${v:,.2f}",
            unknown="price unknown",
        )
        cost["title"] = "Cost per million tokens"
    return {"time": time, "cost": cost}


def render_html(plan: Plan) -> str:
    import markupsafe

    from gpuadvisor.render.html import environment

    data = plan.to_dict()
    embedded = json.dumps(data, allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    table = []
    for r in plan.rows:
        table.append(
            {
                "row": r,
                "price": _price(r),
                "time": _duration(r.job.hours if r.job else None),
                "speed": f"{r.tokens_per_second:,.0f}" if r.tokens_per_second else "—",
                "band": f"{r.band[0]:,.0f}–{r.band[1]:,.0f}" if r.band else "",
                "per_m": f"US${r.job.usd_per_million_tokens:,.2f}"
                if r.job and r.job.usd_per_million_tokens is not None
                else "—",
                "groups": finding_groups(r),
                "per_kusd": per_kusd(r),
                "per_kw": (
                    f"{r.tokens_per_second / (r.cost.power_w / 1000):,.0f}"
                    if r.tokens_per_second and r.cost and r.cost.power_w and not r.build.rent
                    else "—"
                ),
                "worst": "fail"
                if any(f["severity"] == "fail" for f in r.findings)
                else ("warn" if any(f["severity"] == "warn" for f in r.findings) else ""),
            }
        )
    template = environment().get_template("plan.html.j2")
    by_name = {r.build.name: t for r, t in zip(plan.rows, table, strict=True)}
    return template.render(
        plan=plan, data=data, table=table, t_by_name=by_name, charts=charts(plan), plan_json=markupsafe.Markup(embedded)
    )


def finding_groups(r: Row) -> list[dict[str, Any]]:
    """Each warn/fail finding code once, with how many times it was raised (per GPU, per pair) and its first
    message; fails first."""
    groups: dict[str, dict[str, Any]] = {}
    for f in r.findings:
        if f["severity"] not in ("fail", "warn"):
            continue
        g = groups.setdefault(f["code"], {**f, "count": 0})
        g["count"] += 1
    return sorted(groups.values(), key=lambda g: (g["severity"] != "fail", g["code"]))
