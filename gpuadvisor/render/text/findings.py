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

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.render.text.width import term_width
from gpuadvisor.rules.summary import NO_GPUS, one_line, rig_verdict, sort_findings, verdict, worst

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


def _wrap(label: str, text: str, width: int = WIDTH) -> list[str]:
    return textwrap.wrap(
        f"{label}{text}",
        width=width,
        initial_indent=INDENT,
        subsequent_indent=INDENT + " " * len(label),
        break_on_hyphens=False,
        break_long_words=False,
    ) or [INDENT + label]


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) >= 1e6 else f"{value:g}"
    return str(value)


def _one(f: Finding, color: bool, width: int = WIDTH) -> list[str]:
    head = f"{LABEL.get(f.severity, f.severity.upper()):<6} {f.code} {f.name}"
    if f.subject:
        head += f"  {f.subject}"
    heads = [head] if len(head) <= width else textwrap.wrap(head, width, subsequent_indent=INDENT)
    lines = [_paint(ln, f.severity, color) for ln in heads]
    lines += _wrap("", f.message, width)
    if f.expected is not None and f.severity in ("fail", "warn", "info"):
        exp = _fmt(f.expected) + (f" ({f.expected_source})" if f.expected_source else "")
        lines += [_dim(ln, color) for ln in _wrap("expected: ", exp, width)]
    if f.fix:
        lines += _wrap("fix: ", f.fix, width)
    return lines


def render_findings(
    findings: Iterable[Finding], *, color: bool | None = None, rig: Rig | None = None, width: int | None = None
) -> str:
    """The findings, worst first, then the not-checked ones grouped by reason, then the verdict line and the
    worst findings it rests on, one line each. With ``rig``: a rig without GPUs gets "no GPUs found" and what to
    do instead (the rules had nothing to judge). Every line fits ``width`` (default: the terminal's)."""
    width = width or term_width()
    if color is None:
        color = auto_color()
    ordered = sort_findings(findings)
    shown = [f for f in ordered if f.severity != "not-checked"]
    skipped = [f for f in ordered if f.severity == "not-checked"]
    out: list[str] = []
    for f in shown:
        out += _one(f, color, min(width, WIDTH))
    if skipped:
        if out:
            out.append("")
        out += _not_checked(skipped, color, min(width, WIDTH))
    no_gpus = rig_verdict(rig) if rig is not None and not rig.gpus else None
    clean_logs = no_gpus is not None and no_gpus.state == "healthy" and bool(no_gpus.why)
    if no_gpus is not None and no_gpus.state != NO_GPUS and not clean_logs:  # a log alone: judged, and it says so
        out += ["", f"(this scan lists no GPU: {no_gpus.why}; the verdict rests on what it does hold)"]
    if out:
        out.append("")
    if clean_logs and no_gpus is not None:  # logs without GPUs, nothing wrong in them: say so, not "no GPUs"
        out += _wrap_to(f"Verdict: {no_gpus.why}", width, "")
    elif no_gpus is not None and no_gpus.state == NO_GPUS:
        out.append(_paint(f"Verdict: NO GPUS FOUND ({no_gpus.why})", "fail", color))
        out += _wrap_to(f"what to do: {no_gpus.todo}", width, "  ") if no_gpus.todo else []
    else:
        out += _verdict(ordered, color, width)
    return "\n".join(out) + "\n"


def _not_checked(skipped: list[Finding], color: bool, width: int) -> list[str]:
    """The not-checked findings grouped by their reason, one wrapped line per reason."""
    out = [_paint("Not checked (facts missing):", "not-checked", color)]
    by_reason: dict[str, list[Finding]] = defaultdict(list)
    for f in skipped:
        by_reason[f.message].append(f)
    for reason, fs in by_reason.items():
        codes = ", ".join(dict.fromkeys(f.code for f in fs))
        gpus = sorted({g for f in fs for g in f.gpus})
        where = f" on GPU {', '.join(str(g) for g in gpus)}" if gpus else ""
        out += [_dim(ln, color) for ln in _wrap("", f"{codes}{where}: {reason}", width)]
    return out


def _verdict(ordered: list[Finding], color: bool, width: int) -> list[str]:
    """The verdict line, how much of it rests on rules that could not run, and the worst findings it rests on."""
    word, c = verdict(ordered)
    parts = [
        f"{c[s]} {name}"
        for s, name in (
            ("fail", "fail"),
            ("error", "error"),
            ("warn", "warn"),
            ("info", "info"),
            ("not-checked", "not checked"),
        )
        if c[s]
    ]
    if word == "healthy" and c["not-checked"]:
        word = "healthy as far as checked"  # rules without their facts did not pass: they did not run
    summary = f"Verdict: {word}" + (f" ({', '.join(parts)})" if parts else " (no findings)")
    sev = {"failing": "fail", "warnings": "warn"}.get(word)
    out = [_paint(summary, sev, color) if sev else summary]
    unchecked = {f.code for f in ordered if f.severity == "not-checked"}
    if word == "healthy as far as checked":
        from gpuadvisor.rules.registry import REGISTRY

        total = len(REGISTRY.all())
        if 2 * len(unchecked) > total:  # as the HTML verdict says it: not a clean bill of health
            out += _wrap_to(
                f"{len(unchecked)} of the {total} rules could not be checked: this scan does not hold their "
                "facts, so this verdict covers only what it shows.",
                width,
                "  ",
            )
    top, more = worst(ordered)
    for f in top:
        out += _wrap_to(f"{LABEL.get(f.severity, f.severity.upper())} {one_line(f)}", width, "  ")
    if more:
        out.append(f"  ... and {more} more above")
    return out


def _wrap_to(text: str, width: int, indent: str) -> list[str]:
    return (
        textwrap.wrap(
            text, width=width, initial_indent=indent, subsequent_indent=indent + "     ", break_on_hyphens=False
        )
        or []
    )
