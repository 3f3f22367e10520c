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
    """family -> node -> pace (1.0 = the group median; below 1 slower), over the figures the node has."""
    out: dict[str, dict[str, float]] = {}
    for st in group.stats.values():
        if st.median <= 0:
            continue
        fam = out.setdefault(st.family, {})
        for node, v in st.values.items():
            pace = v / st.median if st.higher_better else (st.median / v if v > 0 else 0.0)
            fam[node] = min(fam.get(node, pace), pace)
    return out


def straggler_costs(group: Group, findings: list[FleetFinding], nodes: dict[str, Node]) -> list[Cost]:
    flagged: dict[str, set[str]] = {}
    for f in findings:
        if f.kind == "outlier" and f.group == group.id and f.node and f.figure in group.stats:
            flagged.setdefault(group.stats[f.figure].family, set()).add(f.node)
    out = []
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
