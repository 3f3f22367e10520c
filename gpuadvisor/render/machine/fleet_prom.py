"""The fleet view as a Prometheus textfile (node_exporter's textfile collector): per-node gauges.

Written through ``check``'s exposition writer (gpuadvisor.render.machine.prometheus: HELP and TYPE once per name, label
values escaped, a repeated series dropped), with every label value first made plain text by the same sanitiser
the terminal output uses (gpuadvisor.streams.sanitise: control characters, lone surrogates and bidirectional
overrides become visible escapes), so a hostile host name cannot break the file promtool and node_exporter read.
"""

from __future__ import annotations

from gpuadvisor.fleet.model import SEVERITIES, FleetReport
from gpuadvisor.render.machine.prometheus import Exposition
from gpuadvisor.streams import sanitise


def _v(s: str | None) -> str:
    return sanitise(s or "")


def render_prom(r: FleetReport) -> str:
    per = r.node_findings()
    e = Exposition()
    e.declare(
        "fleet_node_up", "gauge", "1 when the node's scan was read and is fresh, 0 when failed, missing or stale."
    )
    e.declare(
        "fleet_node_outliers",
        "gauge",
        "Figure families in which the node is slower than its group, outside the measured noise.",
    )
    e.declare("fleet_node_drain", "gauge", "1 when a finding about the node fails the gate: take it out of service.")
    e.declare("fleet_node_lost_hardware", "gauge", "GPUs, NVLinks or NICs the node lost against its group's design.")
    e.declare("fleet_node_worst_ratio", "gauge", "The node's worst figure over its group median (1 = typical).")
    e.declare("fleet_node_findings", "gauge", "Fleet findings about the node, by severity.")
    e.declare("fleet_family_noise_ratio", "gauge", "Run-to-run noise of one figure measured across the group.")
    e.declare("fleet_family_detectable_ratio", "gauge", "Smallest whole-node slowdown found 80% of the time.")
    e.declare(
        "fleet_straggler_speedup",
        "gauge",
        "Speed-up of a job spanning the group, bound by this family, when the flagged nodes are drained (0.09 = 9%).",
    )
    drain = {n.name for n, _ in r.drain()}
    for n in r.nodes.values():
        labels = {"node": _v(n.name), "group": _v(n.group), "status": n.status}
        e.add("fleet_node_up", int(n.status == "ok" and not n.stale), labels)
    for n in r.nodes.values():
        fs = per.get(n.name, [])
        base = {"node": _v(n.name), "group": _v(n.group)}
        e.add("fleet_node_outliers", sum(1 for f in fs if f.kind == "outlier"), base)
        e.add("fleet_node_drain", int(n.name in drain), base)
        for what in ("GPUs", "NVLinks", "NICs"):
            lost = [f for f in fs if f.kind == "lost" and f.subject == what]
            e.add("fleet_node_lost_hardware", len(lost), {**base, "part": what})
    for g in r.groups:
        worst: dict[str, float] = {}
        for st in g.stats.values():
            if st.median <= 0:
                continue
            for node, v in st.values.items():
                ratio = v / st.median if st.higher_better else (st.median / v if v > 0 else 0.0)
                worst[node] = min(worst.get(node, ratio), ratio)
        for node, ratio in sorted(worst.items()):
            e.add("fleet_node_worst_ratio", round(ratio, 4), {"node": _v(node), "group": g.id})
    for n in r.nodes.values():
        fs = per.get(n.name, [])
        for s in SEVERITIES:
            e.add("fleet_node_findings", sum(1 for f in fs if f.severity == s), {"node": _v(n.name), "severity": s})
    for x in r.noise:
        e.add("fleet_family_noise_ratio", round(x.sigma_figure, 5), {"group": x.group, "family": _v(x.family)})
        e.add("fleet_family_detectable_ratio", round(x.detectable, 5), {"group": x.group, "family": _v(x.family)})
    for c in r.costs:
        e.add("fleet_straggler_speedup", round(c.speedup, 4), {"group": c.group, "family": _v(c.family)})
    return e.render()
