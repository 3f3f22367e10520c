"""The fleet gate: which findings fail the run (exit 1), set by defaults and the ``[fleet]`` table of the
``--policy`` file ``check`` reads.

Defaults (``kinds.KINDS``, the default column): lost hardware, a failed, missing or stale scan and the node's own
fail findings fail; a node 25 % or more slower than its group in a family fails. Any kind, sub-kind or node rule
code can be promoted to fail or demoted to a warning::

    [fleet]
    fail = ["slow-port", "GA812", "check-warn"]   # these fail too
    warn = ["stale"]                               # these only warn
    straggler_fail = 0.10                          # a node this much slower than its group in a family fails
    families = ["all_reduce busbw"]                # any called slowdown in these families fails

A name in both lists is bad input. ``--fail-on warn`` still fails on every warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.fleet import kinds
from gpuadvisor.fleet.model import FleetFinding

KEYS = ("fail", "warn", "straggler_fail", "families")


@dataclass
class Gate:
    fail: list[str] = field(default_factory=list)
    warn: list[str] = field(default_factory=list)
    straggler_fail: float = 0.25
    families: list[str] = field(default_factory=list)
    origin: str = "defaults"

    def promote(self, f: FleetFinding) -> FleetFinding:
        """The finding with its severity raised to fail, or lowered to warn, where the policy says so."""
        names = kinds.names_of(f.kind, f.code, f.subject, f.severity)
        if f.severity == "fail":
            if names & set(self.warn):
                f.severity = "warn"
                f.message += f" [warns by policy {self.origin}]"
            return f
        slow = -(f.deviation or 0.0)
        straggler = f.kind == "outlier" and f.code != "one-figure"
        if names & set(self.fail) or (straggler and (slow >= self.straggler_fail or f.subject in self.families)):
            f.severity = "fail"
            f.message += f" [fails by policy {self.origin}]"
        return f


def _names(t: dict[str, Any], key: str, origin: str) -> list[str]:
    v = t.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) and kinds.valid(x) for x in v):
        raise InputError(
            f"{origin}: fleet.{key} must be a list of finding kinds ({', '.join(kinds.NAMES)}) or node rule codes "
            "(GA812); see 'gpuadvisor fleet --help'"
        )
    return list(v)


def from_policy(data: dict[str, Any], origin: str) -> Gate:
    t = data.get("fleet", {})
    if not isinstance(t, dict):
        raise InputError(f"{origin}: 'fleet' must be a table ({', '.join(KEYS)})")
    unknown = [k for k in t if k not in KEYS]
    if unknown:
        raise InputError(f"{origin}: unknown key fleet.{unknown[0]} (allowed: {', '.join(KEYS)})")
    g = Gate(origin=origin)
    g.fail = _names(t, "fail", origin)
    g.warn = _names(t, "warn", origin)
    both = sorted(set(g.fail) & set(g.warn))
    if both:
        raise InputError(f"{origin}: {both[0]!r} is in both fleet.fail and fleet.warn; keep it in one")
    s = t.get("straggler_fail", g.straggler_fail)
    if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s <= 1:
        raise InputError(f"{origin}: fleet.straggler_fail = {s!r}: a fraction between 0 and 1 (0.10 = 10 % slower)")
    g.straggler_fail = float(s)
    fams = t.get("families", [])
    if not isinstance(fams, list) or not all(isinstance(x, str) for x in fams):
        raise InputError(f'{origin}: fleet.families must be a list of family names (e.g. "all_reduce busbw")')
    g.families = list(fams)
    return g


def load(path: str) -> Gate:
    from gpuadvisor.inputs import CONFIG_LIMIT, loads_toml, read_text
    from gpuadvisor.rules.policy import parse_policy

    data = loads_toml(read_text(path, "a TOML policy file", CONFIG_LIMIT), path, "a TOML policy file")
    parse_policy({k: v for k, v in data.items() if k != "fleet"}, origin=path)  # the rest as check reads it
    return from_policy(data, path)
