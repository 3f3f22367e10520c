"""gpuadvisor scan: what this machine really is."""
from __future__ import annotations

import click

from gpuadvisor.commands.common import get_rig, rig_source_options, use_color, write_json


@click.command()
@rig_source_options
@click.option("--json", "json_path", metavar="FILE", help="Save the scan as JSON (read it back with --from).")
@click.option("--policy", metavar="POLICY.toml", help="Rule policy: select/ignore codes, severities, thresholds (see examples/policies/).")
@click.option("--psu-watts", type=float, metavar="W", help="The power supply's rating, for the PSU sizing rule (never probed).")
@click.option("--no-rules", is_flag=True, help="Only the facts: skip the findings.")
@click.option("--redact", is_flag=True, help="Drop the hostname, GPU UUIDs and serials before saving or printing.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="What to print on stdout.")
@click.pass_context
def scan(ctx: click.Context, from_: str | None, simulate_: str | None, import_torch: bool, sysfs_root: str, json_path: str | None, policy: str | None, psu_watts: float | None, no_rules: bool, redact: bool, fmt: str) -> None:
    """Probe this machine (or a preset, or a saved scan) and report what it is.

    \b
    Every GPU (model, memory, bus id, compute capability, power, temperature, ECC and retired/remapped memory,
    clocks-event reasons, persistence, MIG, NUMA node, CPU affinity), the PCIe link of every GPU and of every
    hop to its CPU root port, NVLink, the topology matrix with P2P capability, the host and the software.

    \b
    Examples:
      gpuadvisor scan                               # this machine
      gpuadvisor scan --simulate dgx-h100 --json s.json
      gpuadvisor scan --from s.json                 # a saved scan, on any machine
    """
    from gpuadvisor.render.terminal import render_scan

    rig = get_rig(from_, simulate_, sysfs_root=sysfs_root, import_torch=import_torch)
    if redact:
        from gpuadvisor.redact import redact as redact_rig

        redact_rig(rig)
    if psu_watts is not None:
        rig.host.psu_watts = psu_watts
        rig.host.unavailable.pop("psu_watts", None)
    if not no_rules:
        from gpuadvisor.rules import evaluate

        evaluate(rig, policy)
    if json_path:
        write_json(rig, json_path)
    if fmt == "json":
        click.echo(rig.to_json(), nl=False)
    else:
        color = use_color()
        click.echo(render_scan(rig, color=color), nl=False)
        if not no_rules:
            from gpuadvisor.render.findings import render_findings

            click.echo("\nFindings\n--------")
            click.echo(render_findings(rig.findings, color=color), nl=False)
        if json_path:
            click.echo(f"\nscan saved to {json_path}", err=True)
