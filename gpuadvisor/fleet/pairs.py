"""Node-pair all-reduce rounds (``bench --pairs``) and other multi-node runs, read from any scan that holds them.

Every pair's busbw is judged against the median of all pairs with the same rule as per-node figures
(``outliers``). A node in at least two slow pairs, and in slow pairs for at least half of its pairs, is the
suspect (its NIC, cable or switch port: the slow pairs have it in common); a slow pair whose two nodes are
otherwise fine points at the path between them.
"""

from __future__ import annotations

from typing import Any

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


def _of(c: CrossNode, kind: str, severity: str, subject: str, head: str, tail: str = "", **more: Any) -> FleetFinding:
    """A finding about a run across hosts: ``head``, its busbw (GB/s), then ``tail``."""
    message = f"{head} {c.value_gbps:.4g} GB/s{tail}"
    return FleetFinding(
        node=None,
        kind=kind,
        severity=severity,
        subject=subject,
        message=message,
        observed=c.value_gbps,
        evidence=c.evidence,
        **more,
    )


def find_pairs(nodes: dict[str, Node], *, z: float = Z_THRESHOLD, min_rel: float = MIN_REL) -> list[FleetFinding]:
    pairs, runs = collect(nodes)
    out: list[FleetFinding] = []
    for c in runs:
        hosts = ", ".join(c.hosts[:8]) + (f" +{len(c.hosts) - 8} more" if len(c.hosts) > 8 else "")
        what = f"{c.kind} across {len(c.hosts)} hosts"
        out.append(_of(c, "multinode", "info", what, f"{what} ({hosts}), {c.world_size} ranks: busbw"))
    if not pairs:
        return out
    if len(pairs) < MIN_NODES:
        for (a, b), c in sorted(pairs.items()):
            why = f" ({len(pairs)} pair(s) measured: too few to compare, {MIN_NODES} needed)"
            out.append(_of(c, "pair", "info", f"pair {a} + {b}", f"all_reduce between {a} and {b}: busbw", why))
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
        why = (
            f", {abs(rel) * 100:.0f}% below the median {med:.4g} of {len(pairs)} pairs, while both nodes are fine with "
            "others: the path between them (switch, cable, routing)"
        )
        pair = f"pair {a} + {b}"
        out.append(
            _of(c, "pair", "warn", pair, f"all_reduce between {a} and {b}: busbw", why, expected=med, deviation=rel)
        )
    return out
