"""Running the rules: selection and severity from the policy, crash isolation, not-checked merging, ordering."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.policy import Policy, load_policy
from gpuadvisor.rules.registry import REGISTRY, Registry, Rule
from gpuadvisor.rules.summary import rig_verdict, sort_findings

UNKNOWN_REASON = "not recorded in this scan"


@dataclass
class Context:
    """What a rule gets besides the rig: its own metadata, the thresholds in force, and finding builders."""

    rule: Rule
    thresholds: dict[str, float]

    def t(self, name: str) -> float:
        if name not in self.rule.thresholds:
            raise KeyError(f"{self.rule.code} reads threshold {name!r} without declaring it")
        return self.thresholds[name]

    def finding(
        self,
        message: str,
        *,
        gpus: Iterable[int] = (),
        subject: str | None = None,
        observed: Any = None,
        expected: Any = None,
        expected_source: str | None = None,
        fix: str | None = None,
        severity: str | None = None,
    ) -> Finding:
        return Finding(
            code=self.rule.code,
            name=self.rule.name,
            area=self.rule.area,
            severity=severity or self.rule.severity,
            message=message,
            gpus=sorted(set(gpus)),
            subject=subject,
            observed=observed,
            expected=expected,
            expected_source=expected_source,
            fix=fix,
        )

    def not_checked(self, reason: str | None, *, gpus: Iterable[int] = (), subject: str | None = None) -> Finding:
        """The facts this rule needs are missing: say why, never pass silently."""
        return Finding(
            code=self.rule.code,
            name=self.rule.name,
            area=self.rule.area,
            severity="not-checked",
            message=reason or UNKNOWN_REASON,
            gpus=sorted(set(gpus)),
            subject=subject,
        )


def _merge_not_checked(findings: list[Finding]) -> list[Finding]:
    """One not-checked finding per (rule, reason), with the GPUs of all of them."""
    out: list[Finding] = []
    merged: dict[tuple[str, str], Finding] = {}
    for f in findings:
        if f.severity != "not-checked":
            out.append(f)
            continue
        key = (f.code, f.message)
        if key in merged:
            m = merged[key]
            m.gpus = sorted(set(m.gpus) | set(f.gpus))
            if m.subject != f.subject:
                m.subject = None
        else:
            merged[key] = f
            out.append(f)
    for f in merged.values():
        if f.gpus and f.subject is None:
            f.subject = "GPU " + ", ".join(str(g) for g in f.gpus) if len(f.gpus) > 1 else f"GPU {f.gpus[0]}"
    return out


def _crash(rule: Rule, exc: BaseException) -> Finding:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Finding(
        code=rule.code,
        name=rule.name,
        area=rule.area,
        severity="error",
        message=f"rule crashed: {exc.__class__.__name__}: {exc}",
        subject="gpuadvisor",
        observed={"traceback": tb},
        fix="this is a bug in gpuadvisor: report it with the scan JSON (gpuadvisor scan --json FILE) attached",
    )


def run_rule(rule: Rule, rig: Rig, thresholds: dict[str, float]) -> list[Finding]:
    """One rule, isolated: a crash becomes an "error" finding instead of stopping the others."""
    ctx = Context(rule, thresholds)
    try:
        out = list(rule.func(rig, ctx) or [])
    except Exception as exc:  # a rule bug must not hide the other rules' findings
        return [_crash(rule, exc)]
    return _merge_not_checked(out)


def evaluate(rig: Rig, policy: Policy | str | Path | None = None, *, registry: Registry = REGISTRY) -> list[Finding]:
    """Run every selected rule on the rig, worst finding first; also stores them in ``rig.findings``.

    ``policy`` may be a Policy, a path to a TOML policy file, or None (every rule, default thresholds).
    """
    if policy is None:
        policy = Policy()
    elif not isinstance(policy, Policy):
        policy = load_policy(policy)
    thresholds = policy.resolved_thresholds()
    findings: list[Finding] = []
    for rule in registry.all():
        if not policy.is_selected(rule.code):
            continue
        override = policy.severity_for(rule.code)
        for f in run_rule(rule, rig, thresholds):
            if override and f.severity in ("info", "warn", "fail"):
                f.severity = override
            findings.append(f)
    findings = sort_findings(findings)
    rig.findings = findings
    rig.verdict = rig_verdict(rig).to_dict()
    return findings
