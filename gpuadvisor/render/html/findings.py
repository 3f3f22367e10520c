"""The verdict and findings sections of the report: the verdict as the rules' summary decides it, each finding
with its evidence, and each rule's description from the registry."""

from __future__ import annotations

from typing import Any

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.render.html.view import fmt_any
from gpuadvisor.rules import REGISTRY, get_rule, summary

SEVERITY_ORDER = {"fail": 0, "error": 1, "warn": 2, "info": 3, "not-checked": 4}


def verdict(rig: Rig) -> dict[str, Any]:
    """healthy / warnings / failing as the rules' summary decides it (terminal and check agree), with counts."""
    counts = {s: 0 for s in SEVERITY_ORDER}
    for f in rig.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    state, _ = summary.verdict(rig.findings)
    checked = bool(rig.findings) or "findings" in rig.provenance or "rules" in rig.provenance
    if state == "healthy" and not checked:
        state = "unchecked"
    headline = {"failing": "Failing", "warnings": "Warnings", "healthy": "Healthy", "unchecked": "Not checked"}.get(
        state, state
    )
    parts = []
    for sev, one, many in (
        ("fail", "failing", "failing"),
        ("error", "rule error", "rule errors"),
        ("warn", "warning", "warnings"),
        ("info", "note", "notes"),
        ("not-checked", "not checked", "not checked"),
    ):
        if counts.get(sev):
            parts.append(f"{counts[sev]} {one if counts[sev] == 1 else many}")
    worst: list[str] = []
    more = 0
    todo = None
    why = ""
    if checked or not rig.gpus:
        rv = summary.rig_verdict(rig)
        worst, more = rv.worst, rv.more
        why = rv.why or ""
        if rv.state == summary.NO_GPUS:
            state, todo = rv.state, rv.todo
            headline = rv.headline
    if state == "no-gpus":
        text = f"This scan lists no GPU ({why}): nothing for the GPU rules to judge."
    elif state == "unchecked":
        text = (
            "This scan carries no rule results. To get findings, run the rules on it: "
            "gpuadvisor report SCAN.json --rules --html OUT.html"
        )
    elif state == "healthy":
        text = "No rule found a warning or a failure." + (f" ({', '.join(parts)})" if parts else "")
    else:
        text = ", ".join(parts)
    # Rules without their facts did not pass, they did not run: a healthy verdict says how much it rests on, and
    # when most rules could not run (an import of one output, say) it is not painted as a clean bill of health.
    partial = False
    unchecked = {f.code for f in rig.findings if f.severity == "not-checked"}
    if state == "healthy" and unchecked:
        headline = "Healthy as far as checked"
        total = _rule_count()
        if total and 2 * len(unchecked) > total:
            partial = True
            text += (
                f" {len(unchecked)} of the {total} rules could not be checked: this scan does not hold their facts, "
                "so this verdict covers only what it shows."
            )
    return {
        "state": state,
        "headline": headline,
        "summary": text,
        "counts": counts,
        "partial": partial,
        "gpus": len(rig.gpus),
        "findings": len(rig.findings),
        "worst": worst,
        "more": more,
        "todo": todo,
    }


def _rule_count() -> int:
    return len(REGISTRY.all())


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Worst first, in the rules' own order (the terminal and check agree)."""
    return list(summary.sort_findings(findings))


def rule_doc(code: str) -> dict[str, Any] | None:
    """A rule's description from the rules registry: name, summary, sections, thresholds; None for a code the
    registry does not know (a scan written by another version of gpuadvisor)."""
    rule = get_rule(code)
    if rule is None:
        return None
    d = rule.to_dict()
    sections: dict[str, Any] = d.get("sections") or {}  # type: ignore[assignment]
    thresholds: list[Any] = d.get("thresholds") or []  # type: ignore[assignment]
    return {
        "name": d.get("name"),
        "summary": d.get("summary"),
        "sections": [(k, [p.strip() for p in str(v).split("\n\n") if p.strip()]) for k, v in sections.items()],
        "thresholds": list(thresholds),
    }


def findings_view(rig: Rig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = []
    for f in sorted_findings(rig.findings):
        evidence = []
        if f.subject:
            evidence.append(("subject", f.subject))
        if f.gpus:
            evidence.append(("GPUs", ", ".join(str(g) for g in f.gpus)))
        if f.observed is not None:
            evidence.append(("observed", fmt_any(f.observed)))
        if f.expected is not None:
            evidence.append(("expected", fmt_any(f.expected)))
        if f.expected_source:
            evidence.append(("expected from", f.expected_source))
        rows.append({"f": f, "anchor": anchor(f.code), "evidence": evidence})
    explanations = []
    seen = set()
    for f in sorted_findings(rig.findings):
        if f.code in seen or not f.code:
            continue
        seen.add(f.code)
        doc = rule_doc(f.code)
        fired = any(g.code == f.code and g.severity != "not-checked" for g in rig.findings)
        explanations.append(
            {
                "code": f.code,
                "anchor": anchor(f.code),
                "name": (doc or {}).get("name") or f.name,
                "area": f.area,
                "doc": doc,
                "fired": fired,
            }
        )
    return rows, explanations


def anchor(code: str) -> str:
    return "rule-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in code)
