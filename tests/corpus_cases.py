"""The real-paste corpus in tests/corpus/: its cases, and how a case's reading is compared (see its README)."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "corpus"
NULL = "<null>"  # in an INDEX: the reading must be null (not shown, unreadable), not a value
SEVERITY_ORDER = ["ok", "not-checked", "info", "warn", "fail", "error"]
_KEYS = {"file", "source", "kind", "gpus", "expect", "measured", "codes", "no_codes", "worst", "at_most", "refused"}
_KEYS |= {"known", "note"}


@dataclass
class Case:
    folder: str
    file: str
    source: str
    kind: str
    gpus: int | None = None
    expect: dict[str, Any] = field(default_factory=dict)
    measured: list[dict[str, Any]] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    no_codes: list[str] = field(default_factory=list)
    worst: str | None = None
    at_most: str | None = None
    refused: bool = False
    known: str | None = None

    @property
    def path(self) -> Path:
        return CORPUS / self.folder / self.file

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.file}"


def cases() -> list[Case]:
    out: list[Case] = []
    for index in sorted(CORPUS.glob("*/INDEX.toml")):
        data = tomllib.loads(index.read_text(encoding="utf-8"))
        for row in data.get("case", []):
            unknown = set(row) - _KEYS
            if unknown:
                raise ValueError(f"{index}: {row.get('file')}: unknown keys {sorted(unknown)}")
            row = {k: v for k, v in row.items() if k != "note"}
            out.append(Case(folder=index.parent.name, **row))
    return out


def run_import(paths: list[Path], extra: tuple[str, ...] = ()) -> tuple[int, dict[str, Any] | None]:
    """``gpuadvisor import PATHS --json scan.json`` in this process, as the console script runs it."""
    from gpuadvisor import cli

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scan.json"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = cli._run(["import", *map(str, paths), "--json", str(out), *extra])
        scan = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return rc, scan


def import_paste(tmp_path: Path, text: str) -> dict[str, Any]:
    """``text`` saved as ``paste.txt`` and imported as a user imports it: the scan (the import must succeed)."""
    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8")
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None, f"the paste was refused (exit {rc})"
    return scan


def subset_diffs(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (dicts compared on expected's keys, lists element by element)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where or '.'}: expected an object, got {actual!r:.80}"]
        return [d for k, v in expected.items() for d in subset_diffs(v, actual.get(k, _MISSING), f"{where}.{k}")]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            n = len(actual) if isinstance(actual, list) else actual
            return [f"{where}: expected {len(expected)} items, got {n!r:.80}"]
        return [
            d
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for d in subset_diffs(e, a, f"{where}[{i}]")
        ]
    if actual is _MISSING:
        return [f"{where}: missing (expected {expected!r})"]
    if expected == NULL:
        return [] if actual is None else [f"{where}: {actual!r:.120} is not null"]
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        return (
            [] if abs(actual - expected) <= 1e-4 * max(1.0, abs(expected)) else [f"{where}: {actual!r} != {expected!r}"]
        )
    return [] if actual == expected else [f"{where}: {actual!r:.120} != {expected!r:.120}"]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def reading_diffs(case: Case, rc: int, scan: dict[str, Any] | None) -> list[str]:
    """Every way the tool's reading of ``case`` differs from the hand-written one (empty: read exactly)."""
    if case.refused:
        return [] if rc == 2 else [f"expected a refusal (exit 2), got exit {rc}"]
    if scan is None:
        return [f"refused or failed (exit {rc}), no scan written"]
    diffs: list[str] = []
    if case.gpus is not None and len(scan.get("gpus") or []) != case.gpus:
        diffs.append(f"GPUs read: {len(scan.get('gpus') or [])}, expected {case.gpus}")
    diffs += subset_diffs(case.expect, scan)
    got = scan.get("measurements") or []
    for want in case.measured:
        if not any(not subset_diffs(want, m) for m in got):
            diffs.append(f"no measurement {want}")
    raised = {f["code"] for f in scan.get("findings") or [] if _rank(f["severity"]) >= _rank("warn")}
    diffs += [f"{c} did not fire" for c in case.codes if c not in raised]
    diffs += [f"{c} fired" for c in case.no_codes if c in raised]
    worst = max((f["severity"] for f in scan.get("findings") or []), key=_rank, default="ok")
    worst = "ok" if worst == "not-checked" else worst
    if case.worst is not None and worst != case.worst:
        diffs.append(f"worst severity {worst}, expected {case.worst}")
    if case.at_most is not None and _rank(worst) > _rank(case.at_most):
        diffs.append(f"worst severity {worst}, expected at most {case.at_most}")
    return diffs


def _rank(severity: str) -> int:
    return SEVERITY_ORDER.index(severity) if severity in SEVERITY_ORDER else 0


# -- every real paste, for the cut, header and noise properties (tests/test_import_properties.py) -------------

FIXTURES = Path(__file__).parent / "fixtures" / "import"
_TOOL_COMMENTS = ("# nThread", "# nccl", "# Using", "# Collective", "# Rank", "#  Rank", "# out-of", "#  ", "# Avg")


def fixture_body(path: Path) -> str:
    """A fixture of tests/fixtures/import without the '# source/machine/note' lines its README puts on top."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    k = 0
    while k < len(lines) and lines[k].startswith("# ") and not lines[k].startswith(_TOOL_COMMENTS):
        k += 1
    return "".join(lines[k:])


def real_pastes() -> list[tuple[str, str]]:
    """``(id, text)`` of every real paste the importer is held to: the import fixtures (with the copies of
    /work/shared/samples) and the corpus cases it must read (not those it must refuse)."""
    out = [
        (f"fixtures/{p.relative_to(FIXTURES)}", fixture_body(p))
        for p in sorted(FIXTURES.rglob("*"))
        if p.is_file() and p.name != "README.md"
    ]
    out += [(c.id, c.path.read_text(encoding="utf-8", errors="replace")) for c in cases() if not c.refused]
    return out


def corpus_file(pattern: str) -> Path:
    """The one corpus file that matches ``pattern`` (a glob under tests/corpus)."""
    (path,) = CORPUS.glob(pattern)
    return path


def warn_findings(path: Path) -> list[tuple[str, str, str]]:
    """(code, severity, subject) of every warn or fail finding of one file imported as a user imports it."""
    from gpuadvisor.importers.merge import import_files
    from gpuadvisor.rules import evaluate

    rig = import_files([path])
    return sorted((f.code, f.severity, f.subject) for f in evaluate(rig) if f.severity in ("warn", "fail"))
