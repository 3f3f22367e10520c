"""The called family verdicts of the noise model as findings: one per node and family, worst figure named."""

from __future__ import annotations

from gpuadvisor.fleet.model import FleetFinding, Node
from gpuadvisor.fleet.noise import Verdict
from gpuadvisor.text import plural

FAIL_REL = 0.25  # a node a quarter slower in a family costs a synchronous job a quarter of its speed or more


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%" if abs(x) >= 0.095 else f"{x * 100:.1f}%"


def findings(verdicts: list[Verdict], nodes: dict[str, Node]) -> list[FleetFinding]:
    out: list[FleetFinding] = []
    for v in verdicts:
        if not v.called:
            continue
        dev = v.worst_dev if v.by_worst else v.mean_dev
        word = "above" if v.unit == "us" else "below"
        if v.by_worst:
            what = (
                f"{v.worst_key}: {v.worst_value:.4g} {v.unit}, {_pct(v.worst_dev)} {word} the group's "
                f"{v.worst_ref:.4g}; the node's {v.k} {v.family} {'figure' if v.k == 1 else 'figures'} "
                f"{_pct(v.mean_dev)} {word} on average"
            )
        else:
            what = (
                f"{v.family}: the node's {plural(v.k, 'figure')} {_pct(v.mean_dev)} {word} the group on average "
                f"(worst {v.worst_key}: {v.worst_value:.4g} {v.unit}, {_pct(v.worst_dev)} {word})"
            )
        p = f"{v.p:.1g}" if v.p > 0 else "< 1e-300"
        out.append(
            FleetFinding(
                node=v.node,
                group=v.group,
                kind="outlier",
                severity="fail" if dev >= FAIL_REL else "warn",
                subject=v.family,
                figure=v.worst_key,
                deviation=-dev,
                observed=v.worst_value,
                expected=v.worst_ref,
                evidence=nodes[v.node].figures[v.worst_key].evidence,
                message=f"{what}; p {p} after the fleet's multiple-comparison control, floor {_pct(v.floor)}",
            )
        )
    return out
