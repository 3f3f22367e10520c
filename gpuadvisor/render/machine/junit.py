"""A check as JUnit XML: one testsuite, one testcase per selected rule, for CI test reports (GitLab, Jenkins).

Built with ``xml.etree`` (never string formatting). Layout (the de-facto JUnit XML that Jenkins' and GitLab's test
reports read):

- ``<testsuite name="gpuadvisor" tests failures errors skipped time>`` with ``<properties>`` naming the source,
  preset, hostname, fail-on level and policy;
- ``<testcase classname=AREA name="CODE name">`` per selected rule (GitLab shows classname as the suite);
  codes are unique, so names are;
- a first testcase "GPUs found" with an ``<error>`` when the node could not be judged (no GPU, nothing failing);
- at most one child per testcase: ``<failure>`` when a finding of the rule fails the gate (all its findings,
  with evidence and fix, in the text), ``<error>`` when the rule crashed, ``<skipped>`` when every finding of
  the rule is not-checked (the reasons as its text); otherwise it passed, and findings below the gate
  (info, or warn at fail-on fail) are listed in ``<system-out>``.

Valid against both JUnit schemas Jenkins ships: the older junit-4.xsd (where ``<skipped>`` is text only, and
a testcase's children come in the order skipped, error, failure, system-out, system-err) and the xUnit
plugin's junit-10.xsd.

Testcases carry no ``time``: the rules engine times the whole evaluation, not each rule; the suite's ``time``
is the whole check. The exit code, not this report, fails the job.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.registry import Rule
from gpuadvisor.rules.summary import sort_findings
from gpuadvisor.text import plural

# Characters XML 1.0 cannot carry at all (control characters other than tab, LF, CR; lone surrogates).
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """A string XML 1.0 can hold: characters it cannot are replaced by U+FFFD."""
    return _INVALID_XML.sub("\ufffd", str(value))


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items() if k != "traceback")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def finding_text(f: Finding) -> str:
    """One finding as plain text: heading, message, observed, expected (with its source), fix."""
    head = f"{f.severity.upper()} {f.code} {f.name}" + (f"  {f.subject}" if f.subject else "")
    lines = [head, f.message]
    if f.observed is not None and f.observed != {} and _fmt(f.observed):
        lines.append(f"observed: {_fmt(f.observed)}")
    if f.expected is not None:
        lines.append(f"expected: {_fmt(f.expected)}" + (f" ({f.expected_source})" if f.expected_source else ""))
    if f.fix:
        lines.append(f"fix: {f.fix}")
    return "\n".join(lines)


def _message(fs: list[Finding]) -> str:
    if len(fs) == 1:
        return fs[0].message
    return f"{plural(len(fs), 'finding')}; first: {fs[0].message}"


def _sub(
    parent: ET.Element, tag: str, attrib: Mapping[str, object] | None = None, text: str | None = None
) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in (attrib or {}).items()})
    if text is not None:
        el.text = xml_text(text)
    return el


def build_junit(
    rig: Rig,
    findings: Iterable[Finding],
    rules: Iterable[Rule],
    *,
    failing: Callable[[Finding], bool],
    fail_on: str,
    policy: str | None = None,
    time_s: float = 0.0,
    cannot_judge: str | None = None,
) -> ET.Element:
    """The ``<testsuite>`` element. ``rules`` are the selected rules (one testcase each); ``failing(f)`` says
    whether a finding fails the gate (the check command's decision from ``fail_on``)."""
    from gpuadvisor import __version__

    by_code: dict[str, list[Finding]] = {}
    for f in sort_findings(findings):
        by_code.setdefault(f.code, []).append(f)
    suite = ET.Element("testsuite")
    props = _sub(suite, "properties")
    for name, value in (
        ("gpuadvisor.version", __version__),
        ("source", rig.source.kind),
        ("preset", rig.source.preset),
        ("hostname", rig.host.hostname),
        ("gpus", len(rig.gpus)),
        ("fail_on", fail_on),
        ("policy", policy),
        ("scan.created_at", rig.source.created_at),
    ):
        if value is not None:
            _sub(props, "property", {"name": name, "value": value})
    n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if cannot_judge:  # no GPU found and nothing failing: the node was not judged (exit 2), and CI shows why
        n["tests"] += 1
        n["errors"] += 1
        case = _sub(suite, "testcase", {"classname": "gpu", "name": "GPUs found"})
        _sub(case, "error", {"message": cannot_judge, "type": "not-judged"}, cannot_judge)
    for rule in rules:
        n["tests"] += 1
        case = _sub(suite, "testcase", {"classname": rule.area, "name": f"{rule.code} {rule.name}"})
        fs = by_code.get(rule.code, [])
        gating = [f for f in fs if f.severity != "error" and f.severity != "not-checked" and failing(f)]
        errors = [f for f in fs if f.severity == "error"]
        skipped = [f for f in fs if f.severity == "not-checked"]
        below = [f for f in fs if f not in gating and f not in errors and f not in skipped]
        if gating:
            n["failures"] += 1
            _sub(
                case,
                "failure",
                {"message": _message(gating), "type": gating[0].severity},
                "\n\n".join(finding_text(f) for f in fs if f.severity != "not-checked"),
            )
        elif errors:
            n["errors"] += 1
            tb = "\n".join(
                str((f.observed or {}).get("traceback", "")) if isinstance(f.observed, dict) else "" for f in errors
            ).strip()
            _sub(
                case,
                "error",
                {"message": _message(errors), "type": "rule-crashed"},
                "\n\n".join(finding_text(f) for f in errors) + (f"\n\n{tb}" if tb else ""),
            )
        elif skipped and not below:
            n["skipped"] += 1
            # The reason is the element's text, not a message attribute: the junit-4 schema Jenkins ships
            # declares <skipped> as a plain string (no attributes); the newer junit-10 schema accepts both.
            _sub(case, "skipped", None, "not checked: " + "; ".join(dict.fromkeys(f.message for f in skipped)))
        if below and not gating:
            _sub(case, "system-out", None, "\n\n".join(finding_text(f) for f in below))
    for k, v in {"name": "gpuadvisor", **n, "time": f"{time_s:.3f}"}.items():
        suite.set(k, str(v))
    return suite


def render_junit(rig: Rig, findings: Iterable[Finding], rules: Iterable[Rule], **kw: Any) -> str:
    """The JUnit XML document as text (UTF-8, with an XML declaration); keywords as ``build_junit``."""
    suite = build_junit(rig, findings, rules, **kw)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
