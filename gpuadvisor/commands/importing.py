"""gpuadvisor import: a scan from what nvidia-smi, lspci and nccl-tests printed on another machine."""

from __future__ import annotations

from pathlib import Path

import click

from gpuadvisor.importers.registry import help_text
from gpuadvisor.text import plural

HELP = """Turn nvidia-smi / lspci / nccl-tests output into a scan.

For machines you cannot install gpuadvisor on: ask for these outputs (any subset, in one file or many, in
any order; a directory means every file in it), and import them. Each output is recognised by its
content, not its file name. Findings, strategy and reports then work on the saved scan (--from).

\b
What to run on the machine (as root for lspci):
  nvidia-smi -q -x > smi.xml            (or nvidia-smi -q > smi-q.txt)
  nvidia-smi topo -m > topo.txt
  nvidia-smi topo -p2p r > p2p-r.txt    (the mode is read from the file name or command line)
  nvidia-smi nvlink -s > nvlink.txt
  sudo lspci -vv > lspci.txt
  ./all_reduce_perf -b 8 -e 8G -f 2 -g 8 > all_reduce_perf.txt

\b
Recognised outputs:
{formats}

Pasted fragments are read too (nvidia-smi -q without its banner, topo -m rows without their header,
lspci lines without their device line); '-' reads standard input. A file is refused only when nothing
in it is read; lines not read are listed with their line numbers. What a paste leaves out or hides
('...', '[...]', '<snip>', 'xxxx', '<redacted>', a last line, row or cell cut short) is "not shown":
never a value, and never read as absent, zero or inactive. Outputs that disagree (hostnames, driver
versions, GPU counts or ids, two different topo -m matrices) are different machines: refused, or with
--split imported as one scan each.

\b
Examples:
  gpuadvisor import smi.xml topo.txt nvlink.txt --json scan.json
  gpuadvisor import outputs/ --json scan.json && gpuadvisor report scan.json --html r.html
  gpuadvisor import node-a/ node-b/ --split --json scan.json   (scan-1.json, scan-2.json)
  gpuadvisor import smi.xml fio.json lsblk.txt --json scan.json
"""


@click.command("import", help=HELP.format(formats=help_text()))
@click.argument("files", nargs=-1, metavar="FILE|DIR...")
@click.option(
    "--json", "json_path", metavar="FILE", help="Save the scan as JSON ('-' for stdout); read it back with --from."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="What to print on stdout.",
)
@click.option("--origins", "show_origins", is_flag=True, help="Also list which file and line each fact came from.")
@click.option(
    "--split",
    is_flag=True,
    help="Outputs of several machines: import each machine as its own scan "
    "(--json scan.json writes scan-1.json, scan-2.json, ...; '-' and --format json print a JSON list).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Replace every identifier (hostnames, IPs, MACs, GPU UUIDs, serials, user names, "
    "input paths) with stable pseudonyms in everything written or printed.",
)
@click.option("--no-rules", is_flag=True, help="Only the facts: skip the findings.")
@click.option(
    "--storage",
    "storage_files",
    multiple=True,
    metavar="FILE",
    help="Storage output of the dataset/checkpoint drives (given as FILE they are recognised too): "
    "fio (--output-format=json or text), lsblk (-J) or nvme list; repeatable.",
)
def import_(
    files: tuple[str, ...],
    json_path: str | None,
    fmt: str,
    show_origins: bool,
    split: bool,
    redact: bool,
    no_rules: bool,
    storage_files: tuple[str, ...] = (),
) -> None:
    from gpuadvisor.commands.common import use_color, write_json
    from gpuadvisor.errors import InputError
    from gpuadvisor.importers import import_files, import_storage
    from gpuadvisor.output import plan_outputs

    if not files and not storage_files:
        raise InputError("no files given: gpuadvisor import FILE|DIR... (see gpuadvisor import --help)")
    if split:
        _import_split([Path(f) for f in files], json_path, fmt, show_origins, redact=redact, rules=not no_rules)
        return
    plan_outputs({"--json": json_path}, {"FILE": list(files), "--storage": list(storage_files)})
    if files:
        rig = import_files([Path(f) for f in files])
    else:
        from gpuadvisor.facts import Rig, Source

        rig = Rig(source=Source(kind="imported", files=list(storage_files)))
    if storage_files:
        rig.storage = import_storage(list(storage_files), rig)
        rig.provenance["storage"] = "imported"
    if not no_rules:  # the findings, as scan gives them: saved with the scan, shown below the facts
        from gpuadvisor.rules import evaluate

        evaluate(rig)
    if redact:
        from gpuadvisor.redact import redact as redact_rig

        redact_rig(rig, inputs=files)
    if json_path == "-":
        click.echo(rig.to_json(), nl=False)
        return
    if json_path:
        write_json(rig, json_path)
    if fmt == "json":
        click.echo(rig.to_json(), nl=False)
    else:
        from gpuadvisor.commands.common import verbose
        from gpuadvisor.render.text.rig import render_rest, render_scan

        color = use_color()
        click.echo(render_scan(rig, color=color, verbose=verbose()), nl=False)
        if show_origins:
            click.echo("\nWhere each fact came from")
            for key, origin in rig.origins.items():
                click.echo(f"  {key}: {origin}")
        click.echo(render_rest(rig, color=color, findings=not no_rules), nl=False)
    if json_path:
        click.echo(
            f"scan saved to {json_path} ({plural(len(rig.gpus), 'GPU')}, "
            f"{plural(len(rig.measurements), 'measurement')})",
            err=True,
        )


