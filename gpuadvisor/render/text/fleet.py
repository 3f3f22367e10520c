"""The fleet view as text: the drain list first (node, why, evidence, what to do), then the warnings, fleet-wide
findings, the noise the fleet measured per family, what stragglers cost, the groups and notes. Every line fits
the terminal (COLUMNS, default 80; gpuadvisor.render.text.width), control characters in host names made visible."""

from __future__ import annotations

from gpuadvisor.fleet.cost import describe
from gpuadvisor.fleet.model import SEV_RANK, FleetReport, Node
from gpuadvisor.render.text.width import fit_lines, fit_table, term_width
from gpuadvisor.text import plural

MAX_LINES_PER_NODE = 6
WHAT_TO_DO = {
    "lost": "drain; reseat or replace the part, then rescan",
    "slow-port": "reseat or replace the cable or transceiver; check the switch port; rescan",
    "failed": "read the error; rerun the check on the node (a node that cannot scan cannot be trusted)",
    "missing": "find out why the node wrote no scan (down, wedged, not scheduled); rerun the check there",
    "check": "drain; act on the node's own finding (gpuadvisor explain CODE)",
    "outlier": "drain and rerun the benchmark; if it persists, compare with its siblings' PCIe/NVLink state",
    "drift": "bring the node to its group's version or setting",
    "stale": "rerun the check on the node",
    "changed": "compare with the baseline scan",
}


def _node_head(n: Node) -> str:
    return f"{n.name} ({n.group or 'no group'})"


def render_text(r: FleetReport, *, all_nodes: bool = False, width: int | None = None) -> str:
    width = width or term_width()
    c = r.counts()
    ok = sum(1 for n in r.nodes.values() if n.status == "ok")
    failed = sum(1 for n in r.nodes.values() if n.status == "failed")
    missing = sum(1 for n in r.nodes.values() if n.status == "missing")
    stale = sum(1 for n in r.nodes.values() if n.stale)
    drain = r.drain()
    lines = [
        f"gpuadvisor fleet: {len(r.nodes)} nodes ({ok} scanned, {failed} failed, {missing} missing, {stale} "
        f"stale) in {plural(len(r.groups), 'hardware group')}; {c['fail']} fail, {c['warn']} warn, {c['info']} info; "
        f"{plural(len(drain), 'node')} to drain (exit {1 if drain else 0} at --fail-on {r.fail_on})",
        "",
    ]
    lim = SEV_RANK[r.fail_on]
    if drain:
        lines.append(f"Drain list ({plural(len(drain), 'node')}, worst first):")
        for i, (n, fs) in enumerate(drain, 1):
            bad = [f for f in fs if SEV_RANK[f.severity] <= lim]
            lines.append(f"{i:>3}. {_node_head(n)}: {bad[0].message}")
            for f in bad[1:MAX_LINES_PER_NODE]:
                lines.append(f"     also: {f.message}")
            if len(bad) > MAX_LINES_PER_NODE:
                lines.append(f"     ... {len(bad) - MAX_LINES_PER_NODE} more (--format json lists all)")
            ev = bad[0].evidence or n.path
            if ev:
                lines.append(f"     evidence: {ev}")
            lines.append(f"     do: {WHAT_TO_DO.get(bad[0].kind, 'look at the node')}")
        lines.append("")
    drained = {n.name for n, _ in drain}
    rest = [(n, [f for f in fs if f.severity != "info" or all_nodes]) for n, fs in r.ranked() if n.name not in drained]
    warned = [(n, fs) for n, fs in rest if fs]
    if warned:
        lines.append(f"Below the gate ({plural(len(warned), 'node')}):")
        for n, fs in warned:
            lines.append(f"  {_node_head(n)}: [{fs[0].severity}] {fs[0].message}")
            for f in fs[1:MAX_LINES_PER_NODE]:
                lines.append(f"      [{f.severity}] {f.message}")
            if len(fs) > MAX_LINES_PER_NODE:
                lines.append(f"      ... {len(fs) - MAX_LINES_PER_NODE} more (--format json lists all)")
        lines.append("")
    clean = [n for n, fs in r.ranked() if not fs]
    if clean:
        lines.append(
            f"{plural(len(clean), 'node')} with nothing found"
            + (": " + ", ".join(n.name for n in clean) if all_nodes else " (--all lists them)")
        )
    fleet_wide = [f for f in r.findings if f.node is None]
    if fleet_wide:
        lines += ["", "Across nodes (reported once):"]
        lines += [f"  [{f.severity}] {f.message}" for f in fleet_wide]
    out = fit_lines(lines, width)
    if r.noise:
        out += [
            "",
            *fit_lines(
                [
                    "Noise this fleet measured, per group and family (one figure, its tail: Student's t "
                    "degrees of freedom fitted to the group or normal, and the node's family mean), the floor "
                    "below which nothing is called, and the smallest whole-node slowdown found 80% of the time:"
                ],
                width,
            ),
        ]
        rows = [
            [
                x.group,
                x.family,
                f"{x.sigma_figure * 100:.2f}%",
                "normal" if x.dof is None else f"t{x.dof:g}",
                f"{x.sigma_node * 100:.2f}%",
                str(x.figures),
                f"{x.floor * 100:g}%",
                f"{x.detectable * 100:.1f}%",
            ]
            for x in r.noise
        ]
        out += fit_table(rows, ["grp", "family", "noise", "tail", "mean", "figs", "floor", "detects"], width)
        shifted = [x for x in r.noise if x.reference != "median"]
        for x in shifted:
            out += fit_lines(
                [
                    f"  {x.group} {x.family}: the group median is {x.median_ratio * 100:.0f}% of what its "
                    "links should give (the node rules' expected values) while its best decile is well "
                    "above: judged against the best decile"
                ],
                width,
            )
    if r.costs:
        out += [
            "",
            *fit_lines(
                [
                    "What the slowest nodes cost a synchronous job (it runs at its slowest rank's pace; "
                    "only nodes outside the noise):"
                ],
                width,
            ),
        ]
        out += fit_lines([f"  {describe(x)}" for x in sorted(r.costs, key=lambda x: -x.speedup)], width)
    tail = ["", "Groups (what the hardware is: GPU model and count, interconnect, PCIe design, CPU platform):"]
    tail += [f"  {g.id}: {plural(len(g.nodes), 'node')}, {len(g.judged)} compared: {g.label}" for g in r.groups]
    tail += [f"note: {note}" for note in r.notes]
    tail += [f"Baseline: {r.baseline}"] if r.baseline else []
    out += fit_lines(tail, width)
    return "\n".join(out) + "\n"
