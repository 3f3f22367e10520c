"""A paste that lists no GPU but holds faults (a kernel log with a hardware Xid) is judged on what it holds: the
verdict is failing, not hidden behind "no GPUs found"; a paste with nothing wrong in it still says no GPU."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpuadvisor.cli import cli

BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def test_a_kernel_log_with_a_hardware_xid_is_failing():
    r = CliRunner().invoke(cli, ["import", str(BEYOND / "dmesg-T-xid13-xid109.txt")], env={"COLUMNS": "100"})
    assert "Verdict: failing (1 fail, 1 info" in r.output
    assert "NO GPUS FOUND" not in r.output
    assert "this scan lists no GPU" in r.output


def test_a_healthy_fabric_manager_status_alone_says_no_gpu():
    r = CliRunner().invoke(cli, ["import", str(BEYOND / "fabricmanager-active.txt")], env={"COLUMNS": "100"})
    assert "Verdict: NO GPUS FOUND" in r.output
