"""gpuadvisor advise: how to train (or serve) a model on this rig."""

from __future__ import annotations

import json
from typing import Any

import click

from gpuadvisor.advisor.options import framework_option, workload_kwargs, workload_options
from gpuadvisor.commands.common import get_rig, rig_source_options
from gpuadvisor.commands.options import format_option, output_option
from gpuadvisor.commands.storage import checkpoint_options, storage_options
from gpuadvisor.errors import InputError

_NO_FILE = "\x00no file"  # `--json` given without a file name: the old spelling of --format json


@click.command()
@rig_source_options
@workload_options
@framework_option
@format_option("text", "json", help="What to print on stdout (or write with -o).")
@click.option(
    "--json",
    "json_path",
    metavar="FILE",
    is_flag=False,
    flag_value=_NO_FILE,
    default=None,
    help="Save the advice as JSON to FILE ('-' for stdout), as --json does in every command.",
)
@output_option("Write what --format prints to PATH instead of stdout.")
@storage_options
@checkpoint_options
@click.option(
    "--explain",
    is_flag=True,
    help="Also the memory breakdown, the whole launch snippet (configs, script lines), "
    "the batch note and every assumption with its source.",
)
def advise(
    from_: str | None,
    simulate_: str | None,
    sysfs_root: str,
    import_torch: bool,
    fmt: str,
    json_path: str | None,
    output: str | None,
    explain: bool,
    framework: str | None = None,
    **kw: Any,
) -> None:
    """Recommend a parallelism strategy for a model on this rig (or --from a scan, or --simulate a preset).

    Every candidate (DDP, ZeRO-1/2/3 and FSDP sharding, tensor parallel inside an NVLink domain, pipeline
    across slow links or nodes, CPU offload, activation checkpointing) is shown with its memory per GPU,
    whether it fits, communication and compute time per step, tokens/s and scaling efficiency; then the
    pick, why, and a launch snippet. With --task inference: the vLLM tensor-parallel size and the KV cache.
    The text is short by default (the table, the pick, the launch command); --explain adds the rest.

    \b
    Examples:
      gpuadvisor advise --simulate dgx-h100 --model llama-3-70b
      gpuadvisor advise --simulate dgx-h100 --model llama-3-70b --explain
      gpuadvisor advise --from scan.json --model llama-3-8b --global-batch 256
      gpuadvisor advise --simulate 4x4090-pcie --model mistral-7b --finetune qlora
      gpuadvisor advise --simulate dgx-h100 --model llama-3-70b --task inference --context 8192 --concurrency 32
      gpuadvisor advise --simulate dgx-h100 --model llama-3-8b --framework jax
    """
    from gpuadvisor.advisor import Workload
    from gpuadvisor.advisor import advise as run_advice
    from gpuadvisor.output import plan_outputs, write_atomic
    from gpuadvisor.render.text.advice import render_advice

    if json_path == _NO_FILE or (json_path and json_path.startswith("-") and json_path != "-"):
        raise InputError(
            "advise --json now takes a file name, as in every command: use --format json to print "
            "JSON on stdout, or --json FILE to save it"
        )
    if json_path == "-" and output is None:
        fmt, json_path = "json", None  # --json -: the JSON on stdout, as import --json - does
    plan_outputs(
        {"--json": json_path if json_path != "-" else None, "-o": output},
        {"--from": from_, "--simulate": simulate_, "--model": kw.get("model"), "--hf-config": kw.get("hf_config")},
    )
    if framework in ("vllm", "sglang", "trtllm", "llamacpp", "ollama") and kw.get("engine") is None:
        kw["engine"] = framework  # the serving framework asked for is the engine predicted and launched
    if framework and not kw.get("stack"):  # --framework megatron/deepspeed/jax: the time model uses its kernels
        from gpuadvisor.advisor.frameworks import STACK

        kw["stack"] = STACK.get(framework)
    from gpuadvisor.commands.storage import attach_checkpoint, pop_storage_options, prepare

    store = pop_storage_options(kw)
    workload = Workload.from_options(**workload_kwargs(kw))
    rig = get_rig(from_, simulate_, sysfs_root=sysfs_root, import_torch=import_torch)
    prepare(rig, store, sysfs_root)
    advice = run_advice(rig, workload)
    if framework and advice.snippet is not None:
        from gpuadvisor.advisor.frameworks import launch

        advice.snippet.framework = launch(advice, framework)
    plan = attach_checkpoint(rig, advice, store)
    as_json = json.dumps(advice.to_json_dict(), indent=2, allow_nan=False) + "\n"
    if json_path == "-":
        click.echo(as_json, nl=False)
    elif json_path:
        write_atomic(json_path, as_json, what="advice")
        click.echo(f"advice saved to {json_path}", err=True)
    text = as_json if fmt == "json" else render_advice(advice, explain=explain)
    if plan is not None and fmt != "json" and (explain or any(v is not None for v in store.values())):
        # Asked for (a storage option, or --explain): the default text stays the short one.
        from gpuadvisor.render.text.checkpoint import render_text

        text += "\n" + render_text(plan)
    if output:
        write_atomic(output, text, what="advice")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