def split_path(json_path: str, n: int) -> str:
    """``scan.json`` -> ``scan-2.json`` (machine 2 of an ``import --split``)."""
    p = Path(json_path)
    return str(p.with_name(f"{p.stem}-{n}{p.suffix}")) if p.suffix else f"{json_path}-{n}"


def _import_split(
    paths: list[Path], json_path: str | None, fmt: str, show_origins: bool, *, redact: bool = False, rules: bool = True
) -> None:
    import json

    from gpuadvisor.commands.common import use_color, write_json
    from gpuadvisor.importers import import_machines

    rigs = import_machines(paths)
    if rules:
        from gpuadvisor.rules import evaluate

        for r in rigs:
            evaluate(r)
    if redact:
        from gpuadvisor.redact import redact as redact_rig

        for r in rigs:
            redact_rig(r, inputs=[str(p) for p in paths])
    if json_path == "-" or fmt == "json":
        click.echo(json.dumps([r.to_dict() for r in rigs], indent=2) + "\n", nl=False)
    if json_path and json_path != "-":
        from gpuadvisor.output import plan_outputs

        outs = [split_path(json_path, k) for k in range(1, len(rigs) + 1)]
        # before the first is written: none over an input (by inode too), none a link
        plan_outputs({f"--json ({out})": out for out in outs}, {"FILE": [str(p) for p in paths]})
        for rig, out in zip(rigs, outs, strict=True):
            write_json(rig, out)
            click.echo(
                f"machine {outs.index(out) + 1}: {', '.join(rig.source.files)} -> {out} "
                f"({plural(len(rig.gpus), 'GPU')}, "
                f"{plural(len(rig.measurements), 'measurement')})",
                err=True,
            )
    if json_path == "-" or fmt == "json":
        return
    from gpuadvisor.render.text.rig import render_scan

    for k, rig in enumerate(rigs, 1):
        click.echo(f"=== machine {k} of {len(rigs)}: {', '.join(rig.source.files)}")
        click.echo(render_scan(rig, color=use_color()), nl=False)
        if show_origins:
            click.echo("\nWhere each fact came from")
            for key, origin in rig.origins.items():
                click.echo(f"  {key}: {origin}")
