"""gpuadvisor report: render a saved scan (or a simulated rig) as a self-contained HTML file, text or JSON."""

from __future__ import annotations

import sys

import click

from gpuadvisor import completion
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig


def run_rules(rig: Rig) -> None:
    """Evaluate the rules on the rig (fills rig.findings)."""
    from gpuadvisor.rules import evaluate

    evaluate(rig)


@click.command()
@click.argument("scan_file", required=False, metavar="[SCAN.json]")
@click.option(
    "--simulate",
    "simulate_",
    metavar="PRESET|FILE.toml",
    shell_complete=completion.presets,
    help="Render a simulated rig instead of a saved scan (a preset name: gpuadvisor presets).",
)
@click.option("--html", "html_path", metavar="FILE", help="Write the HTML report to FILE ('-' for stdout).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "html"]),
    default=None,
    help="Print the rig on stdout in this form [default: text, or nothing when --html is given].",
)
@click.option(
    "--rules/--no-rules",
    "rules",
    default=None,
    help="Run the rules on the rig before rendering [default: on for --simulate; a saved scan keeps the findings it "
    "holds].",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Replace every identifier (hostnames, IPs, MACs, GPU UUIDs, serials, user names, "
    "input paths) with stable pseudonyms in the report, its embedded scan and what is printed.",
)
def report(
    scan_file: str | None,
    simulate_: str | None,
    html_path: str | None,
    fmt: str | None,
    rules: bool | None,
    redact: bool,
) -> None:
    """Render a saved scan as HTML (or text, JSON).

    The HTML report is one file that opens offline: inline CSS and SVG, nothing fetched, the scan itself
    embedded as JSON. It shows the verdict, the rig, a topology diagram and matrix, measured bandwidth
    against what the links should give, the findings with their fixes, and the strategy when the scan
    holds them; every figure says whether it was read, measured, predicted, simulated or imported.

    \b
    Examples:
      gpuadvisor scan --json scan.json && gpuadvisor report scan.json --html report.html
      gpuadvisor report --simulate dgx-h100 --html dgx.html
      gpuadvisor report scan.json --format json      # the same facts, as JSON
    """
    from gpuadvisor.commands.common import get_rig

    if scan_file and simulate_:
        raise InputError("a scan file and --simulate both given: choose one source")
    if not scan_file and not simulate_:
        raise InputError("no scan given: gpuadvisor report SCAN.json --html OUT.html (or --simulate PRESET)")
    from gpuadvisor.output import plan_outputs

    plan_outputs({"--html": html_path}, {"SCAN": scan_file, "--simulate": simulate_})
    rig = get_rig(scan_file, simulate_)
    if rules or (rules is None and simulate_):
        run_rules(rig)
    if redact:
        from gpuadvisor.redact import redact as redact_rig

        redact_rig(rig, inputs=(scan_file, simulate_))
    if html_path:
        from gpuadvisor.render.html import render_html, write_html

        if html_path == "-":
            sys.stdout.write(render_html(rig))
        else:
            path = write_html(rig, html_path)
            click.echo(f"report written to {path} ({path.stat().st_size:,} bytes)", err=True)
    if fmt is None:
        fmt = None if html_path else "text"
    if fmt == "json":
        click.echo(rig.to_json(), nl=False)
    elif fmt == "html" and html_path != "-":
        from gpuadvisor.render.html import render_html

        sys.stdout.write(render_html(rig))
    elif fmt == "text":
        from gpuadvisor.commands.common import use_color, verbose
        from gpuadvisor.render.text.rig import render_rest, render_scan

        color = use_color()
        click.echo(render_scan(rig, color=color, verbose=verbose()), nl=False)
        click.echo(render_rest(rig, color=color), nl=False)
