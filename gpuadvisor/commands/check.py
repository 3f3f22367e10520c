"""gpuadvisor check: gate a node. The rules against a policy; exit 1 when a finding at or above the fail-on
severity is found; the report as text, JSON, JUnit XML or a Prometheus textfile.

The gate itself (``gates``, ``run_check``, ``CheckResult``) is gpuadvisor.rules.gate; its views are in
gpuadvisor.render (text.check, machine.check, machine.junit, machine.prometheus).
"""

from __future__ import annotations

import time

import click

from gpuadvisor.commands.common import get_rig, rig_source_options, use_color, write_json
from gpuadvisor.commands.options import (
    fail_on_option,
    format_option,
    json_file_option,
    output_option,
    policy_option,
    quiet_option,
    redact_option,
)
from gpuadvisor.errors import InputError
from gpuadvisor.rules import Policy, load_policy
from gpuadvisor.rules.gate import CheckResult, gates, keep_since, parse_duration, run_check
from gpuadvisor.rules.summary import NO_GPU_PREFIX


def render(res: CheckResult, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        from gpuadvisor.render.machine.check import render_json

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
            cannot_judge=None if res.failing else res.cannot_judge,
        )
    if fmt == "prom":
        from gpuadvisor.render.machine.prometheus import render_prometheus

        return render_prometheus(
            res.rig,
            res.findings,
            failing=bool(res.failing),
            fail_on=res.fail_on,
            policy=res.policy,
            judged=res.exit_code != 2,
        )
    from gpuadvisor.render.text.check import render_text

    return render_text(res, color=color)


@click.command()
@rig_source_options
@policy_option("Node policy: select/ignore codes, severities, thresholds, fail_on (see examples/policies/).")
@fail_on_option("Lowest severity that fails the node. Default: the policy's fail_on, else fail.")
@click.option(
    "--bench",
    is_flag=True,
    help="Measure first (this machine only; needs torch): the GA6xx bandwidth rules then judge.",
)
@click.option("--quick", is_flag=True, help="With --bench: the quick size sweep.")
@click.option(
    "--since",
    "since",
    metavar="DURATION",
    default=None,
    help="Judge only kernel-log events (Xid, SXid, lost GPUs, AER, link flaps) logged within DURATION before the "
    "scan (30m, 24h, 7d): a node reset after last week's Xid passes. Events whose age the log does not give "
    "(a pasted syslog without dates) are kept. Default: every event since boot.",
)
@format_option("text", "json", "junit", "prom", help="Report format.")
@output_option(
    "Write the report to PATH (atomically: temp file + rename; never through a symbolic link) instead of stdout "
    "('-': stdout); stdout then shows the findings as text unless --quiet."
)
@quiet_option("Print nothing on stdout, and on stderr only errors; the exit code (and -o) tell.")
@json_file_option("Also save the scan with its findings (read it back with --from).")
@redact_option("every report format and the saved scan.")
def check(
    from_: str | None,
    simulate_: str | None,
    import_torch: bool,
    sysfs_root: str,
    policy_path: str | None,
    fail_on: str | None,
    bench: bool,
    quick: bool,
    since: str | None,
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
      2  bad input, or the tool could not run (unreadable scan or policy), or the
         node cannot be judged: no GPU found live and nothing failing, or a scan
         with neither GPUs nor logs (the report is still written)
    \b
    A scan without GPUs (imported from a kernel log, ibstat, fabric manager
    status) is judged on what it holds: 1 when a finding fails, 0 when nothing
    does; the GPU rules are listed as not checked.
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
    window = parse_duration(since) if since is not None else None
    rig = get_rig(from_, simulate_, sysfs_root=sysfs_root, import_torch=import_torch or bench)
    if bench and rig.source.kind != "live":
        raise InputError(
            f"--bench measures this machine, but the scan comes from a {rig.source.kind} source: "
            "drop --bench, or drop --from/--simulate"
        )
    if bench and rig.gpus:  # no GPU: nothing to measure; the gate judges what the scan holds
        from gpuadvisor.bench import run_benchmarks
        from gpuadvisor.bench.launcher import join_env

        run_benchmarks(rig, preset="quick" if quick else "default")
        job = join_env()
        if job is not None and job["RANK"] != "0":
            click.echo(f"gpuadvisor check: rank {job['RANK']} done; rank 0 judges the node", err=True)
            return
    elif quick and not bench:
        raise InputError("--quick only applies with --bench")
    if window is not None:
        rig.problems.append(keep_since(rig, window))
    res = run_check(rig, policy, fail_on)
    res.elapsed_s = time.monotonic() - t0
    if redact:  # after the rules (they judge the real facts); the findings are the rig's, redacted with it
        from gpuadvisor.redact import redact as redact_rig

        red = redact_rig(rig, inputs=(from_, simulate_, policy_path))
        red.walk(res.findings)
        red.walk(res.failing)
        res.policy = red.text(res.policy) if res.policy else res.policy
    judged = not (res.cannot_judge and not res.failing)
    for problem in [] if quiet else [p for p in rig.problems if judged or not p.startswith(NO_GPU_PREFIX)]:
        click.echo(f"gpuadvisor: note: {problem}", err=True)
    if json_path:
        write_json(rig, json_path)
    if output:
        from gpuadvisor.output import write_atomic
        from gpuadvisor.streams import sanitise

        # a text report in a file is escaped as on a terminal (the same path): a host name's control characters
        # or line separators do not break its lines
        report = render(res, fmt)
        write_atomic(output, sanitise(report) if fmt == "text" else report, what=f"{fmt} report")
        if fmt != "text" and not quiet:
            click.echo(render(res, "text", color=use_color()), nl=False)
        if not quiet:
            click.echo(f"{fmt} report written to {output}", err=True)
    elif not quiet:
        click.echo(render(res, fmt, color=fmt == "text" and use_color()), nl=False)
    if not judged:  # the report is written; the one line says why, whole (-q: errors still reach stderr)
        click.echo(
            f"gpuadvisor: error: no GPU to check on {rig.host.hostname or 'this host'}: {res.cannot_judge}", err=True
        )
    if res.exit_code:
        raise click.exceptions.Exit(res.exit_code)
