"""Every kind of finding the fleet view or a node can raise, with its default severity: the one table that the
gate (``gate``), ``fleet --help`` and the README's list are made from.

A finding answers to its kind, to its sub-kind where it has one (an outlier is a ``straggler`` or a
``one-figure`` reading; a node's own finding is ``check-fail`` or ``check-warn``) and, for a node's own
findings, to its rule code (``GA812``). The policy's ``[fleet]`` table names any of them in ``fail`` (promote to
fail) or ``warn`` (demote a fail to a warning).
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Kind(NamedTuple):
    name: str
    default: str  # the severity it has unless a policy says otherwise
    what: str


KINDS: tuple[Kind, ...] = (
    Kind("lost", "fail", "a node shows fewer GPUs, active NVLinks or NICs than its group's design"),
    Kind("failed", "fail", "the scan could not run or be read (a failure record, a bad file)"),
    Kind("missing", "fail", "a node of --expect / --expect-file without a scan"),
    Kind("stale", "fail", "a scan older than --max-age, or with no creation time: not compared"),
    Kind("check-fail", "fail", "the node's own fail findings (or name the rule code, e.g. GA104)"),
    Kind("check-warn", "warn", "the node's own warn findings (or name the rule code, e.g. GA812)"),
    Kind("straggler", "warn", "a node slower than its group across a family's figures (fails from 25%)"),
    Kind("one-figure", "warn", "one figure out where the rest of its family is not: re-measure"),
    Kind("outlier", "warn", "straggler and one-figure together"),
    Kind("slow-port", "warn", "an RDMA port trained below the rate the same port runs on its siblings"),
    Kind("drift", "warn", "a node whose driver, CUDA, NCCL, modes or PCIe width differ from its group's"),
    Kind("version-split", "warn", "a group split between two versions (a rolling upgrade): one line"),
    Kind("duplicate", "warn", "two or more scans claim one host name"),
    Kind("pair", "warn", "a node pair (bench --pairs) slower than the others, or all pairs of a node"),
    Kind("multinode", "info", "a measurement whose ranks ran on several hosts"),
    Kind("changed", "warn", "--baseline: a node's figures changed beyond the fleet's own change"),
    Kind("unexpected", "info", "a scan from a node not in the expected node list"),
    Kind("alone", "info", "the only node of its hardware shape: nothing to compare it with"),
)
NAMES = tuple(k.name for k in KINDS)
RULE_CODE = re.compile(r"[A-Z]{2}\d{3}")  # a node rule's code: GA104, GA812


def names_of(kind: str, code: str, subject: str | None, severity: str) -> set[str]:
    """The names a finding answers to in the policy: its kind, its sub-kind, and a node rule's code."""
    out = {kind}
    if code:
        out.add(code)
    if kind == "check":
        out.add("check-fail" if severity == "fail" else "check-warn")
        if subject and RULE_CODE.fullmatch(subject):
            out.add(subject)
    return out


def valid(name: str) -> bool:
    return name in NAMES or bool(RULE_CODE.fullmatch(name))


def help_lines(width: int = 76) -> list[str]:
    """The table as lines for ``fleet --help`` and the README: name, default severity, what it is."""
    col = max(len(k.name) for k in KINDS) + 2
    out = []
    for k in KINDS:
        head = f"  {k.name:<{col}}{k.default:<5} "
        words, line = k.what.split(), head
        for w in words:
            if len(line) + len(w) + 1 > width and line.strip() != head.strip():
                out.append(line.rstrip())
                line = " " * len(head)
            line += w + " "
        out.append(line.rstrip())
    return out
