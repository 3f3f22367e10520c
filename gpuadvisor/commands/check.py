"""gpuadvisor check: gate a node. The rules against a policy; exit 1 when a finding at or above the fail-on
severity is found; the report as text, JSON, JUnit XML or a Prometheus textfile.

Public API (besides the click command):

- ``gates(severity, fail_on) -> bool``: does a finding of this severity fail the node at this level?
- ``run_check(rig, policy=None, fail_on=None) -> CheckResult``: evaluate and decide.
- ``CheckResult``: rig, findings, rules (selected), fail_on, failing (the findings that fail the gate),
  exit_code (0/1), verdict, counts, ``summary()`` (one line of at most 80 characters).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import click

from gpuadvisor.commands.common import get_rig, rig_source_options, use_color, write_json
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Finding, Rig, to_dict
from gpuadvisor.rules import SEVERITY_ORDER, Policy, Rule, all_rules, evaluate, load_policy, verdict

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
    failing: list[Finding] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    @property
    def verdict(self) -> str:
        return verdict(self.findings)[0]

    @property
    def counts(self) -> dict[str, int]:
        return verdict(self.findings)[1]

    def summary(self) -> str:
        """One line, at most 80 characters: the first failing finding, or what passed."""
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
    return CheckResult(
        rig=rig,
        findings=findings,
        rules=rules,
        fail_on=level,
        policy=origin,
        failing=[f for f in findings if gates(f.severity, level)],
    )


def render_text(res: CheckResult, *, color: bool = False, width: int | None = None) -> str:
    """The gate's text: what was checked, the findings, the gate line; every line fits ``width`` (default: the
    terminal's) and carries no control character from the data (also when written to a file with -o)."""
    from gpuadvisor.render.text.findings import render_findings
    from gpuadvisor.render.text.width import fit_lines, term_width
    from gpuadvisor.text import plural

    width = width or term_width()
    rig = res.rig
    src = rig.source.kind + (f" preset {rig.source.preset}" if rig.source.preset else "")
    head = (
        f"gpuadvisor check: {rig.host.hostname or 'host'} ({src}), {plural(len(rig.gpus), 'GPU')}, "
        f"{plural(len(res.rules), 'rule')}, policy {res.policy or 'default'}"
    )
    levels = ", ".join(gating_severities(res.fail_on))
    if res.failing:
        codes = ", ".join(dict.fromkeys(f.code for f in res.failing))
        gate = f"Gate: FAIL (fail-on {res.fail_on}: fails on {levels}): {codes}; exit 1"
    else:
        gate = f"Gate: pass (fail-on {res.fail_on}: fails on {levels}); exit 0"
    if color:
        gate = f"\033[{'1;31' if res.failing else '1;32'}m{gate}\033[0m"
    body = render_findings(res.findings, color=color, width=width)
    return "\n".join(fit_lines([head, "", *body.rstrip("\n").split("\n"), gate], width)) + "\n"


