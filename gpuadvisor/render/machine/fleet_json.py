"""The fleet view as JSON (kind "gpuadvisor-fleet", version 1)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpuadvisor.fleet.model import FleetReport

KIND = "gpuadvisor-fleet"


def to_doc(r: FleetReport) -> dict[str, Any]:
    per = r.node_findings()
    return {
        "kind": KIND,
        "version": 1,
        "generated_at": r.generated_at,
        "inputs": r.inputs,
        "baseline": r.baseline,
        "thresholds": r.thresholds,
        "counts": r.counts(),
        "fail_on": r.fail_on,
        "exit_code": 1 if r.failing() else 0,
        "nodes": [
            {
                "name": n.name,
                "status": n.status,
                "stale": n.stale,
                "group": n.group,
                "path": n.path,
                "created_at": n.created_at.isoformat() if n.created_at else None,
                "error": n.error,
                "gpus": n.gpus,
                "notes": n.notes,
                "findings": [f.fleet_dict() for f in fs],
            }
            for n, fs in r.ranked()
        ],
        "groups": [
            {
                "id": g.id,
                "label": g.label,
                "nodes": g.nodes,
                "compared": len(g.judged),
                "figures": {
                    k: {
                        "family": s.family,
                        "unit": s.unit,
                        "higher_better": s.higher_better,
                        "n": s.n,
                        "median": s.median,
                        "mad": s.mad,
                        "min": s.lo,
                        "max": s.hi,
                    }
                    for k, s in g.stats.items()
                },
            }
            for g in r.groups
        ],
        "drain": [n.name for n, _ in r.drain()],
        "noise": [dataclasses.asdict(x) for x in r.noise],
        "costs": [dataclasses.asdict(c) for c in r.costs],
        "fleet_findings": [f.fleet_dict() for f in r.findings if f.node is None],
        "notes": r.notes,
        "_per_node_count": {k: len(v) for k, v in per.items() if v},
    }


def render_json(r: FleetReport) -> str:
    doc = to_doc(r)
    doc.pop("_per_node_count")
    return json.dumps(doc, indent=2, default=str) + "\n"
