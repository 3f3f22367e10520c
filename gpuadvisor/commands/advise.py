"""gpuadvisor advise: how to train (or serve) a model on this rig."""
from __future__ import annotations

import json
from typing import Any

import click

from gpuadvisor.advisor.options import workload_kwargs, workload_options
from gpuadvisor.commands.common import get_rig, rig_source_options
from gpuadvisor.errors import InputError


@click.command()
@rig_source_options
@workload_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Shorthand for --format json.")
@click.option("-o", "--output", metavar="PATH", help="Write the output to PATH instead of stdout.")
def advise(from_: str | None, simulate_: str | None, sysfs_root: str, import_torch: bool, fmt: str, as_json: bool,
           output: str | None, **kw: Any) -> None:
    """Recommend a parallelism strategy for a model on this rig (or --from a scan, or --simulate a preset).

    Every candidate (DDP, ZeRO-1/2/3 and FSDP sharding, tensor parallel inside an NVLink domain, pipeline
    across slow links or nodes, CPU offload, activation checkpointing) is shown with its memory per GPU,
    whether it fits, communication and compute time per step, tokens/s and scaling efficiency; then the
    pick, why, and a launch snippet. With --task inference: the vLLM tensor-parallel size and the KV cache.

    \b
    Examples:
      gpuadvisor advise --simulate dgx-h100 --model llama-3-70b
      gpuadvisor advise --from scan.json --model llama-3-8b --global-batch 256
      gpuadvisor advise --simulate 4x4090-pcie --model mistral-7b --finetune qlora
      gpuadvisor advise --simulate dgx-h100 --model llama-3-70b --task inference --context 8192 --concurrency 32
    """
    from gpuadvisor.advisor import Workload, render_advice
    from gpuadvisor.advisor import advise as run_advice

    workload = Workload.from_options(**workload_kwargs(kw))
    rig = get_rig(from_, simulate_, sysfs_root=sysfs_root, import_torch=import_torch)
    advice = run_advice(rig, workload)
    text = json.dumps(advice.to_dict(), indent=2) + "\n" if (as_json or fmt == "json") else render_advice(advice)
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise InputError(f"{output}: cannot write ({e.strerror or e})") from None
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
