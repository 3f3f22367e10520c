"""The fleet view as a Prometheus textfile (node_exporter's textfile collector): per-node gauges an alert can
use: whether to drain the node and why (``fleet_node_drain_cause``: the finding's kind and code, one series per
cause), when the report was made and how old each node's scan is.

One series per host name: where two or more scans claim one host name (kept apart in the report), the host is
exported once, with ``fleet_node_duplicate`` 1 and the worst of its scans (drained if any is, up only if all are).

Written through ``check``'s exposition writer (gpuadvisor.render.machine.prometheus: HELP and TYPE once per name, label
values escaped, a repeated series dropped), with every label value first made plain text by the same sanitiser
the terminal output uses (gpuadvisor.streams.sanitise: control characters, lone surrogates and bidirectional
overrides become visible escapes), so a hostile host name cannot break the file promtool and node_exporter read.
"""

from __future__ import annotations

import datetime as dt
import re

from gpuadvisor.fleet.model import SEV_RANK, SEVERITIES, FleetFinding, FleetReport, Node
from gpuadvisor.render.machine.prometheus import Exposition
from gpuadvisor.streams import sanitise

_COPY = re.compile(r" \[\d+\]$")  # the report's name for a second scan claiming one host name: "gpu0064 [2]"


def _v(s: str | None) -> str:
    return sanitise(s or "")


def host_of(n: Node) -> str:
    """The host name a node's series carry: a duplicate's copy number dropped."""
    return _COPY.sub("", n.name) if n.duplicate else n.name


def cause(f: FleetFinding) -> tuple[str, str]:
    """(kind, code) of a finding for the cause label: the node rule's code, the sub-kind, or what was lost."""
    if f.kind == "check":
        return f.kind, f.subject or ""
    if f.code:
        return f.kind, f.code
    return f.kind, (f.subject or "") if f.kind in ("lost", "slow-port") else ""


# Every series the fleet exports, with its help (all gauges).
SERIES = (
    ("fleet_report_timestamp_seconds", "When the fleet report was made (Unix time)."),
    ("fleet_node_up", "1 when the node's scan was read and is fresh, 0 when failed, missing or stale."),
    ("fleet_node_scan_age_seconds", "Age of the node's scan when the report was made."),
    ("fleet_node_duplicate", "1 when two or more scans claim the node's host name."),
    ("fleet_node_outliers", "Figure families in which the node is slower than its group, outside the measured noise."),
    ("fleet_node_drain", "1 when a finding about the node fails the gate: take it out of service."),
    ("fleet_node_drain_cause", "1 per cause of a drain: the failing finding's kind and code (rule code)."),
    ("fleet_node_lost_hardware", "GPUs, NVLinks or NICs the node lost against its group's design."),
    ("fleet_node_worst_ratio", "The node's worst figure over its group median (1 = typical)."),
    ("fleet_node_findings", "Fleet findings about the node, by severity."),
    ("fleet_family_noise_ratio", "Run-to-run noise of one figure measured across the group."),
    ("fleet_family_detectable_ratio", "Smallest whole-node slowdown found 80% of the time."),
    (
        "fleet_straggler_speedup",
        "Speed-up of a job spanning the group, bound by this family, when the flagged nodes are drained (0.09 = 9%).",
    ),
)


def _declare(e: Exposition) -> None:
    for name, text in SERIES:  # every one a gauge
        e.declare(name, "gauge", text)


def render_prom(r: FleetReport) -> str:
    per = r.node_findings()
    e = Exposition()
    _declare(e)
    made = dt.datetime.fromisoformat(r.generated_at)
    e.add("fleet_report_timestamp_seconds", int(made.timestamp()), {})
    hosts: dict[str, list[Node]] = {}
    for n in r.nodes.values():
        hosts.setdefault(host_of(n), []).append(n)
    drain = {n.name for n, _ in r.drain()}
    lim = SEV_RANK[r.fail_on]
    worst = _worst_ratios(r)
    for host, ns in hosts.items():
        fs = [f for n in ns for f in per.get(n.name, [])]
        bad = next((n for n in ns if n.status != "ok"), None)
        up = all(n.status == "ok" and not n.stale for n in ns)
        node = _v(host)
        group = _v(next((n.group for n in ns if n.group), None))
        e.add("fleet_node_up", int(up), {"node": node, "group": group, "status": bad.status if bad else "ok"})
        ages = [(made - n.created_at).total_seconds() for n in ns if n.created_at is not None]
        if ages:
            e.add("fleet_node_scan_age_seconds", round(max(ages)), {"node": node})
        e.add("fleet_node_duplicate", int(len(ns) > 1 or any(n.duplicate for n in ns)), {"node": node})
        base = {"node": node, "group": group}
        e.add("fleet_node_outliers", sum(1 for f in fs if f.kind == "outlier"), base)
        e.add("fleet_node_drain", int(any(n.name in drain for n in ns)), base)
        for kind, code in sorted({cause(f) for f in fs if SEV_RANK[f.severity] <= lim}):
            e.add("fleet_node_drain_cause", 1, {**base, "kind": _v(kind), "code": _v(code)})
        for what in ("GPUs", "NVLinks", "NICs"):
            lost = [f for f in fs if f.kind == "lost" and f.subject == what]
            e.add("fleet_node_lost_hardware", len(lost), {**base, "part": what})
        ratios = [worst[n.name] for n in ns if n.name in worst]
        if ratios:
            e.add("fleet_node_worst_ratio", round(min(ratios), 4), base)
        for s in SEVERITIES:
            e.add("fleet_node_findings", sum(1 for f in fs if f.severity == s), {"node": node, "severity": s})
    for x in r.noise:
        e.add("fleet_family_noise_ratio", round(x.sigma_figure, 5), {"group": x.group, "family": _v(x.family)})
        e.add("fleet_family_detectable_ratio", round(x.detectable, 5), {"group": x.group, "family": _v(x.family)})
    for c in r.costs:
        e.add("fleet_straggler_speedup", round(c.speedup, 4), {"group": c.group, "family": _v(c.family)})
    return e.render()


def _worst_ratios(r: FleetReport) -> dict[str, float]:
    worst: dict[str, float] = {}
    for g in r.groups:
        for st in g.stats.values():
            if st.median <= 0:
                continue
            for node, v in st.values.items():
                ratio = v / st.median if st.higher_better else (st.median / v if v > 0 else 0.0)
                worst[node] = min(worst.get(node, ratio), ratio)
    return worst
