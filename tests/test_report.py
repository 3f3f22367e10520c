"""`gpuadvisor report`: a saved scan or a simulated rig to HTML, text or JSON; errors are one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

from browser import Dom
from test_html import edge_classes, embedded_scan, gpu_nodes
from test_html_rigs import measured_rig

from gpuadvisor.render.html import render_html


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120)


def test_report_saved_scan_to_html_is_the_api_output(tmp_path):
    scan = tmp_path / "scan.json"
    rig = measured_rig()
    rig.save(scan)
    out = tmp_path / "report.html"
    r = run("report", str(scan), "--html", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    html = out.read_text(encoding="utf-8")
    assert r.stderr.strip() == f"report written to {out} ({len(html.encode()):,} bytes)"
    # The saved scan renders exactly as the rig it was saved from: the HTML needs nothing the JSON lacks.
    assert html == render_html(rig)
    assert embedded_scan(Dom(html)) == json.loads(scan.read_text())


def test_report_simulate_runs_the_rules_and_marks_the_downgrade(tmp_path):
    out = tmp_path / "r.html"
    r = run("report", "--simulate", "4x4090-pcie", "--html", str(out))
    assert r.returncode == 0, r.stderr
    dom = Dom(out.read_text(encoding="utf-8"))
    assert sorted(gpu_nodes(dom)) == [0, 1, 2, 3]
    assert [k for k, c in edge_classes(dom).items() if "fail" in c.split()] == [("rp-0000:40:01.1", "gpu-2")]
    scan = embedded_scan(dom)
    assert scan["source"]["kind"] == "simulated"
    fails = [f for f in scan["findings"] if f["severity"] == "fail"]
    assert [(f["code"], f["gpus"]) for f in fails] == [("GA101", [2])]
    assert next(a for t, a in dom.elements if a.get("id") == "verdict")["data-state"] == "failing"


def test_report_no_rules_keeps_the_scan_as_is(tmp_path):
    out = tmp_path / "r.html"
    r = run("report", "--simulate", "4x4090-pcie", "--no-rules", "--html", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["findings"] == []
    assert 'data-state="unchecked"' in out.read_text(encoding="utf-8")


def test_report_html_to_stdout_and_text_default(tmp_path):
    r = run("report", "--simulate", "h100-pcie", "--html", "-")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>")
    t = run("report", "--simulate", "h100-pcie")
    assert t.returncode == 0 and "SIMULATED" in t.stdout and "<html" not in t.stdout


def test_report_errors_are_one_line_exit_2(tmp_path):
    cases = [
        (
            ("report",),
            "gpuadvisor: error: no scan given: gpuadvisor report SCAN.json --html OUT.html (or --simulate PRESET)",
        ),
        (
            ("report", str(tmp_path / "nope.json"), "--html", str(tmp_path / "r.html")),
            f"gpuadvisor: error: {tmp_path / 'nope.json'}: no such file",
        ),
        (
            ("report", "--simulate", "dgx-h100", "--html", str(tmp_path / "no" / "dir" / "r.html")),
            f"gpuadvisor: error: {tmp_path / 'no' / 'dir' / 'r.html'}: cannot write the output of --html",
        ),
        (
            ("report", str(tmp_path / "x.json"), "--simulate", "dgx-h100"),
            "gpuadvisor: error: a scan file and --simulate both given: choose one source",
        ),
    ]
    bad = tmp_path / "x.json"
    bad.write_text("{}", encoding="utf-8")
    for args, start in cases:
        r = run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith(start), (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
