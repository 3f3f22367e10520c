"""The house, read from its imports: which package may import which (DESIGN.md's floors), and no cycle.

The graph is read from the source with ``ast`` (every ``import``, also those inside functions, which is where
heavy or late imports live), at package level: ``gpuadvisor.advisor.timing`` counts as ``advisor``; the small
top-level modules (``errors``, ``inputs``, ``text`` ...) count as themselves. ruff's banned-api rule keeps the
render layer apart at lint time (tests/test_layers.py); this test keeps the whole graph.
"""

from __future__ import annotations

import ast
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


def test_the_graph_is_read() -> None:
    # The reader finds the arrows it should: a test that could not fail would prove nothing.
    assert ("commands", "render") in EDGES
    assert ("advisor", "facts") in EDGES
    assert ("rules", "facts") in EDGES


def test_no_package_cycle() -> None:
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in EDGES:
        succ[a].add(b)
    cycles = []
    for a, b in EDGES:
        # b reaches a again?
        seen, todo = {b}, [b]
        while todo:
            n = todo.pop()
            for m in succ[n]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        if a in seen:
            cycles.append(f"{a} -> {b} (e.g. {sorted(EDGES[(a, b)])[0]})")
    assert not cycles, "package cycles: " + "; ".join(sorted(cycles))


def test_only_commands_import_render() -> None:
    allowed = {"commands", "cli", "render"}
    wrong = {a: sorted(m) for a, m in _arrows_into("render").items() if a not in allowed}
    assert not wrong, wrong


def test_nothing_imports_a_command() -> None:
    wrong = {a: sorted(m) for a, m in _arrows_into("commands").items() if a not in ("cli", "completion")}
    assert not wrong, wrong


def test_rules_and_advisor_read_facts_not_sources() -> None:
    """Rules and the advisor judge facts; they never reach into what fills them (probes, importers, bench)."""
    wrong = {
        (a, b): sorted(m)
        for (a, b), m in EDGES.items()
        if a in ("rules", "advisor", "physics") and b in ("probes", "importers", "bench", "collect", "plan", "fleet")
    }
    assert not wrong, wrong


def test_physics_is_a_low_floor() -> None:
    ups = {b for (a, b) in EDGES if a == "physics"}
    assert ups <= {"facts", "catalog", "errors", "inputs"}, ups


def test_bench_and_importers_do_not_import_each_other_both_ways() -> None:
    assert not (("bench", "importers") in EDGES and ("importers", "bench") in EDGES)
    assert ("importers", "bench") not in EDGES, sorted(EDGES[("importers", "bench")])


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


def test_fleet_reads_scans_through_facts() -> None:
    """The fleet builds its nodes through the one scan loader: it imports facts, and keeps no copy of the scan
    file's identity or limits (the scan kind, the size limit, the list of measurement kinds)."""
    assert ("fleet", "facts") in EDGES
    for module, path in MODULES.items():
        if _unit(module) == "fleet":
            strings, assigned = _code_constants(path)
            assert "gpuadvisor-scan" not in strings, module
            assert not assigned & {"SCAN_LIMIT", "SCAN_KIND", "COLLECTIVES", "COPIES"}, module


def test_facts_and_the_advice_model_are_the_floor() -> None:
    """The facts model (and the typed advice it holds) import nothing that reads them."""
    facts_up = {b for (a, b) in EDGES if a == "facts"}
    assert facts_up <= {"errors", "inputs", "output", "advice_model"}, facts_up
    model_up = {b for (a, b) in EDGES if a == "advice_model"}
    assert model_up <= {"errors"}, model_up
