"""The house, read from its imports: which package may import which (DESIGN.md's floors), and no cycle.

The graph is read from the source with ``ast`` (every ``import``, also those inside functions, which is where
heavy or late imports live), at package level: ``gpuadvisor.advisor.timing`` counts as ``advisor``; the small
top-level modules (``errors``, ``inputs``, ``text`` ...) count as themselves. ruff's banned-api rule keeps the
render layer apart at lint time (tests/test_layers.py); this test keeps the whole graph.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = {
    "gpuadvisor": ROOT / "gpuadvisor",
    "gpuadvisor.probes": ROOT / "probes",
    "gpuadvisor.reports": ROOT / "reports",
}
DOMAIN = ("advisor", "bench", "rules", "fleet", "plan", "probes", "importers", "physics", "catalog", "facts")


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, base in TREES.items():
        for p in base.rglob("*.py"):
            parts = [x for x in p.relative_to(base).with_suffix("").parts if x != "__init__"]
            out[".".join([pkg, *parts])] = p
    return out


MODULES = _modules()


def _unit(dotted: str) -> str | None:
    """The floor a module belongs to: its first package below gpuadvisor, or the top-level module itself."""
    parts = dotted.split(".")
    if parts[0] != "gpuadvisor" or len(parts) < 2:
        return None
    return parts[1]


def _imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES)
    return found


def _graph() -> dict[tuple[str, str], set[str]]:
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        a = _unit(module)
        for target in _imports(module, path):
            b = _unit(target)
            if a and b and a != b:
                edges[(a, b)].add(module)
    return edges


EDGES = _graph()


def _arrows_into(target: str) -> dict[str, set[str]]:
    return {a: mods for (a, b), mods in EDGES.items() if b == target}


def _listed(arrows: dict[tuple[str, str], set[str]]) -> list[str]:
    """One line per arrow, naming one module that draws it."""
    return [f"{a} -> {b} (e.g. {sorted(mods)[0]})" for (a, b), mods in sorted(arrows.items())]


# -- the arrows that must not exist: each a list of lines, empty when the house holds (scripts/house.py prints them)


def cycles() -> list[str]:
    """Every arrow that closes a package cycle (its target reaches its source again)."""
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in EDGES:
        succ[a].add(b)
    out = {}
    for a, b in EDGES:
        seen, todo = {b}, [b]
        while todo:
            n = todo.pop()
            for m in succ[n]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        if a in seen:
            out[(a, b)] = EDGES[(a, b)]
    return _listed(out)


def into_render() -> list[str]:
    """Arrows into render from anything but the commands, the command line and render itself."""
    return _listed({(a, "render"): m for a, m in _arrows_into("render").items() if a not in ("commands", "cli")})


def into_commands() -> list[str]:
    """Arrows into the commands from anything but the command line (and shell completion)."""
    return _listed({(a, "commands"): m for a, m in _arrows_into("commands").items() if a not in ("cli", "completion")})


def judges_reading_sources() -> list[str]:
    """Rules, the advisor and the physics reaching into what fills the facts (probes, importers, bench) or up."""
    sources = ("probes", "importers", "bench", "collect", "plan", "fleet")
    return _listed({k: m for k, m in EDGES.items() if k[0] in ("rules", "advisor", "physics") and k[1] in sources})


def physics_above_its_floor() -> list[str]:
    allowed = {"facts", "catalog", "errors", "inputs"}
    return _listed({k: m for k, m in EDGES.items() if k[0] == "physics" and k[1] not in allowed})


def importers_into_bench() -> list[str]:
    return _listed({k: m for k, m in EDGES.items() if k == ("importers", "bench")})


def floor_reaching_up() -> list[str]:
    """The facts model and the typed advice importing anything that reads them."""
    floors = {"facts": {"errors", "inputs", "output", "advice_model"}, "advice_model": {"errors"}}
    return _listed({k: m for k, m in EDGES.items() if k[0] in floors and k[1] not in floors[k[0]]})


FORBIDDEN = {
    "package cycles": cycles,
    "a package other than the commands importing render": into_render,
    "a package other than the command line importing the commands": into_commands,
    "rules, advisor or physics reading a source of facts": judges_reading_sources,
    "physics above its floor": physics_above_its_floor,
    "importers -> bench": importers_into_bench,
    "facts or the advice model reaching up": floor_reaching_up,
}


def test_the_graph_is_read() -> None:
    # The reader finds the arrows it should: a test that could not fail would prove nothing.
    assert ("commands", "render") in EDGES
    assert ("advisor", "facts") in EDGES
    assert ("rules", "facts") in EDGES


def test_no_package_cycle() -> None:
    found = cycles()
    assert not found, "package cycles: " + "; ".join(found)


def test_only_commands_import_render() -> None:
    assert not into_render()


def test_nothing_imports_a_command() -> None:
    assert not into_commands()


def test_rules_and_advisor_read_facts_not_sources() -> None:
    """Rules and the advisor judge facts; they never reach into what fills them (probes, importers, bench)."""
    assert not judges_reading_sources()


def test_physics_is_a_low_floor() -> None:
    assert not physics_above_its_floor()


def test_bench_and_importers_do_not_import_each_other_both_ways() -> None:
    assert not (("bench", "importers") in EDGES and ("importers", "bench") in EDGES)
    assert not importers_into_bench()


def _code_constants(path: Path) -> tuple[set[str], set[str]]:
    """(string constants in code, not docstrings; names assigned at module level) of one module."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    strings = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    }
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return strings, assigned


