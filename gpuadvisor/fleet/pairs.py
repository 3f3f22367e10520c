"""Node-pair all-reduce rounds (``bench --pairs``) and other multi-node runs, read from any scan that holds them.

Every pair's busbw is judged against the median of all pairs with the same rule as per-node figures
(``outliers``). A node in at least two slow pairs, and in slow pairs for at least half of its pairs, is the
suspect (its NIC, cable or switch port: the slow pairs have it in common); a slow pair whose two nodes are
otherwise fine points at the path between them.
"""

from __future__ import annotations

from gpuadvisor.fleet.model import CrossNode, FleetFinding, Node
from gpuadvisor.fleet.outliers import MIN_NODES, MIN_REL, Z_THRESHOLD, is_outlier, robust


def collect(nodes: dict[str, Node]) -> tuple[dict[tuple[str, str], CrossNode], list[CrossNode]]:
    pairs: dict[tuple[str, str], CrossNode] = {}
    runs: dict[tuple[str, ...], CrossNode] = {}
    for n in nodes.values():
        for c in n.cross:
            if c.pair and c.kind == "all_reduce":
                a, b = sorted(c.hosts)
                pairs.setdefault((a, b), c)
            else:
                runs.setdefault((c.kind, *sorted(c.hosts)), c)
    return pairs, list(runs.values())


def find_pairs(nodes: dict[str, Node], *, z: float = Z_THRESHOLD, min_rel: float = MIN_REL) -> list[FleetFinding]:
    pairs, runs = collect(nodes)
    out: list[FleetFinding] = []
    for c in runs:
        hosts = ", ".join(c.hosts[:8]) + (f" +{len(c.hosts) - 8} more" if len(c.hosts) > 8 else "")
        out.append(
            FleetFinding(
                node=None,
                kind="multinode",
                severity="info",
                subject=f"{c.kind} across {len(c.hosts)} hosts",
                message=f"{c.kind} across {len(c.hosts)} hosts ({hosts}), {c.world_size} ranks: busbw "
                f"{c.value_gbps:.4g} GB/s",
                observed=c.value_gbps,
                evidence=c.evidence,
            )
        )
    if not pairs:
        return out
    if len(pairs) < MIN_NODES:
        for (a, b), c in sorted(pairs.items()):
            out.append(
                FleetFinding(
                    node=None,
                    kind="pair",
                    severity="info",
                    subject=f"pair {a} + {b}",
                    message=f"all_reduce between {a} and {b}: busbw {c.value_gbps:.4g} GB/s ({len(pairs)} "
                    f"pair(s) measured: too few to compare, {MIN_NODES} needed)",
                    observed=c.value_gbps,
                    evidence=c.evidence,
                )
            )
        return out
    values = [c.value_gbps for c in pairs.values()]
    med, _, scale = robust(values)
    slow: dict[tuple[str, str], float] = {}
    for k, c in pairs.items():
        bad, rel, _ = is_outlier(c.value_gbps, med, scale, True, z=z, min_rel=min_rel)
        if bad:
            slow[k] = rel
    count: dict[str, int] = {}
    bad_count: dict[str, int] = {}
    for a, b in pairs:
        for h in (a, b):
            count[h] = count.get(h, 0) + 1
    for a, b in slow:
        for h in (a, b):
            bad_count[h] = bad_count.get(h, 0) + 1
    suspects = {h for h, k in bad_count.items() if k >= 2 and 2 * k >= count[h]}
    for h in sorted(suspects):
        mine = [pairs[k].value_gbps for k in pairs if h in k]
        out.append(
            FleetFinding(
                node=h,
                kind="pair",
                severity="warn",
                subject="node-pair all_reduce",
                message=f"slow in {bad_count[h]} of its {count[h]} node pairs (its pairs' median busbw "
                f"{sorted(mine)[len(mine) // 2]:.4g} GB/s, all pairs' {med:.4g}): its NIC, cable "
                "or switch port is the common factor",
                observed=sorted(mine)[len(mine) // 2],
                expected=med,
                deviation=min(slow[k] for k in slow if h in k),
            )
        )
    for (a, b), rel in sorted(slow.items()):
        if a in suspects or b in suspects:
            continue
        c = pairs[(a, b)]
        out.append(
            FleetFinding(
                node=None,
                kind="pair",
                severity="warn",
                subject=f"pair {a} + {b}",
                message=f"all_reduce between {a} and {b}: busbw {c.value_gbps:.4g} GB/s, "
                f"{abs(rel) * 100:.0f}% "
                f"below the median {med:.4g} of {len(pairs)} pairs, while both nodes are fine with "
                "others: the path between them (switch, cable, routing)",
                observed=c.value_gbps,
                expected=med,
                deviation=rel,
                evidence=c.evidence,
            )
        )
    return out
