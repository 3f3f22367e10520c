"""Node policy: which rules run, at what severity, with which thresholds (a TOML file, ruff-style codes).

    # node.toml
    select = ["ALL"]              # codes or code prefixes ("GA1" = every PCIe rule); default ALL
    ignore = ["GA313", "GA5"]     # ignore wins over select
    fail_on = "warn"              # for `gpuadvisor check`: the lowest severity that fails the node (default fail)

    [severity]                    # code or prefix -> info | warn | fail; the longest matching key wins
    GA313 = "fail"

    [thresholds]                  # name -> number, see `gpuadvisor rules --json` / gpuadvisor.rules.thresholds
    bandwidth_warn_ratio = 0.95

Any unknown key, code, prefix or threshold is an InputError whose one line names it (exit 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.rules.registry import REGISTRY, SEVERITIES, Registry
from gpuadvisor.rules.thresholds import THRESHOLDS, defaults

KEYS = ("select", "ignore", "severity", "thresholds", "fail_on")


class PolicyError(InputError):
    """A policy file that cannot be used; one line naming the file and the offending key or code."""


@dataclass
class Policy:
    select: list[str] = field(default_factory=lambda: ["ALL"])
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    fail_on: str = "fail"
    origin: str = "default policy"

    def is_selected(self, code: str) -> bool:
        def matches(patterns: Iterable[str]) -> bool:
            return any(p == "ALL" or code.startswith(p) for p in patterns)

        return matches(self.select) and not matches(self.ignore)

    def severity_for(self, code: str) -> str | None:
        """The overriding severity for a rule code, or None; the longest matching key wins."""
        best: tuple[int, str] | None = None
        for key, sev in self.severity.items():
            if code.startswith(key) and (best is None or len(key) > best[0]):
                best = (len(key), sev)
        return best[1] if best else None

    def resolved_thresholds(self) -> dict[str, float]:
        out = defaults()
        out.update(self.thresholds)
        return out


def _check_codes(values: Any, key: str, origin: str, registry: Registry) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise PolicyError(f'{origin}: \'{key}\' must be a list of rule codes or prefixes (e.g. ["GA1", "GA302"])')
    codes = registry.codes()
    out = []
    for v in values:
        token = v.strip().upper()
        if token != "ALL" and not any(c.startswith(token) for c in codes) or not token:
            raise PolicyError(f"{origin}: {key}: unknown rule code or prefix {v!r} (list them with 'gpuadvisor rules')")
        out.append(token)
    return out


def parse_policy(data: Mapping[str, Any], origin: str = "policy", registry: Registry = REGISTRY) -> Policy:
    """Build a Policy from parsed TOML; every problem is a PolicyError naming the key or code."""
    unknown = [k for k in data if k not in KEYS and k != "fleet"]  # [fleet]: read by gpuadvisor.fleet.gate
    if unknown:
        raise PolicyError(f"{origin}: unknown key {unknown[0]!r} (allowed: {', '.join(KEYS)})")
    policy = Policy(origin=origin)
    if "select" in data:
        policy.select = _check_codes(data["select"], "select", origin, registry)
    if "ignore" in data:
        policy.ignore = _check_codes(data["ignore"], "ignore", origin, registry)
    if "fail_on" in data:
        if data["fail_on"] not in SEVERITIES:
            raise PolicyError(f"{origin}: fail_on = {data['fail_on']!r}; expected one of {', '.join(SEVERITIES)}")
        policy.fail_on = data["fail_on"]
    sev = data.get("severity", {})
    if not isinstance(sev, Mapping):
        raise PolicyError(f'{origin}: \'severity\' must be a table of code = "info" | "warn" | "fail"')
    for code, value in sev.items():
        (token,) = _check_codes([code], "severity", origin, registry)
        if token == "ALL":
            token = "GA"
        if value not in SEVERITIES:
            raise PolicyError(f"{origin}: severity.{code} = {value!r}; expected one of {', '.join(SEVERITIES)}")
        policy.severity[token] = value
    th = data.get("thresholds", {})
    if not isinstance(th, Mapping):
        raise PolicyError(f"{origin}: 'thresholds' must be a table of name = number")
    for name, value in th.items():
        if name not in THRESHOLDS:
            raise PolicyError(f"{origin}: unknown threshold {name!r} (list them with 'gpuadvisor rules --json')")
        try:
            policy.thresholds[name] = THRESHOLDS[name].check(value, f"thresholds.{name}")
        except ValueError as e:
            raise PolicyError(f"{origin}: {e}") from None
    merged = policy.resolved_thresholds()
    if merged["bandwidth_fail_ratio"] > merged["bandwidth_warn_ratio"]:
        raise PolicyError(
            f"{origin}: thresholds.bandwidth_fail_ratio ({merged['bandwidth_fail_ratio']:g}) is above "
            f"bandwidth_warn_ratio ({merged['bandwidth_warn_ratio']:g}); the failure bound must be the lower one"
        )
    return policy


def load_policy(path: str | Path) -> Policy:
    """Read a TOML policy file; a missing, unreadable or invalid file is a PolicyError (one line, exit 2)."""
    from gpuadvisor.inputs import CONFIG_LIMIT, load_file, loads_toml

    missing = "no such policy file (see examples/policies/ for the format)"
    data = load_file(path, "a TOML policy file", CONFIG_LIMIT, loads_toml, PolicyError, missing)
    return parse_policy(data, origin=str(Path(path)))
