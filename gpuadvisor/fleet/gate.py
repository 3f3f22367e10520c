"""The fleet gate: which findings fail the run (exit 1), set by defaults and the ``[fleet]`` table of the
``--policy`` file ``check`` reads.

Defaults (fail): a lost GPU, NVLink or NIC; a failed or missing scan; the node's own fail findings; a node 25 %
or more slower than its group in a family. Everything else warns and does not fail the run unless promoted::

    [fleet]
    fail = ["drift", "stale", "check-warn"]   # finding kinds that fail: drift, stale, check-warn, changed, outlier
    straggler_fail = 0.10                      # a node this much slower than its group in a family fails
    families = ["all_reduce busbw"]            # any called slowdown in these families fails

``--fail-on warn`` still fails on every warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.fleet.model import FleetFinding

KINDS = ("drift", "stale", "check-warn", "changed", "outlier", "unexpected")


@dataclass
class Gate:
    fail: list[str] = field(default_factory=list)
    straggler_fail: float = 0.25
    families: list[str] = field(default_factory=list)
    origin: str = "defaults"

    def promote(self, f: FleetFinding) -> FleetFinding:
        """The finding with its severity raised to fail where the policy says so."""
        if f.severity == "fail":
            return f
        kind = "check-warn" if f.kind == "check" else f.kind
        slow = -(f.deviation or 0.0)
        if kind in self.fail or (
            f.kind == "outlier"
            and f.code != "one-figure"
            and (slow >= self.straggler_fail or f.subject in self.families)
        ):
            f.severity = "fail"
            f.message += f" [fails by policy {self.origin}]"
        return f


def from_policy(data: dict[str, Any], origin: str) -> Gate:
    t = data.get("fleet", {})
    if not isinstance(t, dict):
        raise InputError(f"{origin}: 'fleet' must be a table (fail, straggler_fail, families)")
    unknown = [k for k in t if k not in ("fail", "straggler_fail", "families")]
    if unknown:
        raise InputError(f"{origin}: unknown key fleet.{unknown[0]} (allowed: fail, straggler_fail, families)")
    g = Gate(origin=origin)
    fail = t.get("fail", [])
    if not isinstance(fail, list) or any(k not in KINDS for k in fail):
        raise InputError(f"{origin}: fleet.fail must be a list of {', '.join(KINDS)}")
    g.fail = list(fail)
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
