"""Ordering and counting findings: shared by the terminal renderer, the HTML report and the check command."""
from __future__ import annotations

from collections.abc import Iterable

from gpuadvisor.facts import Finding

# Worst first. "error" is a rule that crashed (we do not know the verdict: worse than a warning, below a
# failure); "not-checked" is a rule whose facts were missing.
SEVERITY_ORDER: tuple[str, ...] = ("fail", "error", "warn", "info", "not-checked")
_RANK = {s: i for i, s in enumerate(SEVERITY_ORDER)}


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, len(SEVERITY_ORDER))


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Worst first; then by rule code, then by the GPUs concerned."""
    return sorted(findings, key=lambda f: (severity_rank(f.severity), f.code, f.gpus, f.subject or ""))


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Number of findings per severity, every severity present (zeros included), in SEVERITY_ORDER."""
    out = dict.fromkeys(SEVERITY_ORDER, 0)
    for f in findings:
        out[f.severity] = out.get(f.severity, 0) + 1
    return out


def verdict(findings: Iterable[Finding]) -> tuple[str, dict[str, int]]:
    """("failing" | "warnings" | "healthy", counts per severity).

    failing: at least one fail. warnings: no fail but a warning, or a rule that crashed (its verdict is
    unknown). healthy: neither. info and not-checked findings do not change the verdict.
    """
    c = counts(findings)
    if c["fail"]:
        return "failing", c
    if c["warn"] or c["error"]:
        return "warnings", c
    return "healthy", c
