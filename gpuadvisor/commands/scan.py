"""gpuadvisor scan: what this machine really is."""
from __future__ import annotations

import click

from gpuadvisor.commands.common import get_rig, rig_source_options, use_color, write_json


@click.command()
@rig_source_options
@click.option("--json", "json_path", metavar="FILE", help="Save the scan as JSON (read it back with --from).")
@click.option("--redact", is_flag=True, help="Drop the hostname, GPU UUIDs and serials before saving or printing.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="What to print on stdout.")
@click.pass_context
def scan(ctx: click.Context, from_: str | None, simulate_: str | None, import_torch: bool, sysfs_root: str, json_path: str | None, redact: bool, fmt: str) -> None:
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
    if json_path:
        write_json(rig, json_path)
    if fmt == "json":
        click.echo(rig.to_json(), nl=False)
    else:
        click.echo(render_scan(rig, color=use_color()), nl=False)
        if json_path:
            click.echo(f"\nscan saved to {json_path}", err=True)
