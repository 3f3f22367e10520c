"""The node gate of ``gpuadvisor check``: the rules against a policy, and which findings fail the node.

- ``gates(severity, fail_on) -> bool``: does a finding of this severity fail the node at this level?
- ``run_check(rig, policy=None, fail_on=None) -> CheckResult``: evaluate and decide.
- ``CheckResult``: rig, findings, rules (selected), fail_on, failing (the findings that fail the gate),
  exit_code (0/1/2), verdict, counts, ``summary()`` (one line of at most 80 characters).
- ``logs_given(rig)``: what a scan without GPUs still holds for the rules (a kernel log, RDMA ports, the fabric).

A scan that lists no GPU is judged on what it holds: a kernel log with Xid 79 fails the node (exit 1), a log
with nothing wrong passes it (exit 0), and every GPU rule is listed as not checked. Only a scan that holds
nothing to judge (no GPU and no log), or a live scan whose NVML found no GPU and where nothing fails, cannot
be judged: exit 2, with the report still written (``cannot_judge`` says why, whole).

Its views are gpuadvisor.render.text.check (text) and gpuadvisor.render.machine.check (JSON); JUnit and Prometheus
take the findings and the gate (gpuadvisor.render.machine.junit, .prometheus).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuadvisor.errors import InputError
from gpuadvisor.facts import Finding, Rig
from gpuadvisor.numbers import SECONDS_PER
from gpuadvisor.rules import SEVERITY_ORDER, Policy, Rule, all_rules, evaluate, verdict
from gpuadvisor.rules.summary import logs_given, no_gpu_reason

FAIL_ON_LEVELS = ("info", "warn", "fail")
SUMMARY_MAX = 80  # Kubernetes node-problem-detector plugins: one line of at most 80 characters
_RANK = {s: i for i, s in enumerate(SEVERITY_ORDER)}  # fail, error, warn, info, not-checked


def gates(severity: str, fail_on: str) -> bool:
    """Whether a finding of ``severity`` fails the node at ``fail_on`` (info | warn | fail).

    The project's severity order is fail > error > warn > info (an "error" is a rule that crashed: its verdict
    is unknown, worse than a warning, not a failure). A finding fails the gate when it is at or above the
    level: at fail-on fail only "fail"; at fail-on warn also "error" and "warn"; at fail-on info also "info".
    A not-checked finding never fails the gate.
    """
    if fail_on not in FAIL_ON_LEVELS:
        raise ValueError(f"fail_on {fail_on!r}: expected one of {', '.join(FAIL_ON_LEVELS)}")
    if severity == "not-checked" or severity not in _RANK:
        return False
    return _RANK[severity] <= _RANK[fail_on]


def gating_severities(fail_on: str) -> list[str]:
    return [s for s in SEVERITY_ORDER if gates(s, fail_on)]


@dataclass
class CheckResult:
    rig: Rig
    findings: list[Finding]
    rules: list[Rule]
    fail_on: str
    policy: str | None = None  # the policy file, None for the default policy
    elapsed_s: float = 0.0
    cannot_judge: str | None = None  # why the node cannot be judged (no GPU, nothing failing, no log): exit 2

    @property
    def failing(self) -> list[Finding]:
        """The findings that fail the gate at ``fail_on``."""
        return [f for f in self.findings if gates(f.severity, self.fail_on)]

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 2 if self.cannot_judge else 0

    @property
    def verdict(self) -> str:
        return verdict(self.findings)[0]

    @property
    def counts(self) -> dict[str, int]:
        return verdict(self.findings)[1]

    def summary(self) -> str:
        """One line, at most 80 characters: the first failing finding, what passed, or why it could not judge."""
        if not self.failing and self.cannot_judge:
            return _cut(f"not judged: {self.cannot_judge}")
        if not self.failing:
            c = self.counts
            below = ", ".join(f"{c[s]} {s}" for s in ("error", "warn", "info") if c[s] and not gates(s, self.fail_on))
            return _cut(f"ok at fail-on {self.fail_on}" + (f" ({below} below the gate)" if below else ""))
        f = self.failing[0]
        if f.severity == "error":
            where = "rule crashed (a gpuadvisor bug)"
        else:
            where = f.subject or (("GPU " + ",".join(map(str, f.gpus))) if f.gpus else "")
        more = f" (+{len(self.failing) - 1} more)" if len(self.failing) > 1 else ""
        return _cut(f"{f.code} {f.name}" + (f": {where}" if where else ""), more)


def _cut(text: str, tail: str = "") -> str:
    room = SUMMARY_MAX - len(tail)
    text = " ".join(text.split())
    if len(text) > room:
        text = text[: room - 3].rstrip() + "..."
    return text + tail


def run_check(rig: Rig, policy: Policy | None = None, fail_on: str | None = None) -> CheckResult:
    """Evaluate the policy's rules on the rig and decide the gate (``fail_on`` defaults to the policy's)."""
    policy = policy or Policy()
    level = fail_on or policy.fail_on or "fail"
    if level not in FAIL_ON_LEVELS:
        raise InputError(f"fail_on {level!r}: expected one of {', '.join(FAIL_ON_LEVELS)}")
    findings = evaluate(rig, policy)
    rules = [r for r in all_rules() if policy.is_selected(r.code)]
    origin = None if policy.origin == Policy().origin else policy.origin
    res = CheckResult(rig=rig, findings=findings, rules=rules, fail_on=level, policy=origin)
    if not rig.gpus:
        findings += _gpu_rules_not_checked(rig, rules, findings)
        res.cannot_judge = cannot_judge(rig, res.failing)
    return res


GPU_RULES = tuple(f"GA{n}" for n in range(1, 8))  # GA1xx-GA7xx: rules about the GPUs themselves


def _gpu_rules_not_checked(rig: Rig, rules: list[Rule], findings: list[Finding]) -> list[Finding]:
    """A not-checked finding for each GPU rule that said nothing: a scan without GPUs gave it nothing to judge."""
    said = {f.code for f in findings}
    why = "this scan lists no GPU" + (f" ({no_gpu_reason(rig)[0]})" if rig.source.kind == "live" else "")
    return [
        Finding(code=r.code, name=r.name, area=r.area, severity="not-checked", message=why, subject="host")
        for r in rules
        if r.code.startswith(GPU_RULES) and r.code not in said
    ]


def cannot_judge(rig: Rig, failing: list[Finding]) -> str | None:
    """Why a scan without GPUs cannot pass the gate, or None when it can be judged on what it holds.

    A failing finding always judges (a kernel log with Xid 79 fails the node whatever else is missing). A live
    scan whose NVML found no GPU does not pass: the GPUs a node was scanned for are not there. An imported or
    saved scan that holds a kernel log, RDMA ports or the fabric's state is judged on them."""
    if rig.gpus or failing:
        return None
    reason, todo = no_gpu_reason(rig)
    recorded = rig.software.why("driver_version") if rig.source.kind == "live" else None
    if todo:
        whole = f"{reason}: {todo}" if not todo.startswith(reason) else todo
    else:
        whole = recorded or "the scan lists no GPU"
    if rig.source.kind == "live" or not logs_given(rig):
        return whole
    return None


