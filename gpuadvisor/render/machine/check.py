"""``gpuadvisor check --format json``: the verdict, the gate and the findings as one JSON document."""

from __future__ import annotations

import json

from gpuadvisor.facts import to_dict
from gpuadvisor.rules.gate import CheckResult, gating_severities


def render_json(res: CheckResult) -> str:
    rig = res.rig
    doc = {
        "verdict": res.verdict,
        "fail_on": res.fail_on,
        "gating_severities": gating_severities(res.fail_on),
        "exit_code": res.exit_code,
        "summary": res.summary(),
        "counts": res.counts,
        "failing": list(dict.fromkeys(f.code for f in res.failing)),
        "rules_selected": len(res.rules),
        "policy": res.policy,
        "source": {
            "kind": rig.source.kind,
            "preset": rig.source.preset,
            "hostname": rig.host.hostname,
            "created_at": rig.source.created_at,
        },
        "findings": [to_dict(f) for f in res.findings],
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"
