"""Findings as text for a terminal: worst first, each with its evidence and its fix.

Colour only on a terminal and never when NO_COLOR is set (https://no-color.org). Not-checked findings are
grouped by reason at the end, so a scan without measurements does not bury the real findings.
"""
from __future__ import annotations

import os
import sys
import textwrap
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from gpuadvisor.facts import Finding
from gpuadvisor.rules.summary import sort_findings, verdict

__all__ = ["render_findings", "verdict"]

WIDTH = 100
INDENT = " " * 7
LABEL = {"fail": "FAIL", "error": "ERROR", "warn": "WARN", "info": "INFO", "not-checked": "SKIP"}
COLOR = {"fail": "1;31", "error": "1;35", "warn": "33", "info": "36", "not-checked": "2"}


def auto_color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _paint(text: str, sev: str, color: bool) -> str:
    return f"\033[{COLOR[sev]}m{text}\033[0m" if color and sev in COLOR else text


def _dim(text: str, color: bool) -> str:
    return f"\033[2m{text}\033[0m" if color else text


def _wrap(label: str, text: str) -> list[str]:
    return textwrap.wrap(
        f"{label}{text}", width=WIDTH, initial_indent=INDENT, subsequent_indent=INDENT + " " * len(label),
        break_on_hyphens=False, break_long_words=False,
    ) or [INDENT + label]


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) >= 1e6 else f"{value:g}"
    return str(value)


def _one(f: Finding, color: bool) -> list[str]:
    head = f"{LABEL.get(f.severity, f.severity.upper()):<6} {f.code} {f.name}"
    if f.subject:
        head += f"  {f.subject}"
    lines = [_paint(head, f.severity, color)]
    lines += _wrap("", f.message)
    if f.expected is not None and f.severity in ("fail", "warn", "info"):
        exp = _fmt(f.expected) + (f" ({f.expected_source})" if f.expected_source else "")
        lines += [_dim(ln, color) for ln in _wrap("expected: ", exp)]
    if f.fix:
        lines += _wrap("fix: ", f.fix)
    return lines


def render_findings(findings: Iterable[Finding], *, color: bool | None = None) -> str:
    """The findings, worst first, then the not-checked ones grouped by reason, then the verdict line."""
    if color is None:
        color = auto_color()
    ordered = sort_findings(findings)
    shown = [f for f in ordered if f.severity != "not-checked"]
    skipped = [f for f in ordered if f.severity == "not-checked"]
    out: list[str] = []
    for f in shown:
        out += _one(f, color)
    if skipped:
        if out:
            out.append("")
        out.append(_paint("Not checked (facts missing):", "not-checked", color))
        by_reason: dict[str, list[Finding]] = defaultdict(list)
        for f in skipped:
            by_reason[f.message].append(f)
        for reason, fs in by_reason.items():
            codes = ", ".join(dict.fromkeys(f.code for f in fs))
            gpus = sorted({g for f in fs for g in f.gpus})
            where = f" on GPU {', '.join(str(g) for g in gpus)}" if gpus else ""
            out += [_dim(ln, color) for ln in _wrap("", f"{codes}{where}: {reason}")]
    word, c = verdict(ordered)
    parts = [f"{c[s]} {name}" for s, name in (("fail", "fail"), ("error", "error"), ("warn", "warn"), ("info", "info"), ("not-checked", "not checked")) if c[s]]
    if word == "healthy" and c["not-checked"]:
        word = "healthy as far as checked"  # rules without their facts did not pass: they did not run
    summary = f"Verdict: {word}" + (f" ({', '.join(parts)})" if parts else " (no findings)")
    sev = {"failing": "fail", "warnings": "warn"}.get(word)
    if out:
        out.append("")
    out.append(_paint(summary, sev, color) if sev else summary)
    return "\n".join(out) + "\n"
