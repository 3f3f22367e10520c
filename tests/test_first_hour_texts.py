"""Wording a new user reads: help prose within 80 columns, the gate line without a tautology, singular counts,
and plan saying where it wrote its files like every other command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.facts import Rig
from gpuadvisor.render.text.network import render_beyond


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize("command", ["scan", "bench"])
def test_help_fits_80_columns_on_a_wide_terminal(command: str) -> None:
    p = run(command, "--help")
    assert p.returncode == 0
    assert [ln for ln in p.stdout.splitlines() if len(ln) > 80] == []


def test_gate_at_fail_on_fail_says_it_once() -> None:
    p = run("check", "--simulate", str(Path(__file__).parent.parent / "examples" / "planted-dgx-h100.toml"))
    assert p.returncode == 1
    assert p.stdout.rstrip().splitlines()[-1] == "Gate: FAIL (fail-on fail): GA801, GA809; exit 1"
    p = run("check", "--simulate", "dgx-h100", "--fail-on", "warn")
    assert "(fail-on warn: fails on fail, error, warn)" in p.stdout


def test_a_kernel_log_of_one_line_says_line() -> None:
    from gpuadvisor.facts.beyond import KernelLog

    rig = Rig()
    rig.kernel = KernelLog(source="dmesg", lines_read=1, events=[])
    text = "\n".join(render_beyond(rig, lambda s: s))
    assert "kernel log (dmesg, 1 line): no Xid or SXid event" in text
    rig.kernel.lines_read = 2
    assert "(dmesg, 2 lines)" in "\n".join(render_beyond(rig, lambda s: s))


def test_plan_says_where_it_wrote(tmp_path: Path) -> None:
    p = run(
        "plan",
        "preset:dgx-h100",
        "--model",
        "llama-3-8b",
        "--tokens",
        "1e9",
        "--html",
        "p.html",
        "--json",
        "p.json",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert "HTML plan report written to p.html\n" in p.stderr and "plan written to p.json\n" in p.stderr
    assert (tmp_path / "p.html").is_file() and (tmp_path / "p.json").is_file()


def test_check_text_in_a_file_escapes_a_host_names_line_separator(tmp_path: Path) -> None:
    """The text report written with -o goes through the terminal's escaping: a host name carrying U+2028 (a line
    break to editors and str.splitlines) or ESC stays one visible line."""
    out = tmp_path / "c.txt"
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "check", "--simulate", "dgx-h100", "--format", "text", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "GPUADVISOR_HOSTNAME": "h\u2028x\x1b[2Jy"},
    )
    assert p.returncode == 0, p.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("gpuadvisor check: h\\u2028x\\x1b[2Jy (simulated preset dgx-h100)")
    assert "\u2028" not in text and "\x1b" not in text
    assert "written to" in p.stderr and "\u2028" not in p.stderr
