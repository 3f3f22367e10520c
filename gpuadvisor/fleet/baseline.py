"""What changed since an earlier set of scans (``--baseline DIR``), judged with the same noise model as the fleet.

Per node and figure the change is new / old. What every node shares (an NCCL upgrade that speeds up all-reduce
everywhere, a driver rolled out fleet-wide) is the median change per figure: reported once, per family, when it
is beyond the family's floor. A node is named only when its own change, beyond the fleet's, is outside the
noise measured from all nodes' changes (``noise``: family verdicts, Benjamini-Hochberg, floors). A version or
setting that changed on most nodes is one fleet-wide line; on a few nodes, one line per node.
"""

from __future__ import annotations

from statistics import median

from gpuadvisor.fleet import noise
from gpuadvisor.fleet.model import Figure, FleetFinding, Group, Node

FLEET_SHARE = 0.5  # a change on more than half the nodes is a fleet-wide change, reported once


def compare(now: dict[str, Node], before: dict[str, Node], *, fdr: float = noise.FDR) -> list[FleetFinding]:
    out: list[FleetFinding] = []
    both = sorted(n for n in before if n in now and before[n].status == "ok" and now[n].status == "ok")
    for name in sorted(before):
        if name not in now:
            out.append(
                FleetFinding(
                    node=name,
                    kind="changed",
                    severity="warn",
                    subject="node",
                    message="scanned in the baseline, no scan now",
                )
            )
    out += _attributes(now, before, both)
    out += _figures(now, before, both, fdr)
    for name in sorted(set(now) - set(before)):
        out.append(
            FleetFinding(node=name, kind="changed", severity="info", subject="node", message="new since the baseline")
        )
    return out


def _changed(node: str | None, k: str, a: str, b: str, where: str = "") -> FleetFinding:
    """An attribute changed since the baseline, on one node (``node``) or fleet-wide (``where`` says how many)."""
    return FleetFinding(
        node=node,
        kind="changed",
        severity="info",
        subject=k,
        observed=b,
        expected=a,
        message=f"{k} changed{' ' + where if where else ''}: {a} -> {b}",
    )


def _attributes(now: dict[str, Node], before: dict[str, Node], both: list[str]) -> list[FleetFinding]:
    changes: dict[tuple[str, str, str], list[str]] = {}
    for name in both:
        old, new = before[name].attrs, now[name].attrs
        for k in sorted(set(old) | set(new)):
            a, b = old.get(k), new.get(k)
            if a != b and a is not None and b is not None:
                changes.setdefault((k, a, b), []).append(name)
    out = []
    for (k, a, b), names in sorted(changes.items()):
        if len(names) > FLEET_SHARE * len(both) and len(both) > 1:
            out.append(_changed(None, k, a, b, f"on {len(names)} of {len(both)} nodes"))
        else:
            out += [_changed(n, k, a, b) for n in names]
    return out


def _figures(now: dict[str, Node], before: dict[str, Node], both: list[str], fdr: float) -> list[FleetFinding]:
    pseudo: dict[str, Node] = {}
    for name in both:
        old, new = before[name].figures, now[name].figures
        figs = {}
        for k in set(old) & set(new):
            fo, fn = old[k], new[k]
            if fo.value > 0 and fn.value > 0:
                figs[k] = Figure(k, fn.family, fn.value / fo.value, "x", fn.higher_better, fn.src, fn.index, fn.row)
        pseudo[name] = Node(name=name, shape=("baseline",), figures=figs)
    if len(pseudo) < noise.MIN_NODES:
        return []
    g = Group(
        id="change", label="change since the baseline", shape=("baseline",), nodes=list(pseudo), judged=list(pseudo)
    )
    fams, verdicts = noise.judge_group(g, pseudo)
    noise.decide(fams, verdicts, fdr)
    out: list[FleetFinding] = []
    for fam in fams:
        per_node = [
            median(f.value for f in p.figures.values() if f.family == fam.family)
            for p in pseudo.values()
            if any(f.family == fam.family for f in p.figures.values())
        ]
        shift = median(per_node) - 1 if per_node else 0.0
        if abs(shift) >= fam.floor:
            hb = next(f.higher_better for p in pseudo.values() for f in p.figures.values() if f.family == fam.family)
            worse = (shift < 0) == hb
            out.append(
                FleetFinding(
                    node=None,
                    kind="changed",
                    severity="warn" if worse else "info",
                    subject=fam.family,
                    deviation=shift if hb else -shift,
                    observed=1 + shift,
                    expected=1.0,
                    message=f"{fam.family} changed fleet-wide by {shift * 100:+.1f}% (median over "
                    f"{len(per_node)} nodes; {'worse' if worse else 'better'})",
                )
            )
    for v in verdicts:
        if not v.called:
            continue
        dev = v.worst_dev if v.by_worst else v.mean_dev
        fig = v.worst_key
        fo, fn = before[v.node].figures[fig], now[v.node].figures[fig]
        out.append(
            FleetFinding(
                node=v.node,
                kind="changed",
                severity="warn",
                subject=v.family,
                figure=fig,
                deviation=-dev,
                observed=fn.value,
                expected=fo.value,
                evidence=fn.evidence,
                message=f"{fig}: {fo.value:.4g} -> {fn.value:.4g} {fn.unit}, {dev * 100:.0f}% worse than "
                f"the fleet's own change since the baseline (outside its measured noise)",
            )
        )
    return out
