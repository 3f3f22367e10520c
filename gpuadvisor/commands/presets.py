"""gpuadvisor presets: the simulated rigs built in."""

from __future__ import annotations

import json

import click


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="What to print: the table, or a machine-readable list.",
)
@click.option(
    "--json", "as_json", is_flag=True, hidden=True, help="The same as --format json (this command saves no file)."
)
def presets(fmt: str, as_json: bool) -> None:
    """List the simulated rigs built in (use one with: gpuadvisor scan --simulate NAME).

    Each is a real, documented machine described in a TOML file; copy one (see probes/presets/README.md in
    the source) to describe your own and pass its path to --simulate.
    """
    from gpuadvisor.probes.rigdesc import load_description, preset_names

    rows = []
    for name in preset_names():
        d = load_description(name)
        gpu = d.gpus[0].props["name"] if d.gpus else "-"
        rows.append({"name": name, "gpus": len(d.gpus), "gpu": gpu, "title": d.title, "sources": d.sources})
    if as_json or fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    from gpuadvisor.render.text.width import fit_table, term_width

    table = [[r["name"], r["gpus"], r["gpu"], r["title"]] for r in rows]
    click.echo("\n".join(fit_table(table, ["preset", "GPUs", "GPU", "what it is"], term_width(), indent="")))
    click.echo("\nTry: gpuadvisor scan --simulate dgx-h100")
