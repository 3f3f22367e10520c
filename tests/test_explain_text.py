"""`gpuadvisor explain`: prose wrapped once at the reader's width (greedy: no line could have taken the next
word), no line over 80 columns but an unbreakable web address, and sources cited as documents, never as the
project's own module names."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from gpuadvisor.commands.rules import explain_lines
from gpuadvisor.rules import all_rules

INTERNAL = re.compile(r"\bgpuadvisor\.[a-z_]+|\b(physics|rules|catalog|advisor)\.[a-z_]+\.[a-z_]+|\bgpuadvisor/\S+")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_explain_wraps_prose_once_at_80(rule) -> None:
    lines = explain_lines(rule, 80)
    for line in lines:
        assert len(line) <= 80 or (len(line.split()) == 1 and "/" in line), line
    for line, nxt in zip(lines, lines[1:], strict=False):
        if not line.strip() or not nxt.strip() or _indent(nxt) < _indent(line) or _indent(line) == 0:
            continue
        if nxt.lstrip().startswith("source: "):  # a threshold's source: its own paragraph
            continue
        # a line followed by more of its paragraph: the next word did not fit (wrapped once, greedily)
        assert len(line) + 1 + len(nxt.split()[0]) > 80, f"{rule.code}: ragged at {line!r} / {nxt!r}"
    text = "\n".join(lines)
    assert not INTERNAL.search(text), f"{rule.code}: {INTERNAL.search(text)}"


def test_explain_prints_the_same_through_the_command() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "explain", "GA601"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert p.returncode == 0
    assert "Each pinned host-to-device and device-to-host measurement against the\n" in p.stdout
    assert "    benchmarker's expected figure (narrowest PCIe hop at its maximum generation\n" in p.stdout
