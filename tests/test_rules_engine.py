"""The registry, the engine (crash isolation, not-checked merging, ordering), rendering, and the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from gpuadvisor.cli import cli
from gpuadvisor.facts import Finding, Gpu, Rig
from gpuadvisor.render.text.findings import render_findings
from gpuadvisor.rules import SEVERITY_ORDER, all_rules, evaluate, get_rule, verdict
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.registry import SECTIONS, Registry, RuleDefinitionError, parse_docstring

DOC = """Summary line.

What it checks
    a
Why it matters
    b
Threshold
    c
Source
    d
How to fix
    e
"""


def _doc(func):
    func.__doc__ = DOC
    return func


# -- registry ---------------------------------------------------------------------------------------------


def test_registry_has_all_areas_and_stable_codes():
    rules = all_rules()
    assert len(rules) == 76  # GA105, GA507, GA607, GA801-GA814, GA820-GA829 (beyond the GPU), GA901-GA907 (storage)
    codes = [r.code for r in rules]
    assert codes == sorted(set(codes))
    assert {r.code[:3] for r in rules} == {"GA1", "GA2", "GA3", "GA4", "GA5", "GA6", "GA8", "GA9"}
    assert {r.area for r in rules} == {
        "gpu",
        "pcie",
        "nvlink",
        "topology",
        "host",
        "software",
        "health",
        "bandwidth",
        "network",
        "storage",
    }
    assert get_rule("GA101").name == "pcie-link-downgraded"
    assert get_rule("ga101") is get_rule("pcie-link-downgraded") is get_rule("GA101")
    assert get_rule("GA999") is None


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_documents_every_section_with_a_source(rule):
    assert set(rule.sections) == set(SECTIONS)
    assert all(text.strip() for text in rule.sections.values())
    assert rule.summary.endswith(".")
    text = rule.describe()
    assert text.startswith(f"{rule.code} {rule.name}\n")
    for title in SECTIONS:
        assert f"\n{title}\n" in text
    for t in rule.thresholds:
        assert f"{t} = " in text


def test_registry_refuses_duplicates_and_bad_definitions():
    reg = Registry()
    reg.register("GA901", "first-rule", area="gpu", severity="warn")(_doc(lambda rig, ctx: []))
    with pytest.raises(RuleDefinitionError, match="duplicate rule code GA901"):
        reg.register("GA901", "other-rule", area="gpu", severity="warn")
    with pytest.raises(RuleDefinitionError, match="duplicate rule name first-rule"):
        reg.register("GA902", "first-rule", area="gpu", severity="warn")
    with pytest.raises(RuleDefinitionError, match="not of the form"):
        reg.register("X1", "x", area="gpu", severity="warn")
    with pytest.raises(RuleDefinitionError, match="kebab-case"):
        reg.register("GA903", "Not_Kebab", area="gpu", severity="warn")
    with pytest.raises(RuleDefinitionError, match="area"):
        reg.register("GA903", "ok-name", area="disk", severity="warn")
    with pytest.raises(RuleDefinitionError, match="default severity"):
        reg.register("GA903", "ok-name", area="gpu", severity="error")
    with pytest.raises(RuleDefinitionError, match="unknown threshold"):
        reg.register("GA903", "ok-name", area="gpu", severity="warn", thresholds=("nope",))


def test_docstring_sections_are_required():
    with pytest.raises(RuleDefinitionError, match="lacks section"):
        parse_docstring("Summary.\n\nWhat it checks\n    a\n", "GA900 x")
    with pytest.raises(RuleDefinitionError, match="no docstring"):
        parse_docstring(None, "GA900 x")
    summary, sections = parse_docstring(DOC, "GA900 x")
    assert summary == "Summary line." and sections["Source"] == "d"


# -- engine -----------------------------------------------------------------------------------------------


def test_a_crashing_rule_becomes_an_error_finding_and_the_others_still_run():
    reg = Registry()

    @reg.register("GA901", "crashes", area="gpu", severity="fail")
    @_doc
    def crashes(rig, ctx):
        raise ZeroDivisionError("boom")

    @reg.register("GA902", "works", area="gpu", severity="warn")
    @_doc
    def works(rig, ctx):
        yield ctx.finding("GPU 0 is fine-ish", gpus=[0])

    rig = Rig(gpus=[Gpu(index=0)])
    out = evaluate(rig, registry=reg)
    assert [(f.code, f.severity) for f in out] == [("GA901", "error"), ("GA902", "warn")]
    err = out[0]
    assert err.message == "rule crashed: ZeroDivisionError: boom"
    assert "ZeroDivisionError" in err.observed["traceback"]
    assert verdict(out)[0] == "warnings"


def test_not_checked_findings_are_merged_per_reason():
    reg = Registry()

    @reg.register("GA901", "needs-facts", area="gpu", severity="warn")
    @_doc
    def needs(rig, ctx):
        for g in rig.gpus:
            yield ctx.not_checked("no permission" if g.index < 3 else "not supported", gpus=[g.index])

    out = evaluate(Rig(gpus=[Gpu(index=i) for i in range(5)]), registry=reg)
    assert [(f.severity, f.gpus, f.message, f.subject) for f in out] == [
        ("not-checked", [0, 1, 2], "no permission", "GPU 0, 1, 2"),
        ("not-checked", [3, 4], "not supported", "GPU 3, 4"),
    ]


def test_context_refuses_undeclared_thresholds():
    reg = Registry()

    @reg.register("GA901", "sneaky", area="host", severity="warn")
    @_doc
    def sneaky(rig, ctx: Context):
        ctx.t("ram_per_gpu_gb")
        return []

    out = evaluate(Rig(), registry=reg)
    assert out[0].severity == "error" and "without declaring it" in out[0].message


def test_ordering_and_verdict():
    fs = [Finding(code="GA5", severity=s) for s in ("info", "not-checked", "warn", "error", "fail")]
    from gpuadvisor.rules import sort_findings

    assert [f.severity for f in sort_findings(fs)] == list(SEVERITY_ORDER)
    assert verdict([]) == ("healthy", {"fail": 0, "error": 0, "warn": 0, "info": 0, "not-checked": 0})
    assert verdict([Finding(severity="info"), Finding(severity="not-checked")])[0] == "healthy"
    assert verdict([Finding(severity="warn")])[0] == "warnings"
    assert verdict([Finding(severity="warn"), Finding(severity="fail")]) == (
        "failing",
        {"fail": 1, "error": 0, "warn": 1, "info": 0, "not-checked": 0},
    )


# -- rendering --------------------------------------------------------------------------------------------


def test_render_worst_first_with_evidence_and_fix(preset):
    text = render_findings(evaluate(preset("4x4090-pcie")), color=False)
    lines = text.splitlines()
    assert lines[0] == "FAIL   GA101 pcie-link-downgraded  GPU 2 0000:41:00.0"
    assert text.index("GA101") < text.index("GA203") < text.index("GA202") < text.index("Not checked")
    assert "fix: reseat the card or move it to an x16 slot" in text
    assert "expected: max_link_width=16" in text
    # The verdict, then the worst findings it rests on, one line each (the evidence in brackets left out).
    assert lines[-2:] == [
        "Verdict: failing (1 fail, 2 warn, 1 info, 15 not checked)",
        "  FAIL GA101 GPU 2 0000:41:00.0 runs at x8 where its slot and card support x16",
    ]
    assert "\033[" not in text


def test_render_colour_only_when_asked_or_on_a_tty(preset, monkeypatch):
    findings = evaluate(preset("4x4090-pcie"))
    assert "\033[1;31mFAIL" in render_findings(findings, color=True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033[" not in render_findings(findings)
    monkeypatch.delenv("NO_COLOR")
    assert "\033[" in render_findings(findings)


def test_render_healthy_rig():
    assert render_findings([], color=False) == "Verdict: healthy (no findings)\n"


def test_render_healthy_but_mostly_unchecked_says_so():
    # an import of one topo -m: one info finding and 30 rules without their facts is not a clean bill of health
    findings = [Finding(code="GA202", name="p2p-through-host-bridge", area="topology", severity="info", message="m")]
    findings += [
        Finding(code=f"GA3{i:02d}", name="x", area="gpu", severity="not-checked", message=f"r{i}") for i in range(3)
    ]
    assert (
        render_findings(findings, color=False).splitlines()[-1]
        == "Verdict: healthy as far as checked (1 info, 3 not checked)"
    )


# -- CLI --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [r.code for r in all_rules()])
def test_explain_every_code(code):
    res = CliRunner().invoke(cli, ["explain", code], env={"COLUMNS": "1000"})
    assert res.exit_code == 0, res.output
    # the rule's description, word for word; its layout is the reader's width, wrapped once (not the docstring's)
    assert "".join(res.output.split()) == "".join(get_rule(code).describe().split())
    assert not any(len(ln) > 1000 for ln in res.output.splitlines())
    narrow = CliRunner().invoke(cli, ["explain", code], env={"COLUMNS": "80"}).output
    assert all(len(ln) <= 80 or len(ln.split()) == 1 and "/" in ln for ln in narrow.splitlines())  # or a URL
    assert narrow.split() == res.output.split()  # the same words, wrapped


def test_explain_by_name_and_as_json():
    res = CliRunner().invoke(cli, ["explain", "pcie-link-downgraded", "--json"])
    assert res.exit_code == 0
    d = json.loads(res.output)
    assert (d["code"], d["severity"], sorted(d["sections"])) == ("GA101", "fail", sorted(SECTIONS))


def _gpuadvisor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=60)


def test_explain_unknown_code_is_one_line_and_exit_2():
    p = _gpuadvisor("explain", "GA999")
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr == "gpuadvisor: error: unknown rule 'GA999' (list the rules with 'gpuadvisor rules')\n"


def test_rules_table_and_json():
    res = CliRunner().invoke(cli, ["rules"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert res.output.splitlines()[0].split() == ["code", "name", "area", "severity", "checks"]
    for r in all_rules():
        assert re.search(rf"^{r.code} +{re.escape(r.name)} ", res.output, re.M), r.code
    res = CliRunner().invoke(cli, ["rules", "--json"])
    doc = json.loads(res.output)
    assert [r["code"] for r in doc["rules"]] == [r.code for r in all_rules()]
    ga401 = next(r for r in doc["rules"] if r["code"] == "GA401")
    assert ga401["thresholds"][0]["name"] == "ram_per_gpu_gb" and ga401["thresholds"][0]["value"] == 16
    assert "rules of thumb of GPU workstation build guides" in ga401["thresholds"][0]["source"]  # no project file cited


def test_rules_by_area_and_unknown_area():
    res = CliRunner().invoke(cli, ["rules", "--area", "pcie"], env={"COLUMNS": "200"})
    codes = [ln.split()[0] for ln in res.output.splitlines()[1:] if ln.startswith("GA")]
    assert codes == ["GA101", "GA102", "GA103", "GA104", "GA105", "GA806", "GA807", "GA821"]  # ACS, IOMMU, AER
    p = _gpuadvisor("rules", "--area", "disk")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "'disk'" in p.stderr
