"""The whole report's view: every section's view of the Rig (gpuadvisor.render.html's section modules), the
provenance of each, the sections shown, and the scan JSON embedded in the page."""

from __future__ import annotations

import json
from typing import Any

from gpuadvisor.facts import Rig
from gpuadvisor.render.html.bandwidth import bandwidth_view
from gpuadvisor.render.html.findings import findings_view, verdict
from gpuadvisor.render.html.hardware import GPU_COLUMNS, gpu_rows, host_rows, numa_rows, software_rows, source_banner
from gpuadvisor.render.html.strategy import advice_view
from gpuadvisor.render.html.topology import diagram_keys, matrix_view, p2p_view
from gpuadvisor.render.html.view import View, provenance_of

TOPOLOGY_DETAIL = {
    "imported": "from the imported tool outputs",
    "live": "PCIe path from sysfs, links from NVML",
    "simulated": "simulated NVML and sysfs",
    "spec": "from the rig description",
}


def scan_json(rig: Rig) -> str:
    """The scan as JSON, safe inside <script type="application/json">: no "</script", "<!--" or "&" can appear in
    the raw text."""
    scan = json.dumps(rig.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    scan = scan.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return scan.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def strategy_view(rig: Rig) -> dict[str, Any] | None:
    """The advisor's own advice through its view, any other advice dict generically."""
    from gpuadvisor.render.html.advice import advisor_view, is_advisor_dict

    if rig.advice is not None and is_advisor_dict(rig.advice):
        return advisor_view(rig.advice)
    return advice_view(rig.advice)


def provenance(rig: Rig) -> dict[str, str]:
    prov = {
        "host": provenance_of(rig, "host"),
        "software": provenance_of(rig, "software"),
        "gpus": provenance_of(rig, "gpus"),
        "topology": provenance_of(rig, "topology"),
        "measurements": provenance_of(rig, "measurements", "measured"),
        "network": provenance_of(rig, "network"),
        "expected": "predicted",
        "findings": provenance_of(rig, "findings", "read"),
        "advice": provenance_of(rig, "advice", "predicted"),
    }
    # Findings and advice are judgements on the facts, not facts: say what they rest on.
    if "findings" not in rig.provenance:
        prov["findings"] = "derived from the facts above"
    if "advice" not in rig.provenance:
        prov["advice"] = "predicted"
    return prov


def build_view(rig: Rig) -> View:
    from gpuadvisor.render.html.network import network_view
    from gpuadvisor.render.html.storage import html_view
    from gpuadvisor.render.html.topology_layout import layout

    findings, explanations = findings_view(rig)
    bw = bandwidth_view(rig)
    adv = strategy_view(rig)
    prov = provenance(rig)
    net = network_view(rig)
    storage = html_view(rig)
    sections = [("verdict", "Verdict"), ("rig", "Rig"), ("topology", "Topology")]
    sections += [("network", "Network")] if net else []
    sections += [("bandwidth", "Bandwidth")] if bw else []
    if storage:
        sections.append(("storage", "Storage"))
        prov["storage"] = provenance_of(rig, "storage")
    sections.append(("findings", "Findings"))
    sections += [("strategy", "Strategy")] if adv else []
    sections.append(("provenance", "Provenance"))
    diagram = layout(rig)
    return View(
        topology_detail=TOPOLOGY_DETAIL.get(rig.source.kind, ""),
        diagram_keys=diagram_keys(diagram),
        rig=rig,
        title=f"gpuadvisor report — {rig.host.hostname or 'unknown host'}",
        source_banner=source_banner(rig),
        verdict=verdict(rig),
        host_rows=host_rows(rig.host),
        numa_rows=numa_rows(rig.host),
        software_rows=software_rows(rig.software),
        env_rows=sorted(rig.software.env.items()),
        gpu_columns=list(GPU_COLUMNS),
        gpu_rows=gpu_rows(rig),
        matrix=matrix_view(rig),
        p2p=p2p_view(rig),
        diagram=diagram,
        bandwidth=bw,
        findings=findings,
        explanations=explanations,
        advice=adv,
        provenance=prov,
        problems=list(rig.problems),
        scan_json=scan_json(rig),
        sections=sections,
        network=net,
        storage=storage,
    )