def parse_duration(text: str) -> float:
    """ "30m", "24h", "7d", "2w", "90s" -> seconds; anything else is bad input (one line, exit 2)."""
    m = re.fullmatch(r"\s*(\d{1,6})\s*([smhdw])\s*", text or "")
    if not m:
        raise InputError(f"--since {text!r}: expected a duration such as 30m, 24h or 7d")
    return int(m.group(1)) * SECONDS_PER[m.group(2)]


def _event_age_s(rig: Rig, ev: object, now: object) -> float | None:
    """How long before the scan an event was logged: from the host's uptime (live), or from a wall-clock time with
    its date and year (ISO, dmesg -T) against the scan's time; None when the log does not say."""
    import datetime as dt

    up, at = rig.kernel.uptime_s, getattr(ev, "uptime_s", None)
    if up is not None and at is not None and at <= up:
        return up - at
    text = getattr(ev, "time", None)
    if not text or not isinstance(now, dt.datetime):
        return None
    iso = re.match(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)", text)
    stamp, fmt = (
        (f"{iso.group(1)} {iso.group(2)}", "%Y-%m-%d %H:%M:%S")
        if iso
        else (" ".join(text.split()), "%a %b %d %H:%M:%S %Y")
    )
    try:
        when = dt.datetime.strptime(stamp, fmt)  # dmesg -T: "Tue Nov 26 07:00:00 2024"; a syslog time has no year
    except ValueError:
        return None
    return (now.replace(tzinfo=None) - when).total_seconds()


def keep_since(rig: Rig, seconds: float) -> str:
    """Leave out the kernel-log events older than ``seconds`` before the scan (``check --since``); events whose
    age the log does not give are kept. Returns the note saying what was left out."""
    import datetime as dt

    events = rig.kernel.events
    if events is None:
        return "--since: no kernel log in this scan, nothing left out"
    try:
        now: dt.datetime | None = dt.datetime.fromisoformat((rig.source.created_at or "").replace("Z", "+00:00"))
    except ValueError:
        now = None
    kept, old, unknown = [], 0, 0
    for ev in events:
        age = _event_age_s(rig, ev, now)
        if age is not None and age > seconds:
            old += 1 + max(ev.more, 0)
            continue
        unknown += age is None
        kept.append(ev)
    rig.kernel.events = kept
    return f"--since: {old} kernel-log event(s) older than {seconds / 3600:g} h left out" + (
        f"; {unknown} of unknown age kept (the log gives no date or uptime for them)" if unknown else ""
    )
