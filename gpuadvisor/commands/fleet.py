"""gpuadvisor fleet: one view across the scans many nodes wrote (drift, outliers, the slow node)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from gpuadvisor.commands.options import (
    fail_on_option,
    format_option,
    html_file_option,
    output_option,
    policy_option,
    quiet_option,
)
from gpuadvisor.errors import InputError
from gpuadvisor.fleet.kinds import help_lines
from gpuadvisor.numbers import SECONDS_PER

if TYPE_CHECKING:
    from gpuadvisor.fleet.model import FleetReport

MAX_AGE_S = 100 * 365.25 * 86400


def parse_age(text: str) -> dt.timedelta:
    m = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*([smhdw]?)\s*", text or "")
    if not m:
        raise InputError(f"--max-age {text!r}: expected a number with s, m, h, d or w (e.g. 24h, 7d)")
    seconds = float(m.group(1)) * SECONDS_PER[m.group(2) or "s"]
    if seconds > MAX_AGE_S:
        raise InputError(f"--max-age {text!r}: more than 100 years; give an age such as 24h or 7d")
    return dt.timedelta(seconds=seconds)


_KINDS_HELP = (
    "\b\nFinding kinds ([fleet] fail / warn take these, or a node rule code\nsuch as GA812), default severity first:\n"
    + "\n".join(help_lines())
)


@click.command(epilog=_KINDS_HELP)
@click.argument("paths", nargs=-1, required=True, metavar="SCANS...")
@click.option(
    "--expect",
    "expect",
    multiple=True,
    metavar="HOSTLIST",
    help="Nodes that should have a scan, as a Slurm hostlist (node[01-64]); repeatable.",
)
@click.option("--expect-file", metavar="FILE", help="Nodes that should have a scan: one name or hostlist per line.")
@click.option(
    "--max-age", metavar="AGE", help="Scans older than this (24h, 7d) are stale: they fail and are not compared."
)
@click.option("--baseline", metavar="DIR", help="An earlier set of scans: per node and figure, what changed.")
@format_option("text", "json", "prom", "junit", help=None)
@html_file_option("Also write the self-contained HTML fleet report.")
@output_option("Write the report to FILE (atomically) instead of stdout.", metavar="FILE")
@fail_on_option("Exit 1 when a finding at or above this severity is found.", default="fail")
@policy_option(
    "The policy file check reads; its [fleet] table promotes findings to fail (see Exit status).", metavar="FILE"
)
@click.option(
    "--expect-gpus",
    type=click.IntRange(1, 4096),
    metavar="N",
    help="Every node should show N GPUs; fewer is a fail (default: its group's design).",
)
@click.option("--all", "all_nodes", is_flag=True, help="Text: list the nodes with nothing found too.")
@quiet_option("Print nothing on stdout; the exit code (and -o, --html) tell.")
@click.option("--now", hidden=True, help="The time to judge scan ages against (ISO 8601; tests).")
@click.option(
    "--jobs",
    type=click.IntRange(1, 256),
    default=1,
    metavar="N",
    help="Read the scans with N processes (reading is most of a large fleet's time).",
)
def fleet(
    paths: tuple[str, ...],
    expect: tuple[str, ...],
    expect_file: str | None,
    max_age: str | None,
    baseline: str | None,
    fmt: str,
    html_path: str | None,
    output: str | None,
    fail_on: str,
    all_nodes: bool,
    quiet: bool,
    now: str | None,
    policy_path: str | None = None,
    expect_gpus: int | None = None,
    jobs: int = 1,
) -> None:
    """Compare the scans of many nodes: group them by hardware shape, find the outliers (median and MAD),
    the drift (driver, CUDA, NCCL, modes, PCIe widths, NVLinks), failed, missing and stale nodes, and what
    the slowest nodes cost a synchronous job.

    \b
    SCANS: directories (every *.json below) or files written by
    'gpuadvisor check --json FILE' or 'scan --json FILE' on each node.
    \b
    Exit status (the same for every --format):
      0  nothing fails the gate
      1  something does (the report is still written): by default a lost
         GPU, NVLink or NIC, a failed, missing or stale scan, the node's own
         fail findings, or a node 25% or more slower than its group in a family
      2  bad input (one line: what, where, what to do); inputs untouched
    \b
    Warnings (drift, slow ports, smaller slowdowns, the node's own warn
    findings) fail with --fail-on warn, or one kind or rule code at a time
    with the policy file's [fleet] table; its warn list demotes a fail:
      [fleet]
      fail = ["slow-port", "drift", "GA812"]
      warn = ["stale"]
      straggler_fail = 0.10
      families = ["all_reduce busbw"]
    \b
    Examples:
      srun --nodes=64 --ntasks-per-node=1 gpuadvisor check --bench --quick -q --json scans/%n.json
      gpuadvisor fleet scans/ --expect 'node[01-64]' --html fleet.html
      gpuadvisor fleet scans/ --baseline last-week/ --format json -o fleet.json
      gpuadvisor fleet scans/ --format prom -o /var/lib/node_exporter/textfile_collector/fleet.prom
    """
    from gpuadvisor.commands import fleet_outputs as outputs
    from gpuadvisor.fleet import hostlist
    from gpuadvisor.fleet.analyse import Options, analyse
    from gpuadvisor.fleet.load import files_of, load_nodes, parse_time

    names: list[str] | None = None
    if expect or expect_file:
        names = []
        for e in expect:
            names += hostlist.expand(e)
        if expect_file:
            names += hostlist.read_nodes_file(expect_file)
        names = list(dict.fromkeys(names))
    opts = Options(
        expect=names, max_age=parse_age(max_age) if max_age else None, fail_on=fail_on, expect_gpus=expect_gpus
    )
    if policy_path:
        from gpuadvisor.fleet import gate

        opts.gate = gate.load(policy_path)
    if now:
        opts.now = parse_time(now)
        if opts.now is None:
            raise InputError(f"--now {now!r}: not an ISO 8601 time")
    files = files_of(list(paths))
    base_files = files_of([baseline]) if baseline else []
    outputs.check(
        {"--html": html_path, "-o": output if output != "-" else None},
        list(paths)
        + ([baseline] if baseline else [])
        + ([expect_file] if expect_file else [])
        + ([policy_path] if policy_path else []),
        files + base_files,
    )
    nodes = load_nodes(list(paths), files, jobs)
    if not nodes and names is None:
        raise InputError(f"{', '.join(paths)}: no scan found (*.json); give the directory the nodes wrote to")
    if baseline:
        opts.baseline = load_nodes([baseline], base_files, jobs)
        opts.baseline_label = baseline
        _check_baseline(baseline, opts.baseline)
    report = analyse(nodes, opts, inputs=list(paths))
    render: Callable[[FleetReport], str]
    if fmt == "json":
        from gpuadvisor.render.machine.fleet_json import render_json as render
    elif fmt == "prom":
        from gpuadvisor.render.machine.fleet_prom import render_prom as render
    elif fmt == "junit":
        from gpuadvisor.render.machine.fleet_junit import render_junit as render
    else:
        from gpuadvisor.render.text.fleet import render_text

        def render(r: FleetReport) -> str:
            return render_text(r, all_nodes=all_nodes)

    if html_path:
        from gpuadvisor.render.html.fleet import render_html

        outputs.write(html_path, render_html(report), what="HTML fleet report")
        click.echo(f"HTML fleet report written to {html_path}", err=True)
    text = render(report)
    if output and output != "-":
        outputs.write(output, text, what=f"{fmt} fleet report")
        click.echo(f"{fmt} report written to {output}", err=True)
    elif not quiet:
        click.echo(text, nl=False)
    if report.failing():
        raise click.exceptions.Exit(1)


def _check_baseline(baseline: str, nodes: dict[str, Any]) -> None:
    """A baseline where no scan reads compares nothing: refused (one line, exit 2), not a silent 'nothing changed'.
    Some unreadable scans among readable ones are only those nodes' loss."""
    if any(n.status == "ok" for n in nodes.values()):
        return
    why = next((n.error for n in nodes.values() if n.error), None) or "no scan (*.json) in it"
    raise InputError(
        f"--baseline {baseline}: no scan in it could be read ({why}); give the directory an earlier run's scans are in"
    )
