"""Every command's text output fits the terminal: at COLUMNS=80 (a pipe, a CI log) and 60, no line of any
command's text is wider, whatever it prints (tables split or wrapped, commands continued, code re-laid)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuadvisor.cli import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = FIXTURES / "import" / "samples"


def _run(args: list[str], columns: int, cwd: Path | None = None) -> str:
    r = CliRunner().invoke(cli, args, env={"COLUMNS": str(columns)})
    assert r.exit_code in (0, 1), (args, r.output)
    return r.output


def _scan(tmp_path: Path) -> Path:
    out = tmp_path / "s.json"
    _run(["scan", "--simulate", "4x4090-pcie", "--json", str(out)], 200)
    return out


COMMANDS = [
    ["presets"],
    ["rules"],
    ["rules", "--area", "pcie"],
    ["scan", "--simulate", "dgx-h100"],
    ["scan", "--simulate", "4x4090-pcie"],
    ["scan", "--simulate", "dgx2-v100"],
    ["-v", "scan", "--simulate", "dgx-a100"],
    ["check", "--simulate", "4x4090-pcie"],
    ["check", "--simulate", "dgx-h100"],
    ["advise", "--simulate", "dgx-h100", "--model", "llama-3-70b"],
    ["advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--explain"],
    ["advise", "--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--finetune", "qlora", "--explain"],
    ["advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--task", "inference", "--explain"],
    ["plan", "--model", "llama-3-8b"],
    ["plan", "--model", "llama-3-70b", "--task", "inference"],
]


def _widest(text: str) -> tuple[int, str]:
    """The widest line, but a web address alone on its line (kept whole so it can be followed)."""
    return max(((len(ln), ln) for ln in text.splitlines() if not (len(ln.split()) == 1 and "/" in ln)), default=(0, ""))


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a)[:50])
@pytest.mark.parametrize("columns", [80, 60])
def test_command_fits(args, columns):
    width, line = _widest(_run(args, columns))
    assert width <= columns, f"{width} > {columns}: {line!r}"


@pytest.mark.parametrize("columns", [80, 60])
def test_explain_every_rule_fits(columns):
    from gpuadvisor.rules import all_rules

    for r in all_rules():
        width, line = _widest(_run(["explain", r.code], columns))
        assert width <= columns, (r.code, line)


@pytest.mark.parametrize("columns", [80, 60])
def test_saved_scan_views_fit(tmp_path, columns):
    scan = _scan(tmp_path)
    for args in (
        ["report", str(scan), "--format", "text"],
        ["scan", "--from", str(scan)],
        ["check", "--from", str(scan)],
    ):
        width, line = _widest(_run(args, columns))
        assert width <= columns, (args, line)


@pytest.mark.parametrize("columns", [80, 60])
def test_measured_and_imported_views_fit(columns):
    """A real H100 scan with its measurements (the bench tables), and imports of real pastes of each kind."""
    views = [
        ["report", str(FIXTURES / "h100-vm" / "scan-bench.json"), "--format", "text"],
        ["scan", "--from", str(FIXTURES / "h100-vm" / "scan-v2-bench.json")],
    ]
    for sample in sorted(SAMPLES.glob("*.txt")):
        views.append(["import", str(sample)])
    for args in views:
        width, line = _widest(_run(args, columns))
        assert width <= columns, (args, line)


def test_one_pcie_link_form_for_every_view():
    from gpuadvisor.text import pcie_link

    assert pcie_link(4, 16) == "Gen4 x16"
    assert pcie_link(None, 8) == "Gen? x8"
    assert pcie_link(5, None, "-") == "Gen5 x-"
