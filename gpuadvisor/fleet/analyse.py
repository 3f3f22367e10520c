"""All of the fleet view: load, group, statistics, outliers, drift, pairs, failures, baseline, costs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from gpuadvisor.fleet import baseline as baseline_mod
from gpuadvisor.fleet import cost, drift, groups, noise, outliers, pairs, verdicts
from gpuadvisor.fleet.gate import Gate
from gpuadvisor.fleet.model import SEV_RANK, FleetReport, Node, about, gc_paused
from gpuadvisor.fleet.model import FleetFinding as F
from gpuadvisor.text import plural


@dataclass
class Options:
    expect: list[str] | None = None  # host names that should have a scan
    max_age: dt.timedelta | None = None
    now: dt.datetime | None = None
    baseline: dict[str, Node] | None = None
    baseline_label: str | None = None
    z: float = outliers.Z_THRESHOLD
    min_rel: float = outliers.MIN_REL
    fail_on: str = "fail"
    fdr: float = noise.FDR
    expect_gpus: int | None = None
    gate: Gate = field(default_factory=Gate)


def _age(d: dt.timedelta) -> str:
    """A scan's age to the minute that matters: "3 d 4 h", "5 h 12 min", "40 min"."""
    m = int(d.total_seconds() // 60)
    days, hours, mins = m // 1440, m % 1440 // 60, m % 60
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {mins} min" if mins else f"{hours} h"
    return f"{mins} min"


def _limit(d: dt.timedelta) -> str:
    """--max-age as it is written: 24h, 7d, 90m."""
    s = int(d.total_seconds())
    for unit, n in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0 and (unit in "hm" or s // n >= 2):  # 24h, 36h, 2d, 7d, 2w
            return f"{s // n}{unit}"
    return f"{s}s"


def _stale(n: Node, now: dt.datetime, max_age: dt.timedelta) -> str | None:
    """Why the node's scan is too old to compare (None: it is fresh)."""
    if n.created_at is None:
        return (
            f"the scan carries no creation time, so its age is unknown (--max-age {_limit(max_age)}); not "
            "compared: re-run the node's check"
        )
    if now - n.created_at > max_age:
        return (
            f"scan {_age(now - n.created_at)} old ({n.created_at.isoformat()}), over --max-age {_limit(max_age)}; "
            "not compared: the node stopped reporting (a hung check, a down node) or its scans are not reaching "
            "this directory"
        )
    return None


def _own(n: Node) -> list[F]:
    """The node's own findings (its check's rules), with their reason and GPUs."""
    out = []
    for c in n.checks:
        gpus = f" (GPU {', '.join(map(str, c.gpus))})" if c.gpus else ""
        out.append(about(n, "check", c.severity, c.code, f"the node's own check: {c.code} {c.name}{gpus}: {c.message}"))
    if not n.checks and n.failing_checks:  # a check report (its codes only)
        out.append(
            about(n, "check", "fail", "node check", f"the node's own check fails: {', '.join(n.failing_checks)}")
        )
    return out


def analyse(nodes: dict[str, Node], opts: Options | None = None, inputs: list[str] | None = None) -> FleetReport:
    """The fleet report of the nodes read (the cycle collector paused meanwhile: see model.gc_paused)."""
    with gc_paused():
        return _analyse(nodes, opts, inputs)


def _analyse(nodes: dict[str, Node], opts: Options | None, inputs: list[str] | None) -> FleetReport:
    opts = opts or Options()
    now = opts.now or dt.datetime.now(dt.UTC)
    findings: list[F] = []
    notes: list[str] = []
    if opts.expect is not None:
        expected = set(opts.expect)
        for name in opts.expect:
            if name not in nodes:
                nodes[name] = Node(name=name, status="missing", error="in the expected node list, no scan found")
        for name in sorted(set(nodes) - expected):
            findings.append(
                F(
                    node=name,
                    kind="unexpected",
                    severity="info",
                    subject="node",
                    message="has a scan but is not in the expected node list",
                )
            )
    for n in nodes.values():
        if n.status == "missing":
            findings.append(
                F(node=n.name, kind="missing", severity="fail", subject="scan", message=n.error or "no scan")
            )
        elif n.status == "failed":
            findings.append(about(n, "failed", "fail", "scan", f"the scan could not run or be read: {n.error}"))
        if opts.max_age is not None and n.status == "ok":
            why = _stale(n, now, opts.max_age)
            if why is not None:
                n.stale = True
                findings.append(about(n, "stale", "fail", "scan age", why))
        findings += _own(n)
        if n.duplicate:
            why = next(x for x in n.notes if x.startswith("two or more scans claim"))
            findings.append(about(n, "duplicate", "warn", "host name", why))
    grps = groups.group_nodes(nodes)
    costs = []
    noises: list[noise.FamilyNoise] = []
    judged: list[noise.Verdict] = []
    for g in grps:
        g.stats = outliers.group_stats(g, nodes)
        fn, vs = noise.judge_group(g, nodes)
        noises += fn
        judged += vs
        findings += [f for f in drift.find_drift(g, nodes) if not (f.subject or "").endswith("active NVLinks")]
        findings += groups.find_lost(g, nodes, opts.expect_gpus)
        notes += groups.unjudged_ports(g, nodes)
    noise.decide(noises, judged, opts.fdr)
    out = verdicts.findings(judged, nodes)
    findings += out
    for g in grps:
        costs += cost.straggler_costs(g, [f for f in out if f.group == g.id], nodes)
        if 0 < len(g.judged) < outliers.MIN_NODES and g.stats:
            notes.append(
                f"group {g.id} ({g.label}): {plural(len(g.judged), 'fresh scan')}, fewer than {outliers.MIN_NODES}: "
                "its figures are listed but no outlier is judged"
            )
        if len(g.nodes) == 1:
            findings.append(
                F(
                    node=g.nodes[0],
                    kind="alone",
                    severity="info",
                    subject="hardware shape",
                    group=g.id,
                    message=f"the only node of its hardware shape ({g.label}): nothing to compare it with",
                )
            )
    findings += pairs.find_pairs(nodes, z=opts.z, min_rel=opts.min_rel)
    if opts.baseline is not None:
        findings += baseline_mod.compare(nodes, opts.baseline, fdr=opts.fdr)
    for f in findings:
        if f.node and f.group is None and f.node in nodes:
            f.group = nodes[f.node].group
    findings = [opts.gate.promote(f) for f in findings]
    findings.sort(key=lambda f: (SEV_RANK[f.severity], f.node or "", f.kind, f.subject))
    return FleetReport(
        nodes=nodes,
        groups=grps,
        findings=findings,
        costs=costs,
        generated_at=now.replace(microsecond=0).isoformat(),
        inputs=list(inputs or []),
        notes=notes,
        noise=noises,
        baseline=opts.baseline_label,
        fail_on=opts.fail_on,
        thresholds={
            "false_discovery_rate": opts.fdr,
            "floors": {
                "default": noise.FLOOR_DEFAULT,
                "latency": noise.FLOOR_LATENCY,
                "pageable": noise.FLOOR_PAGEABLE,
            },
            "fail_relative_deviation": opts.gate.straggler_fail,
            "min_relative_deviation": noise.FLOOR_DEFAULT,
            "min_group_size": outliers.MIN_NODES,
            "max_age_s": opts.max_age.total_seconds() if opts.max_age else None,
        },
    )