def render_json(res: CheckResult) -> str:
    rig = res.rig
    doc = {
        "verdict": res.verdict,
        "fail_on": res.fail_on,
        "gating_severities": gating_severities(res.fail_on),
        "exit_code": res.exit_code,
        "summary": res.summary(),
        "counts": res.counts,
        "failing": list(dict.fromkeys(f.code for f in res.failing)),
        "rules_selected": len(res.rules),
        "policy": res.policy,
        "source": {
            "kind": rig.source.kind,
            "preset": rig.source.preset,
            "hostname": rig.host.hostname,
            "created_at": rig.source.created_at,
        },
        "findings": [to_dict(f) for f in res.findings],
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def render(res: CheckResult, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return render_json(res)
    if fmt == "junit":
        from gpuadvisor.render.machine.junit import render_junit

        return render_junit(
            res.rig,
            res.findings,
            res.rules,
            failing=lambda f: gates(f.severity, res.fail_on),
            fail_on=res.fail_on,
            policy=res.policy,
            time_s=res.elapsed_s,
        )
    if fmt == "prom":
        from gpuadvisor.render.machine.prometheus import render_prometheus

        return render_prometheus(
            res.rig, res.findings, failing=bool(res.failing), fail_on=res.fail_on, policy=res.policy
        )
    return render_text(res, color=color)


@click.command()
@rig_source_options
@click.option(
    "--policy",
    "policy_path",
    metavar="FILE.toml",
    help="Node policy: select/ignore codes, severities, thresholds, fail_on (see examples/policies/).",
)
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(FAIL_ON_LEVELS),
    default=None,
    help="Lowest severity that fails the node. Default: the policy's fail_on, else fail.",
)
@click.option(
    "--bench",
    is_flag=True,
    help="Measure first (this machine only; needs torch): the GA6xx bandwidth rules then judge.",
)
@click.option("--quick", is_flag=True, help="With --bench: the quick size sweep.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "prom"]),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="PATH",
    help="Write the report to PATH (atomically: temp file + rename; never through a symbolic link) instead of stdout "
    "('-': stdout); "
    "stdout then shows the findings as text unless --quiet.",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print nothing on stdout, and on stderr only errors; the exit code (and -o) tell.",
)
@click.option(
    "--json", "json_path", metavar="FILE", help="Also save the scan with its findings (read it back with --from)."
)
@click.option(
    "--redact",
    is_flag=True,
    help="Replace every identifier (hostnames, IPs, MACs, GPU UUIDs, serials, user names, "
    "input paths) with stable pseudonyms in every report format and the saved scan.",
)
def check(
    from_: str | None,
    simulate_: str | None,
    import_torch: bool,
    sysfs_root: str,
    policy_path: str | None,
    fail_on: str | None,
    bench: bool,
    quick: bool,
    fmt: str,
    output: str | None,
    quiet: bool,
    json_path: str | None,
    redact: bool,
) -> None:
    """Gate a node: run the rules (with a policy) and exit 1 when a finding at or above --fail-on is found.

    \b
    Exit status (the same for every --format):
      0  nothing at or above the fail-on severity
      1  the node fails: a finding at or above it (the report is still written)
      2  bad input, or the tool could not run (no GPU found, unreadable scan or policy)
    \b
    Severity order: fail > error > warn > info. "error" is a rule that crashed
    (its verdict is unknown): it fails the node at --fail-on warn (or info), and
    at --fail-on fail it does not (a gpuadvisor bug must not drain a healthy
    fleet) but is still reported: an <error> testcase in JUnit,
    gpuadvisor_findings{severity="error"} in Prometheus. "not-checked" (facts
    missing) never fails the node: a skipped testcase in JUnit.
    \b
    Formats: text (findings + the gate line), json (verdict, fail_on, exit_code,
    summary, counts, findings), junit (one testcase per selected rule), prom
    (node_exporter textfile: write it with -o DIR/gpuadvisor.prom).
    \b
    Examples:
      gpuadvisor check --policy node.toml
      gpuadvisor check --simulate 4x4090-pcie --fail-on warn
      gpuadvisor check --format junit -o gpuadvisor.xml       # CI test report
      gpuadvisor check -q --format prom -o /var/lib/node_exporter/textfile_collector/gpuadvisor.prom
      gpuadvisor check --from scan.json --format json | jq .summary
    """
    t0 = time.monotonic()
    if output == "-":
        output = None
    from gpuadvisor.output import plan_outputs

    plan_outputs(
        {"-o": output, "--json": json_path}, {"--from": from_, "--simulate": simulate_, "--policy": policy_path}
    )
    policy = load_policy(policy_path) if policy_path else Policy()
    rig = get_rig(from_, simulate_, sysfs_root=sysfs_root, import_torch=import_torch or bench)
    if not rig.gpus:
        why = rig.problems[0].split(";")[0] if rig.problems else "the scan lists no GPU"
        raise InputError(f"no GPU to check on {rig.host.hostname or 'this host'}: {why}")
    if bench:
        if rig.source.kind != "live":
            raise InputError(
                f"--bench measures this machine, but the scan comes from a {rig.source.kind} source: "
                "drop --bench, or drop --from/--simulate"
            )
        from gpuadvisor.bench import run_benchmarks
        from gpuadvisor.bench.launcher import join_env

        run_benchmarks(rig, preset="quick" if quick else "default")
        job = join_env()
        if job is not None and job["RANK"] != "0":
            click.echo(f"gpuadvisor check: rank {job['RANK']} done; rank 0 judges the node", err=True)
            return
    elif quick:
        raise InputError("--quick only applies with --bench")
    res = run_check(rig, policy, fail_on)
    res.elapsed_s = time.monotonic() - t0
    if redact:  # after the rules (they judge the real facts); the findings are the rig's, redacted with it
        from gpuadvisor.redact import redact as redact_rig

        red = redact_rig(rig, inputs=(from_, simulate_, policy_path))
        red.walk(res.findings)
        red.walk(res.failing)
        res.policy = red.text(res.policy) if res.policy else res.policy
    for problem in [] if quiet else rig.problems:  # -q: only errors (exit 2) reach stderr
        click.echo(f"gpuadvisor: note: {problem}", err=True)
    if json_path:
        write_json(rig, json_path)
    if output:
        from gpuadvisor.output import write_atomic

        write_atomic(output, render(res, fmt), what=f"{fmt} report")
        if fmt != "text" and not quiet:
            click.echo(render_text(res, color=use_color()), nl=False)
        if not quiet:
            click.echo(f"{fmt} report written to {output}", err=True)
    elif not quiet:
        click.echo(render(res, fmt, color=fmt == "text" and use_color()), nl=False)
    if res.exit_code:
        raise click.exceptions.Exit(res.exit_code)
