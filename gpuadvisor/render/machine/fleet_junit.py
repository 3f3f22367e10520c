"""The fleet view as JUnit XML: one testcase per node, failing when a finding at or above the gate names it.

Built with ``xml.etree`` and the same sanitiser as ``check``'s JUnit (render.machine.junit.xml_text: characters
XML 1.0 cannot hold, control characters and lone surrogates from host names, become U+FFFD), in the shape both
JUnit schemas accept: ``<skipped>`` carries its reason as text, not as a ``message`` attribute (junit-4.xsd
declares it a plain string), and a testcase has at most one of skipped, failure.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpuadvisor.fleet.model import SEV_RANK, FleetReport
from gpuadvisor.render.machine.junit import xml_text
from gpuadvisor.text import plural


def _sub(parent: ET.Element, tag: str, attrib: dict[str, object] | None = None, text: str | None = None) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in (attrib or {}).items()})
    if text is not None:
        el.text = xml_text(text)
    return el


def render_junit(r: FleetReport) -> str:
    lim = SEV_RANK[r.fail_on]
    suite = ET.Element("testsuite")
    props = _sub(suite, "properties")
    _sub(props, "property", {"name": "fail_on", "value": r.fail_on})
    _sub(props, "property", {"name": "generated_at", "value": r.generated_at})
    n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for node, fs in r.ranked():
        n["tests"] += 1
        case = _sub(
            suite, "testcase", {"classname": f"gpuadvisor.fleet.{node.group or 'ungrouped'}", "name": node.name}
        )
        bad = [f for f in fs if SEV_RANK[f.severity] <= lim]
        if bad:
            n["failures"] += 1
            msg = f"{plural(len(bad), 'finding')} at or above {r.fail_on}: {bad[0].message}"
            _sub(
                case,
                "failure",
                {"message": msg[:300], "type": bad[0].kind},
                "\n".join(
                    f"[{f.severity}] {f.kind}: {f.message}" + (f"\n  evidence: {f.evidence}" if f.evidence else "")
                    for f in bad
                ),
            )
        elif node.status == "ok" and node.shape is None:
            n["skipped"] += 1
            _sub(case, "skipped", None, "no facts to compare (a check report without its scan)")
        below = [f for f in fs if SEV_RANK[f.severity] > lim]
        if below and not bad:
            _sub(case, "system-out", None, "\n".join(f"[{f.severity}] {f.kind}: {f.message}" for f in below))
    for k, v in {"name": "gpuadvisor fleet", **n, "timestamp": r.generated_at[:19]}.items():
        suite.set(k, str(v))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
