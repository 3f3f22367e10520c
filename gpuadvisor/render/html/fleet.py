"""The fleet view as one self-contained HTML page: ranked nodes, a heat map of nodes x figure families, the
distribution of each family per group, and each flagged node's evidence (every outlier links to it).

The big pieces (heat map rows, histograms) are built here as escaped strings in one pass, so the page grows
with nodes x families and the template runs a fixed number of loops; the template is compiled once per
process (the report's cached jinja2 environment).
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

from gpuadvisor.fleet.cost import describe, paces
from gpuadvisor.fleet.model import FleetReport

BINS = 40


def anchor(name: str) -> str:
    return "n-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _heat_class(p: float, min_rel: float) -> str:
    if p < 0.75:
        return "h4"
    if p < 0.9:
        return "h3"
    if p <= 1 - min_rel:
        return "h2"
    if p < 0.98:
        return "h1"
    return "h0"


def _heatmap(r: FleetReport) -> tuple[list[str], Markup]:
    group_paces = {g.id: paces(g) for g in r.groups}
    fams = sorted({f for gp in group_paces.values() for f in gp})
    per = r.node_findings()
    min_rel = r.thresholds["min_relative_deviation"]
    rows = []
    for n, fs in r.ranked():
        a = anchor(n.name)
        flagged_fams = set()
        for f in fs:
            if f.figure and n.group:
                g = next(g for g in r.groups if g.id == n.group)
                if f.figure in g.stats:
                    flagged_fams.add(g.stats[f.figure].family)
        gp = group_paces.get(n.group or "", {})
        cells = []
        for fam in fams:
            p = gp.get(fam, {}).get(n.name)
            if p is None:
                cells.append('<td class="hx">·</td>')
                continue
            txt = f"{p * 100:.0f}"
            tip = escape(f"{n.name} · {fam}: worst figure at {p * 100:.1f}% of its group median")
            inner = f'<a href="#{a}">{txt}</a>' if fam in flagged_fams else txt
            cells.append(f'<td class="{_heat_class(p, min_rel)}" title="{tip}">{inner}</td>')
        status = n.status + (" (stale)" if n.stale else "")
        sev = fs[0].severity if fs else "ok"
        label = f'<a href="#{a}">{escape(n.name)}</a>' if per.get(n.name) else escape(n.name)
        rows.append(
            f'<tr class="sev-{sev}"><th scope="row">{label}</th><td>{escape(n.group or "—")}</td>'
            f"<td>{escape(status)}</td>{''.join(cells)}</tr>"
        )
    return fams, Markup("\n".join(rows))


def _histogram(values: list[float], min_rel: float) -> Markup:
    """An inline SVG histogram of paces (1.0 = group median) with the median and the outlier floor marked."""
    w, h, pad = 360, 90, 18
    lo = min(min(values), 1 - 2 * min_rel)
    hi = max(max(values), 1 + min_rel)
    span = hi - lo or 1.0
    counts = [0] * BINS
    for v in values:
        counts[min(BINS - 1, int((v - lo) / span * BINS))] += 1
    top = max(counts) or 1
    bw = (w - 2 * pad) / BINS
    bars = []
    for i, c in enumerate(counts):
        if not c:
            continue
        bh = (h - 2 * pad) * c / top
        x = pad + i * bw
        left = lo + i * span / BINS
        cls = "bad" if left + span / BINS <= 1 - min_rel else "ok"
        bars.append(
            f'<rect class="{cls}" x="{x:.1f}" y="{h - pad - bh:.1f}" width="{max(bw - 1, 1):.1f}" '
            f'height="{bh:.1f}"><title>{c} node(s) at {left * 100:.1f}-{(left + span / BINS) * 100:.1f}% '
            "of the median</title></rect>"
        )

    def xline(v: float, cls: str, label: str) -> str:
        x = pad + (v - lo) / span * (w - 2 * pad)
        return (
            f'<line class="{cls}" x1="{x:.1f}" x2="{x:.1f}" y1="{pad - 6}" y2="{h - pad}"/>'
            f'<text x="{x:.1f}" y="{pad - 8}" text-anchor="middle">{label}</text>'
        )

    axis = (
        f'<text x="{pad}" y="{h - 4}">{lo * 100:.0f}%</text>'
        f'<text x="{w - pad}" y="{h - 4}" text-anchor="end">{hi * 100:.0f}%</text>'
    )
    return Markup(
        f'<svg class="hist" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        f'aria-label="distribution of {len(values)} nodes">{"".join(bars)}'
        f"{xline(1.0, 'med', 'median')}{xline(1 - min_rel, 'floor', f'-{min_rel * 100:g}%')}{axis}</svg>"
    )


def build_view(r: FleetReport) -> dict[str, Any]:
    min_rel = r.thresholds["min_relative_deviation"]
    fams, heat_rows = _heatmap(r)
    dists = []
    for g in r.groups:
        for fam, p in sorted(paces(g).items()):
            if p:
                vals = list(p.values())
                dists.append(
                    {
                        "group": g.id,
                        "family": fam,
                        "n": len(vals),
                        "svg": _histogram(vals, min_rel),
                        "below": sum(1 for v in vals if v <= 1 - min_rel),
                    }
                )
    evidence = []
    for n, fs in r.ranked():
        if not fs:
            continue
        evidence.append({"id": anchor(n.name), "node": n, "findings": fs})
    ok = sum(1 for n in r.nodes.values() if n.status == "ok" and not n.stale)
    from gpuadvisor.fleet.model import SEV_RANK
    from gpuadvisor.render.text.fleet import WHAT_TO_DO

    drain = []
    for n, fs in r.drain():
        bad = [f for f in fs if SEV_RANK[f.severity] <= SEV_RANK[r.fail_on]]
        drain.append(
            {
                "id": anchor(n.name),
                "node": n,
                "why": bad[0].message,
                "more": len(bad) - 1,
                "evidence": bad[0].evidence or n.path or "",
                "todo": WHAT_TO_DO.get(bad[0].kind, "look at the node"),
            }
        )
    return {
        "r": r,
        "drain": drain,
        "fams": fams,
        "heat_rows": heat_rows,
        "dists": dists,
        "evidence": evidence,
        "costs": [describe(c) for c in sorted(r.costs, key=lambda c: -c.speedup)],
        "fleet_findings": [f for f in r.findings if f.node is None],
        "counts": r.counts(),
        "ok": ok,
        "failed": sum(1 for n in r.nodes.values() if n.status == "failed"),
        "missing": sum(1 for n in r.nodes.values() if n.status == "missing"),
        "stale": sum(1 for n in r.nodes.values() if n.stale),
        "min_rel": min_rel,
    }


def render_html(r: FleetReport) -> str:
    from gpuadvisor import __version__
    from gpuadvisor.render.html import environment

    return environment().get_template("fleet.html.j2").render(v=build_view(r), version=__version__)
