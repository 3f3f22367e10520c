"""The called family verdicts of the noise model as findings: one per node and family, worst figure named.

A node slower than its group across a family's figures (its typical figure, the median, is out) is a straggler:
it fails from ``FAIL_REL``. One figure out where the rest of the family is not is one reading: a warning that
says to re-measure, and a failure only where the family is quiet by nature (its floor is the default 2 %, as
pinned copies and collectives) and the reading is ``FAIL_REL`` off (a GPU whose host copies run at half rate).
In the families noisy by nature (P2P latency, pageable copies, storage) one reading never drains a node, also
where the family has one figure per node (a storage directory's read rate).
"""

from __future__ import annotations

from gpuadvisor.fleet.model import FleetFinding, Node
from gpuadvisor.fleet.noise import FLOOR_DEFAULT, Verdict
from gpuadvisor.text import plural

FAIL_REL = 0.25  # a node a quarter slower in a family costs a synchronous job a quarter of its speed or more
STRAGGLER = "straggler"  # the finding's code: the node's figures of a family together
ONE_FIGURE = "one-figure"  # one reading out, the family's other figures not


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
                f"typically {_pct(v.mean_dev)} {word}: one reading, re-measure before draining"
            )
            fails = v.floor <= FLOOR_DEFAULT and dev >= FAIL_REL
        else:
            over = f" ({', '.join(v.members)} together)" if v.members else ""
            what = (
                f"{v.family}{over}: the node's {plural(v.k, 'figure')} typically {_pct(v.mean_dev)} {word} the group "
                f"(worst {v.worst_key}: {v.worst_value:.4g} {v.unit}, {_pct(v.worst_dev)} {word})"
            )
            fails = dev >= FAIL_REL and (v.k > 1 or v.floor <= FLOOR_DEFAULT)
            if v.k == 1 and v.floor > FLOOR_DEFAULT:  # one reading of a noisy family
                what += ": one reading, re-measure before draining"
        p = f"{v.p:.1g}" if v.p > 0 else "< 1e-300"
        out.append(
            FleetFinding(
                node=v.node,
                group=v.group,
                kind="outlier",
                severity="fail" if fails else "warn",
                code=ONE_FIGURE if v.by_worst else STRAGGLER,
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
