"""The fleet view as a Prometheus textfile (node_exporter's textfile collector): per-node gauges."""

from __future__ import annotations

from gpuadvisor.fleet.model import SEVERITIES, FleetReport


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render_prom(r: FleetReport) -> str:
    per = r.node_findings()
    out = [
        "# HELP gpuadvisor_fleet_node_up 1 when the node's scan was read and is fresh, 0 when failed, missing or "
        "stale.",
        "# TYPE gpuadvisor_fleet_node_up gauge",
    ]
    for n in r.nodes.values():
        up = int(n.status == "ok" and not n.stale)
        out.append(
            f'gpuadvisor_fleet_node_up{{node="{_esc(n.name)}",group="{_esc(n.group or "")}",status="{n.status}"}} {up}'
        )
    out += [
        "# HELP gpuadvisor_fleet_node_outliers Figures of the node that are robust outliers in its group.",
        "# TYPE gpuadvisor_fleet_node_outliers gauge",
    ]
    for n in r.nodes.values():
        k = sum(1 for f in per.get(n.name, []) if f.kind == "outlier")
        out.append(f'gpuadvisor_fleet_node_outliers{{node="{_esc(n.name)}",group="{_esc(n.group or "")}"}} {k}')
    out += [
        "# HELP gpuadvisor_fleet_node_worst_ratio The node's worst figure over its group median (1 = typical, 0.5 = "
        "half).",
        "# TYPE gpuadvisor_fleet_node_worst_ratio gauge",
    ]
    for g in r.groups:
        worst: dict[str, float] = {}
        for st in g.stats.values():
            if st.median <= 0:
                continue
            for node, v in st.values.items():
                ratio = v / st.median if st.higher_better else (st.median / v if v > 0 else 0.0)
                worst[node] = min(worst.get(node, ratio), ratio)
        for node, ratio in sorted(worst.items()):
            out.append(f'gpuadvisor_fleet_node_worst_ratio{{node="{_esc(node)}",group="{g.id}"}} {ratio:.4f}')
    out += [
        "# HELP gpuadvisor_fleet_node_findings Fleet findings about the node, by severity.",
        "# TYPE gpuadvisor_fleet_node_findings gauge",
    ]
    for n in r.nodes.values():
        fs = per.get(n.name, [])
        for s in SEVERITIES:
            out.append(
                f'gpuadvisor_fleet_node_findings{{node="{_esc(n.name)}",severity="{s}"}} '
                f"{sum(1 for f in fs if f.severity == s)}"
            )
    out += [
        "# HELP gpuadvisor_fleet_straggler_speedup Speed-up of a job spanning the group, bound by this family, "
        "when the flagged nodes are drained (0.09 = 9%).",
        "# TYPE gpuadvisor_fleet_straggler_speedup gauge",
    ]
    for c in r.costs:
        out.append(f'gpuadvisor_fleet_straggler_speedup{{group="{c.group}",family="{_esc(c.family)}"}} {c.speedup:.4f}')
    return "\n".join(out) + "\n"
