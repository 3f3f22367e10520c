"""The severities of a finding, one vocabulary for the node rules and the fleet view, worst first.

``fail``: act on it; ``error``: the rule itself crashed; ``warn``; ``info``; ``not-checked``: the facts the
rule needs were not there. A rule defaults to, a policy sets and a gate fails on one of ``GATES``.
"""

from __future__ import annotations

FAIL = "fail"
ERROR = "error"
WARN = "warn"
INFO = "info"
NOT_CHECKED = "not-checked"

ORDER: tuple[str, ...] = (FAIL, ERROR, WARN, INFO, NOT_CHECKED)  # worst first
RANK: dict[str, int] = {s: i for i, s in enumerate(ORDER)}
GATES: tuple[str, ...] = (INFO, WARN, FAIL)  # what a rule defaults to, a policy sets and --fail-on takes


def rank(severity: str) -> int:
    """Its place in ``ORDER`` (0 = worst); an unknown severity sorts after every known one."""
    return RANK.get(severity, len(ORDER))
