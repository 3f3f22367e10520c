"""A paste that lists no GPU but holds faults (a kernel log with a hardware Xid) is judged on what it holds: the
verdict is failing, not hidden behind "no GPUs found"; a paste with nothing wrong in it still says no GPU."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from gpuadvisor.cli import cli

BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def test_a_kernel_log_with_a_hardware_xid_is_failing():
    r = CliRunner().invoke(cli, ["import", str(BEYOND / "dmesg-T-xid13-xid109.txt")], env={"COLUMNS": "100"})
    assert "Verdict: failing (1 fail, 1 info" in r.output
    assert "NO GPUS FOUND" not in r.output
    assert "this scan lists no GPU" in r.output


def test_a_healthy_fabric_manager_status_alone_says_no_fault_in_the_logs():
    # was "Verdict: NO GPUS FOUND": a log-only import with nothing wrong in it is a clean log, not a missing GPU
    r = CliRunner().invoke(cli, ["import", str(BEYOND / "fabricmanager-active.txt")], env={"COLUMNS": "100"})
    assert "Verdict: no fault in the logs given (fabric manager; no GPU listed)" in r.output
    assert "NO GPUS FOUND" not in r.output


def _check(tmp_path, fixture: str, *args: str):
    scan = tmp_path / "s.json"
    r = CliRunner().invoke(cli, ["import", str(BEYOND / fixture), "--json", str(scan)])
    assert r.exit_code == 0, r.output
    return CliRunner().invoke(cli, ["check", "--from", str(scan), *args], env={"COLUMNS": "100"})


def test_the_gate_fails_a_log_only_scan_with_xid_79(tmp_path):
    # a GPU that fell off the bus (NVSentinel issue 155): the import says FAIL, so must the gate
    r = _check(tmp_path, "dmesg-fallen-off-bus-no-xid.txt")
    assert r.exit_code == 1, r.output
    assert "Gate: FAIL (fail-on fail): GA801; exit 1" in r.output
    assert "GA101, GA102, GA103, GA104, GA105" in r.output and "this scan lists no GPU" in r.output


def test_the_gate_passes_a_clean_log_only_scan_and_lists_the_gpu_rules_as_not_checked(tmp_path):
    r = _check(tmp_path, "fabricmanager-active.txt", "--format", "junit")
    assert r.exit_code == 0, r.output
    suite = ET.fromstring(r.output.split("\n", 1)[1])
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    skipped = {c.get("name").split()[0] for c in suite.iter("testcase") if c.find("skipped") is not None}
    assert {"GA101", "GA301", "GA203"} <= skipped


def test_the_gate_follows_the_findings_in_prometheus(tmp_path):
    r = _check(tmp_path, "dmesg-fallen-off-bus-no-xid.txt", "--format", "prom")
    assert r.exit_code == 1 and "gpuadvisor_check_status 1\n" in r.output


def test_a_scan_with_neither_gpus_nor_logs_is_not_judged_and_still_writes_its_junit(tmp_path):
    from gpuadvisor.facts import Rig

    empty = tmp_path / "empty.json"
    Rig().save(empty)
    out = tmp_path / "r.xml"
    r = CliRunner().invoke(cli, ["check", "--from", str(empty), "--format", "junit", "-o", str(out), "-q"])
    assert r.exit_code == 2
    case = ET.parse(out).getroot().find("testcase")
    assert case.get("name") == "GPUs found" and case.find("error").get("message") == "the scan lists no GPU"


def test_the_no_gpu_advice_is_whole_not_cut_at_its_first_semicolon(tmp_path):
    from gpuadvisor.facts import Rig

    rig = Rig()
    rig.problems.append(
        "no NVIDIA GPU or driver found (NVML found no GPU): the driver is loaded but lists no GPU: check "
        "'nvidia-smi' and 'dmesg' (a GPU that fell off the bus; or a container given no device)"
    )
    scan = tmp_path / "s.json"
    rig.save(scan)
    r = CliRunner().invoke(cli, ["check", "--from", str(scan), "-q"])
    assert r.exit_code == 2
    assert r.output.strip().endswith("(a GPU that fell off the bus; or a container given no device)")
