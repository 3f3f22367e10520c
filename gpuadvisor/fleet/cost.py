"""What the slowest nodes cost a synchronous job.

Model: a data-parallel (or any bulk-synchronous) job waits every step for its slowest rank, so a job spanning
the nodes of a group and bound by one family of figures (host-to-device copies, all-reduce bandwidth, matmul
throughput...) runs at the pace of the slowest node in that family. A node's pace in a family is its worst
figure there relative to the group median (the GPU that lags holds back its node). The speed-up from
draining the flagged nodes is then ``pace of the slowest kept node / pace of the slowest node - 1``. This
assumes the job is bound by that family alone; a job bound by something else gains less (Amdahl).
"""

from __future__ import annotations

from gpuadvisor.fleet.model import Cost, FleetFinding, Group, Node


def paces(group: Group) -> dict[str, dict[str, float]]:
    """family -> node -> pace (1.0 = the group median; below 1 slower), over the figures the node has. A family
    whose figures all have the same nodes (the usual case: one names tuple shared by the group's statistics) is
    taken a column at a time, an element-wise minimum over its figures' paces; otherwise node by node."""
    cols: dict[str, tuple[tuple[str, ...], list[float]]] = {}
    out: dict[str, dict[str, float]] = {}  # in the order the families first appear
    for st in group.stats.values():
        if st.median <= 0:
            continue
        med, fam = st.median, st.family
        ps = [v / med for v in st.vals] if st.higher_better else [med / v if v > 0 else 0.0 for v in st.vals]
        if fam not in out:
            out[fam] = {}
            cols[fam] = (st.names, ps)
            continue
        got = cols.get(fam)
        if got is not None and (got[0] is st.names or got[0] == st.names):
            cols[fam] = (got[0], list(map(min, got[1], ps)))
            continue
        if got is not None:  # the nodes differ: node by node from here on
            out[fam] = dict(zip(*got, strict=True))
            del cols[fam]
        merged = out[fam]
        for node, pace in zip(st.names, ps, strict=True):
            merged[node] = min(merged.get(node, pace), pace)
    for fam, (names, ps) in cols.items():
        out[fam] = dict(zip(names, ps, strict=True))
    return out


def straggler_costs(group: Group, findings: list[FleetFinding], nodes: dict[str, Node]) -> list[Cost]:
    flagged: dict[str, set[str]] = {}
    for f in findings:
        if f.kind == "outlier" and f.group == group.id and f.node and f.figure in group.stats:
            flagged.setdefault(group.stats[f.figure].family, set()).add(f.node)
    out: list[Cost] = []
    if not flagged:
        return out
    for fam, pace in sorted(paces(group).items()):
        bad = flagged.get(fam)
        if not bad or len(pace) <= len(bad):
            continue
        slowest = min(pace, key=lambda n: (pace[n], n))
        kept = {n: p for n, p in pace.items() if n not in bad}
        kept_slowest = min(kept, key=lambda n: (kept[n], n))
        if pace[slowest] <= 0:
            continue
        speedup = kept[kept_slowest] / pace[slowest] - 1
        if speedup <= 0:
            continue
        out.append(
            Cost(
                group=group.id,
                family=fam,
                nodes=len(pace),
                slowest=slowest,
                slowest_ratio=pace[slowest],
                excluded=sorted(bad, key=lambda n: (pace[n], n)),
                kept_slowest=kept_slowest,
                kept_ratio=kept[kept_slowest],
                speedup=speedup,
            )
        )
    return out


def describe(c: Cost) -> str:
    names = ", ".join(c.excluded[:6]) + (f" +{len(c.excluded) - 6} more" if len(c.excluded) > 6 else "")
    return (
        f"A {c.nodes}-node job in group {c.group} bound by {c.family} runs at its slowest node's pace "
        f"({c.slowest}, {c.slowest_ratio * 100:.0f}% of the group median); excluding {names} "
        f"speeds it up by {c.speedup * 100:.0f}% (then {c.kept_slowest} at {c.kept_ratio * 100:.0f}% sets "
        "the pace)"
    )
