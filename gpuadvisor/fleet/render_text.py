"""The fleet view as text: nodes worst first, then the groups, what the stragglers cost, and the notes."""

from __future__ import annotations

from gpuadvisor.fleet.cost import describe
from gpuadvisor.fleet.model import FleetReport

MAX_LINES_PER_NODE = 6


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def render_text(r: FleetReport, *, all_nodes: bool = False) -> str:
    c = r.counts()
    ok = sum(1 for n in r.nodes.values() if n.status == "ok")
    failed = sum(1 for n in r.nodes.values() if n.status == "failed")
    missing = sum(1 for n in r.nodes.values() if n.status == "missing")
    stale = sum(1 for n in r.nodes.values() if n.stale)
    lines = [
        f"gpuadvisor fleet: {len(r.nodes)} nodes ({ok} scanned, {failed} failed, {missing} missing, {stale} stale) "
        f"in {len(r.groups)} hardware group(s); {c['fail']} fail, {c['warn']} warn, {c['info']} info",
        f"Outlier rule: robust z-score |x - median| / (1.4826 MAD) > {r.thresholds['robust_z']:g} (median and MAD) and "
        "at least "
        f"{r.thresholds['min_relative_deviation'] * 100:g}% worse than the group median; fail from "
        f"{r.thresholds['fail_relative_deviation'] * 100:g}%; groups of {r.thresholds['min_group_size']}+ fresh scans",
        "",
    ]
    ranked = r.ranked()
    bad = [(n, fs) for n, fs in ranked if fs]
    width = max([len(n.name) for n, _ in ranked] + [4])
    lines.append(f"{'#':>4}  {'node':<{width}}  {'group':<5}  {'worst':<5}  {'n':>3}  finding")
    for i, (n, fs) in enumerate(bad, 1):
        worst = fs[0].severity
        lines.append(
            f"{i:>4}  {n.name:<{width}}  {(n.group or '-'):<5}  {worst:<5}  {len(fs):>3}  {_cut(fs[0].message, 110)}"
        )
        for f in fs[1:MAX_LINES_PER_NODE]:
            lines.append(f"{'':>4}  {'':<{width}}  {'':<5}  {f.severity:<5}  {'':>3}  {_cut(f.message, 110)}")
        if len(fs) > MAX_LINES_PER_NODE:
            lines.append(
                f"{'':>4}  {'':<{width}}  {'':<5}  {'':<5}  {'':>3}  … {len(fs) - MAX_LINES_PER_NODE} more (--format "
                "json lists all)"
            )
    clean = [n for n, fs in ranked if not fs]
    if all_nodes:
        for n in clean:
            lines.append(f"{'':>4}  {n.name:<{width}}  {(n.group or '-'):<5}  {'ok':<5}  {0:>3}  nothing found")
    elif clean:
        lines.append(f"      {len(clean)} node(s) with nothing found (--all lists them)")
    fleet_wide = [f for f in r.findings if f.node is None]
    if fleet_wide:
        lines += ["", "Across nodes:"]
        lines += [f"  {f.severity:<5} {f.message}" for f in fleet_wide]
    if r.costs:
        lines += ["", "What the slowest nodes cost a synchronous job (it runs at its slowest rank's pace):"]
        lines += [f"  {describe(x)}" for x in sorted(r.costs, key=lambda x: -x.speedup)]
    lines += ["", "Groups (same GPU model and count, NVLink design, PCIe generation and width, NICs):"]
    for g in r.groups:
        lines.append(f"  {g.id}: {len(g.nodes)} node(s), {len(g.judged)} compared: {g.label}")
        fams: dict[str, list] = {}
        for st in g.stats.values():
            fams.setdefault(st.family, []).append(st)
        for fam, sts in sorted(fams.items()):
            meds = [s.median for s in sts]
            unit = sts[0].unit
            lines.append(
                f"      {fam}: {len(sts)} figure(s), medians {min(meds):.4g}-{max(meds):.4g} {unit}, "
                f"largest MAD {max(s.mad / s.median * 100 if s.median else 0 for s in sts):.1f}% of the median"
            )
    lines.append("  Not compared: VBIOS and firmware versions unless a scan records them.")
    for note in r.notes:
        lines.append(f"note: {note}")
    if r.baseline:
        lines.append(f"Baseline: {r.baseline}")
    return "\n".join(lines) + "\n"
