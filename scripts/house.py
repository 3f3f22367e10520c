"""The house's numbers in one run: product modules over 600 lines, functions over ruff's C901 complexity 25, the
duplicates tool's pairs in product code, the import arrows that must not exist, and whether the banned-api rule
makes the lint CI runs fail on a domain module that imports render.

    .venv/bin/python scripts/house.py            # print them; exit 1 when any bar is missed

The import arrows are read by tests/test_import_graph.py's functions (the same ones the tests assert on); the
pair count needs the ``duplicates`` command on PATH (said, and not counted, when it is not there).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("gpuadvisor", "probes", "reports")  # what installs as the gpuadvisor package
MAX_LINES = 600
MAX_COMPLEXITY = 25
MAX_PAIRS = 26  # a third of the 79 pairs in product code when the clean-up was filed


def long_modules() -> list[tuple[int, str]]:
    found = []
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                found.append((lines, str(path.relative_to(ROOT))))
    return sorted(found, reverse=True)


def complex_functions() -> list[str]:
    config = f"lint.mccabe.max-complexity = {MAX_COMPLEXITY}"
    cmd = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "--select", "C901"]
    out = subprocess.run([*cmd, "--config", config, *PRODUCT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return [ln for ln in out.stdout.splitlines() if " C901 " in ln]


def duplicate_pairs() -> tuple[int | None, list[str]]:
    """(pairs in gpuadvisor/, the tool's rows), or (None, [why]) without the tool."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None, ["the duplicates command is not on PATH: pairs not counted"]
    out = subprocess.run(
        [tool, "--repo", "gpuadvisor", "--most", "200", "--seconds", "120"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = out.stdout.splitlines()
    head = lines[0] if lines else ""
    m = re.match(r"(\d+) pairs", head)
    count = int(m.group(1)) if m else (0 if head.startswith("no duplicates") else None)
    rows = [ln for ln in lines[1:] if ln.startswith(("D", "incomplete", "left out", "("))]
    return count, [head, *rows]


def _import_graph() -> Any:
    """tests/test_import_graph.py as a module: its graph, its checks of the arrows, its lint of a temporary tree."""
    spec = importlib.util.spec_from_file_location("house_import_graph", ROOT / "tests" / "test_import_graph.py")
    assert spec and spec.loader
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    return graph


def forbidden_arrows() -> dict[str, list[str]]:
    return {what: check() for what, check in _import_graph().FORBIDDEN.items()}


def banned_api_bites() -> tuple[bool, str]:
    """Does ``ruff check gpuadvisor`` (the lint CI runs), with this project's config, fail on a rules module that
    imports render? Tried on a temporary tree holding that one module."""
    graph = _import_graph()
    out = graph.lint_tree_with("gpuadvisor/rules/violation.py", graph.RENDER_IMPORT)
    hit = next((ln for ln in out.stdout.splitlines() if "TID251" in ln), "")
    return out.returncode == 1 and bool(hit), hit or (out.stdout + out.stderr).strip()


def main() -> int:
    ok = True
    modules = long_modules()
    print(f"product modules over {MAX_LINES} lines: {len(modules)}")
    for lines, path in modules:
        print(f"  {lines:5} {path}")
    ok &= not modules

    funcs = complex_functions()
    print(f"functions over C901 complexity {MAX_COMPLEXITY} (ruff): {len(funcs)}")
    for ln in funcs:
        print(f"  {ln}")
    ok &= not funcs

    count, rows = duplicate_pairs()
    print(f"duplicates pairs in gpuadvisor/: {'not counted' if count is None else count} (bar: at most {MAX_PAIRS})")
    for ln in rows:
        print(f"  {ln}")
    ok &= count is not None and count <= MAX_PAIRS

    arrows = forbidden_arrows()
    total = sum(len(v) for v in arrows.values())
    print(f"import arrows that must not exist: {total}")
    for what, found in arrows.items():
        print(f"  {what}: {len(found)}")
        for ln in found:
            print(f"    {ln}")
    ok &= total == 0

    bites, line = banned_api_bites()
    print(f"banned-api rule fails the lint on a domain module importing render: {'yes' if bites else 'NO'}")
    print(f"  {line}")
    ok &= bites
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
