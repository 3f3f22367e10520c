"""The layers hold: ruff's banned-api rule (TID251, pyproject.toml) fails a domain module that imports the render
layer or the commands, and passes the same import in a render or command module; and the render layer, which
the rule lets import itself, imports neither the commands nor the command line."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOMAIN = ("advisor", "bench", "rules", "plan", "probes", "importers", "physics", "catalog")


def _ruff(filename: str, source: str) -> str:
    """ruff's findings for ``source`` as if it were the file ``filename`` of this project (its config applies)."""
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "--stdin-filename"]
        + [filename, "-"],
        cwd=ROOT,
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode in (0, 1), out.stderr
    return out.stdout


@pytest.mark.parametrize("package", DOMAIN)
@pytest.mark.parametrize(
    "line",
    [
        "import gpuadvisor.render",
        "from gpuadvisor import render",
        "from gpuadvisor.render.text.width import fit_line",
        "from gpuadvisor.render.html import environment",
        "from gpuadvisor.commands.scan import scan",
        "from gpuadvisor.cli import main",
    ],
)
def test_a_domain_module_may_not_import_render_or_the_commands(package, line):
    found = _ruff(f"gpuadvisor/{package}/x.py", line + "\n")
    assert "TID251" in found, found


@pytest.mark.parametrize("where", ["gpuadvisor/render/x.py", "gpuadvisor/render/text/x.py", "gpuadvisor/commands/x.py"])
def test_render_and_the_commands_may_import_render(where):
    found = _ruff(where, "from gpuadvisor.render.text.width import fit_line\n\nprint(fit_line)\n")
    assert "TID251" not in found, found


def test_no_render_module_imports_the_commands():
    bad = []
    for path in sorted((ROOT / "gpuadvisor" / "render").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            bad += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n.split(".")[:2] in (["gpuadvisor", "commands"], ["gpuadvisor", "cli"])
            ]
    assert bad == []


def test_the_package_as_committed_passes_the_rule():
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "TID251", "gpuadvisor"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