def fleet_beside_facts() -> list[str]:
    """The fleet not reading through the one scan loader: no arrow into facts, or a fleet module keeping a copy
    of the scan file's identity or limits (the scan kind, the size limit, the list of measurement kinds)."""
    out = [] if ("fleet", "facts") in EDGES else ["fleet does not import facts"]
    for module, path in sorted(MODULES.items()):
        if _unit(module) == "fleet":
            strings, assigned = _code_constants(path)
            out += [f"{module} spells the scan kind"] if "gpuadvisor-scan" in strings else []
            out += [
                f"{module} keeps {n}" for n in sorted(assigned & {"SCAN_LIMIT", "SCAN_KIND", "COLLECTIVES", "COPIES"})
            ]
    return out


FORBIDDEN["the fleet reading scans beside facts"] = fleet_beside_facts


def test_fleet_reads_scans_through_facts() -> None:
    """The fleet builds its nodes through the one scan loader: it imports facts, and keeps no copy of the scan
    file's identity or limits."""
    assert not fleet_beside_facts()


def test_facts_and_the_advice_model_are_the_floor() -> None:
    """The facts model (and the typed advice it holds) import nothing that reads them."""
    assert not floor_reaching_up()


def lint_tree_with(module: str, source: str) -> subprocess.CompletedProcess[str]:
    """``ruff check gpuadvisor`` (the check `make lint`, which CI runs, makes) over a temporary tree: this
    project's pyproject.toml and the one module ``module`` (a path under gpuadvisor/) holding ``source``."""
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-lint-") as tmp:
        base = Path(tmp)
        (base / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
        path = base / module
        path.parent.mkdir(parents=True)
        path.write_text(source)
        return subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "gpuadvisor"],
            cwd=base,
            capture_output=True,
            text=True,
            timeout=120,
        )


RENDER_IMPORT = "from gpuadvisor.render.text import width\n\nprint(width)\n"


def test_the_lint_ci_runs_fails_on_a_domain_module_importing_render() -> None:
    """`make lint` (which CI runs) fails when a domain module imports render: ruff check, with this project's
    pyproject.toml, over a tree holding one such module, reports TID251 on its line and exits non-zero."""
    out = lint_tree_with("gpuadvisor/rules/violation.py", RENDER_IMPORT)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "gpuadvisor/rules/violation.py:1:1: TID251" in out.stdout, out.stdout


def test_no_product_module_is_over_600_lines() -> None:
    """Modules stay small and named for what they hold: a module past 600 lines is split (DESIGN.md)."""
    over = {str(p.relative_to(ROOT)): n for p in _modules().values() if (n := len(p.read_text().splitlines())) > 600}
    assert over == {}


def test_the_lint_ci_runs_fails_on_a_function_over_complexity_25() -> None:
    """`make lint` fails on a function past ruff's C901 complexity 25 (pyproject.toml: max-complexity)."""
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(26))
    out = lint_tree_with("gpuadvisor/rules/tangle.py", f"def tangled(x: int) -> int:\n{branches}    return -1\n")
    assert out.returncode == 1 and "gpuadvisor/rules/tangle.py:1:5: C901" in out.stdout, out.stdout + out.stderr
