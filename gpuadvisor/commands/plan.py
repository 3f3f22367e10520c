"""gpuadvisor plan: compare candidate builds for a workload before buying or renting."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import click

from gpuadvisor.commands.options import format_option, html_file_option, json_file_option
from gpuadvisor.errors import InputError
from gpuadvisor.numbers import Finite


def _positive(name: str, v: float | None, *, allow_zero: bool = False) -> float | None:
    if v is None:
        return None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"{name} {v}: expected a finite {'non-negative' if allow_zero else 'positive'} number")
    return v


@click.command()
@click.argument("builds", nargs=-1, metavar="[BUILD.toml|preset:NAME|NAME]...")
@click.option("--model", metavar="NAME", help="A model preset (llama-3-8b, llama-3-70b, ...) or a config.json path.")
@click.option("--params", metavar="N", help="A parameter count instead of a preset, e.g. 7e9.")
@click.option(
    "--task",
    type=click.Choice(["train", "full", "lora", "qlora", "inference"]),
    default="train",
    show_default=True,
    help="Train from scratch / full fine-tune, LoRA, QLoRA, or serve with vLLM.",
)
@click.option(
    "--tokens",
    type=Finite(1),
    metavar="N",
    help="Token budget to process (training), e.g. 2e10: gives time and cost of the job.",
)
@click.option("--seq-len", "seq_len", type=int, help="Training sequence length.")
@click.option("--global-batch", "global_batch", type=int, help="Sequences per optimizer step.")
@click.option("--context", type=int, help="Serving: tokens per sequence (prompt + output).")
@click.option("--concurrency", type=int, help="Serving: sequences served at once.")
@click.option(
    "--days", type=float, help="The job must finish within this many days (a need; slower builds are marked)."
)
@click.option(
    "--budget", "budget_usd", type=float, metavar="USD", help="Spending limit: purchase price (buy) or job cost (rent)."
)
@click.option(
    "--prices", metavar="PRICES.toml", help="Your prices over the reference prices (same format as the shipped table)."
)
@click.option(
    "--kwh-price",
    "kwh_usd",
    type=float,
    default=None,
    metavar="USD",
    help="Electricity price per kWh (default 0.15, assumed).",
)
@click.option(
    "--months", type=float, default=None, help="Months you would keep a bought machine (default 36, assumed)."
)
@click.option(
    "--circuit",
    metavar="V/A|W",
    help="The wall circuit the machine is plugged into: 120V/15A, 230V/16A, 2x120V/20A (two circuits) or 1800W; "
    "a build over it gets the power cap that fits, or is not recommended.",
)
@click.option(
    "--have",
    "have",
    multiple=True,
    metavar="NxGPU",
    help="GPUs you own, e.g. 2x rtx-3090, or the machine you own as a build file (or built-in build name): a build "
    "that uses them counts them at zero cost, one that does not sells them (used price less the selling cost); the "
    "owned machine as it is is a candidate.",
)
@click.option(
    "--add",
    "add",
    multiple=True,
    metavar="NxGPU",
    help="Cards to add to the machine you own (--have), e.g. 2x rtx-3090: the upgrade is a candidate, priced as the "
    "cards plus the platform changes they need (PSU, risers, a board with more slots).",
)
@click.option(
    "--keep-using",
    "keep_using",
    is_flag=True,
    help="You will go on using a bought machine after --months (a short horizon is then not a sale).",
)
@click.option(
    "--hours-per-day",
    "hours_per_day",
    type=float,
    default=None,
    metavar="H",
    help="Hours a day the machine would be used (default 8, assumed): owning and renting are compared at it.",
)
@click.option(
    "--resale",
    type=float,
    default=None,
    metavar="FRACTION",
    help="Fraction of the purchase price a bought machine fetches at the end (default by GPU class, sourced).",
)
@click.option(
    "--pue",
    type=float,
    default=None,
    help="Cooling overhead on the energy (default 1.58 for rack servers, 1.0 for workstations).",
)
@click.option(
    "--finance-rate",
    "finance_apr",
    type=float,
    default=None,
    metavar="APR",
    help="Yearly interest rate of a loan for the purchase, e.g. 0.08 (default: paid in cash).",
)
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp32", "fp8"]), help="Compute precision (as advise).")
@click.option(
    "--weights",
    "weight_quant",
    type=click.Choice(["bf16", "fp8", "int8", "awq-4bit", "gptq-4bit"]),
    help="Serving: weight quantisation (fp8 = vLLM --quantization fp8).",
)
@click.option(
    "--kv-cache-dtype",
    "kv_cache_dtype",
    type=click.Choice(["auto", "bf16", "fp16", "fp8", "fp32"]),
    help="Serving: KV-cache precision.",
)
@click.option(
    "--optimizer",
    type=click.Choice(["adamw", "adam", "sgd", "adam8bit", "paged-adam8bit"]),
    help="Optimizer (as advise).",
)
@click.option("--micro-batch", "micro_batch", type=int, help="Sequences per GPU per forward pass (as advise).")
@click.option(
    "--engine",
    type=click.Choice(["vllm", "sglang", "nim", "llama.cpp", "ollama"]),
    help="Serving engine (default vllm; nim: NVIDIA NIM; llama.cpp/ollama split layers across GPUs: no multi-GPU "
    "speed-up for one stream).",
)
@click.option("--input-len", "input_len", type=click.IntRange(1, 2**24), help="Serving: prompt tokens per request.")
@click.option("--output-len", "output_len", type=click.IntRange(1, 2**24), help="Serving: output tokens per request.")
@click.option(
    "--from-nvidia-smi",
    "nvidia_smi_dirs",
    multiple=True,
    metavar="DIR",
    help="A machine on offer, from its nvidia-smi/lspci outputs (as gpuadvisor import), as a candidate.",
)
@click.option(
    "--offer-price",
    "offer_prices",
    multiple=True,
    type=float,
    metavar="USD",
    help="The asking price of each --from-nvidia-smi machine, in the same order.",
)
@click.option(
    "--offer-ram",
    "offer_ram",
    multiple=True,
    type=float,
    metavar="GIB",
    help="The host RAM the seller reports for each --from-nvidia-smi machine (GiB), in the same order.",
)
@click.option(
    "--calibrate-from",
    "calibrate_from",
    metavar="SCAN.json",
    help="Carry a machine you own's measured efficiency over to the candidates.",
)
@format_option("text", "json")
@click.option(
    "--checkpoint-every",
    "checkpoint_every",
    metavar="DURATION",
    help="Checkpoint interval for the stall on a build's [storage] drives (30m, 2h, 900s; default hourly).",
)
@json_file_option("Save the plan as JSON.")
@html_file_option("Write the self-contained HTML pre-purchase report.")
def plan(
    builds: tuple[str, ...],
    model: str | None,
    params: str | None,
    task: str,
    tokens: float | None,
    seq_len: int | None,
    global_batch: int | None,
    context: int | None,
    concurrency: int | None,
    days: float | None,
    budget_usd: float | None,
    prices: str | None,
    kwh_usd: float | None,
    months: float | None,
    circuit: str | None,
    have: tuple[str, ...],
    add: tuple[str, ...],
    keep_using: bool,
    hours_per_day: float | None,
    resale: float | None,
    pue: float | None,
    finance_apr: float | None,
    precision: str | None,
    weight_quant: str | None,
    kv_cache_dtype: str | None,
    optimizer: str | None,
    micro_batch: int | None,
    engine: str | None,
    input_len: int | None,
    output_len: int | None,
    nvidia_smi_dirs: tuple[str, ...],
    offer_prices: tuple[float, ...],
    offer_ram: tuple[float, ...],
    calibrate_from: str | None,
    fmt: str,
    json_path: str | None,
    html_path: str | None,
    checkpoint_every: str | None = None,
) -> None:
    """Compare candidate builds for a workload: fits, strategy, speed, time and cost of the job, power, findings.

    With no builds named, the built-in candidates are ranked (a single RTX 4090, workstations with RTX
    3090/4090/5090 and RTX 6000 Ada, an 8x L40S server, A100/H100/H200/B200 systems, two-node clusters, and
    renting data-centre GPUs by the hour). The recommendation keeps --budget, never names a build that fails
    its own design rules, and compares owning and renting at --hours-per-day over --months.

    \b
    Examples:
      gpuadvisor plan --model llama-3-70b --task qlora --tokens 2e8
      gpuadvisor plan builds/*.toml preset:dgx-h100 --model llama-3-8b --tokens 2e10 --budget 60000 --html plan.html
      gpuadvisor plan --model llama-3-70b --task inference --context 8192 --concurrency 32 --format json
      gpuadvisor plan --from-nvidia-smi seller/ 4x4090-tr-pro --model llama-3-8b --task full --tokens 1e9
      gpuadvisor plan --model llama-3-8b --task full --tokens 2e10 --hours-per-day 20 --months 36 --prices mine.toml

    A prices file (--prices) overrides any reference row; an offered machine is priced by its name, or with
    --offer-price:

    \b
      [[gpu]]
      id = "rtx-4090"
      usd = 1650
      date = "2026-11"
      source = "local shop quote"
      [[system]]
      id = "offered:seller"
      usd = 60000
      date = "2026-11"
      source = "seller's quote"
      [[cloud]]
      gpu = "h100-sxm5-80gb"
      usd_per_gpu_hour = 2.10
      date = "2026-11"
      source = "our provider"
    """
    from gpuadvisor.catalog.platforms import load_prices
    from gpuadvisor.output import plan_outputs
    from gpuadvisor.plan import run_plan
    from gpuadvisor.plan.costs import DEFAULT_HOURS_PER_DAY, DEFAULT_KWH_USD, DEFAULT_MONTHS, Ownership
    from gpuadvisor.plan.evaluate import Need

    plan_outputs(
        {"--json": json_path, "--html": html_path},
        {
            "BUILD": [b for b in builds if not b.startswith("preset:")],
            "--prices": prices,
            "--from-nvidia-smi": list(nvidia_smi_dirs),
            "--calibrate-from": calibrate_from,
            "--model": model,
        },
    )
    for name, v in (
        ("--tokens", tokens),
        ("--days", days),
        ("--budget", budget_usd),
        ("--months", months),
        ("--hours-per-day", hours_per_day),
        ("--pue", pue),
    ):
        _positive(name, v)
    _positive("--kwh-price", kwh_usd, allow_zero=True)
    _positive("--finance-rate", finance_apr, allow_zero=True)
    _positive("--resale", resale, allow_zero=True)
    if hours_per_day is not None and hours_per_day > 24:
        raise InputError(f"--hours-per-day {hours_per_day:g}: a day has 24 hours")
    if resale is not None and resale > 1:
        raise InputError(f"--resale {resale:g}: a fraction of the purchase price, 0 to 1 (e.g. 0.4)")
    if pue is not None and pue < 1:
        raise InputError(f"--pue {pue:g}: power usage effectiveness is at least 1.0")
    if finance_apr is not None and finance_apr > 1:
        raise InputError(f"--finance-rate {finance_apr:g}: a yearly rate as a fraction, e.g. 0.08 for 8 %")
    if micro_batch is not None and micro_batch < 1:
        raise InputError(f"--micro-batch {micro_batch}: expected a positive whole number")
    for name, iv in (
        ("--seq-len", seq_len),
        ("--global-batch", global_batch),
        ("--context", context),
        ("--concurrency", concurrency),
    ):
        if iv is not None and iv < 1:
            raise InputError(f"{name} {iv}: expected a positive whole number")
    if task == "inference" and tokens is not None:
        raise InputError("--tokens is a training budget: for --task inference give --context and --concurrency")
    price_table = load_prices(prices)
    owned_gpus, owned = _owned(have, add, price_table)
    candidates = _candidates(builds, nvidia_smi_dirs, offer_prices, offer_ram) + owned
    calibration = None
    if calibrate_from:
        from gpuadvisor.plan.calibrate import load_calibration

        calibration = load_calibration(calibrate_from)
    need = Need(task, tokens, context, concurrency, days, budget_usd, checkpoint_every, engine)
    if engine in ("llama.cpp", "ollama"):
        engine = None  # timed by the plan on the advisor's serving model (the advisor's engines are vLLM-like)
    if weight_quant == "fp8" and precision in (None, "fp8"):
        precision = "fp8"  # vLLM --quantization fp8: the advisor's fp8 weights
    model_kw: dict[str, Any] = {
        "model": model,
        "params": params,
        "seq_len": seq_len,
        "global_batch": global_batch,
        "precision": precision,
        "kv_cache_dtype": kv_cache_dtype,
        "optimizer": optimizer,
        "micro_batch": micro_batch,
        "weight_quant": weight_quant,
        # the advisor's serving model: vLLM --quantization (4-bit AWQ/GPTQ with group scales, int8, fp8)
        "quantization": {"int8": "int8", "awq-4bit": "awq", "gptq-4bit": "gptq", "fp8": "fp8"}.get(weight_quant or ""),
        "engine": engine,
        "input_len": input_len,
        "output_len": output_len,
    }
    given = {
        "kwh_usd": kwh_usd,
        "months": months,
        "hours_per_day": hours_per_day,
        "resale": resale,
        "pue": pue,
        "finance_apr": finance_apr,
    }
    own = Ownership(
        kwh_usd=DEFAULT_KWH_USD if kwh_usd is None else kwh_usd,
        months=months or DEFAULT_MONTHS,
        hours_per_day=hours_per_day or DEFAULT_HOURS_PER_DAY,
        resale=resale,
        pue=pue,
        finance_apr=finance_apr or 0.0,
        given=tuple(k for k, v in given.items() if v is not None),
        keep_using=keep_using,
        have=owned_gpus,
    )
    from gpuadvisor.power import parse_circuit

    result = run_plan(
        candidates,
        need,
        model_kw,
        prices=price_table,
        own=own,
        calibration=calibration,
        circuit=parse_circuit(circuit) if circuit else None,
    )
    data = result.to_dict()
    if json_path:
        from gpuadvisor.plan.outputs import write_text

        write_text(json_path, json.dumps(data, indent=2, allow_nan=False) + "\n")
        if json_path != "-":
            click.echo(f"plan written to {json_path}", err=True)
    if html_path:
        from gpuadvisor.plan.outputs import write_text
        from gpuadvisor.render.html.plan import render_html

        write_text(html_path, render_html(result))
        if html_path != "-":  # "-": the report is stdout
            click.echo(f"HTML plan report written to {html_path}", err=True)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, allow_nan=False))
        return
    from gpuadvisor.render.text.plan import render_text

    click.echo(render_text(result), nl=False)


def _owned(have: tuple[str, ...], add: tuple[str, ...], prices: Any) -> tuple[tuple[tuple[str, int], ...], list[Any]]:
    """What the buyer owns: the GPUs (--have NxGPU, and those of an owned machine), and the candidates it makes:
    the owned machine as it is and, with --add, its upgrade."""
    from pathlib import Path

    from gpuadvisor.plan.build import builtin_names
    from gpuadvisor.plan.owned import parse_have
    from gpuadvisor.plan.upgrade import owned_machine, parse_add, upgraded

    def machine(h: str) -> bool:
        return h.endswith(".toml") or "/" in h or h.startswith("preset:") or h in builtin_names() or Path(h).exists()

    for opt, items in (("--have", have), ("--add", add)):
        bare = next((h for h in items if re.fullmatch(r"\s*\d{1,3}\s*x\s*", h)), None)
        if bare is not None:
            raise InputError(f'{opt} {bare}: the GPU is missing: quote the pair, e.g. {opt} "{bare.strip()} rtx-3090"')
    refs = [h for h in have if machine(h)]
    if len(refs) > 1:
        raise InputError(f"--have given {len(refs)} machines ({', '.join(refs)}): give the one you own")
    gpus = parse_have(tuple(h for h in have if not machine(h)))
    kinds = parse_add(add)
    if kinds and not have:
        raise InputError("--add: cards added to what? Give the machine or GPUs you own with --have")
    base = owned_machine(refs[0] if refs else None, gpus) if (refs or kinds) else None
    if kinds and base is None:
        raise InputError(
            "--add: the machine the GPUs sit in is not known: give it as a build file, e.g. --have mybox.toml "
            "(gpu, count, cpu, psu_watts)"
        )
    if base is None:
        return gpus, []
    if refs:
        merged = dict(gpus)
        for g, n in base.kinds:
            merged[g.id] = merged.get(g.id, 0) + n
        gpus = tuple(merged.items())
    return gpus, [base] + ([upgraded(base, kinds, prices)] if kinds else [])


def _candidates(
    builds: tuple[str, ...],
    nvidia_smi_dirs: tuple[str, ...],
    offer_prices: tuple[float, ...],
    offer_ram: tuple[float, ...] = (),
) -> list[Any]:
    """The builds to compare: those named, then the machines on offer (with their asking prices); none named,
    the built-in builds. Two with one name are an error."""
    from gpuadvisor.plan import builtin_builds, load_build

    candidates = [load_build(b) for b in builds]
    if len(offer_prices) > len(nvidia_smi_dirs):
        raise InputError(
            f"--offer-price given {len(offer_prices)} times for {len(nvidia_smi_dirs)} --from-nvidia-smi "
            "machine(s): give one price per offered machine, in the same order"
        )
    if len(offer_ram) > len(nvidia_smi_dirs):
        raise InputError(
            f"--offer-ram given {len(offer_ram)} times for {len(nvidia_smi_dirs)} --from-nvidia-smi machine(s): give "
            "one per offered machine, in the same order"
        )
    for v in offer_ram:
        if not (math.isfinite(v) and 1 <= v <= 65536):
            raise InputError(f"--offer-ram {v:g}: the host RAM in GiB, 1 to 65,536")
    for i, d in enumerate(nvidia_smi_dirs):
        offered = _offered(d, offer_ram[i] if i < len(offer_ram) else None)
        if i < len(offer_prices):
            _positive("--offer-price", offer_prices[i])
            offered.price = {"system_usd": offer_prices[i], "source": "the asking price given with --offer-price"}
        candidates.append(offered)
    if not candidates:
        candidates = builtin_builds()
    names = [c.name for c in candidates]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"builds named twice: {', '.join(dup)} (each candidate needs its own name)")
    return candidates


def _offered(directory: str, ram_given: float | None = None) -> Any:
    """A machine on offer, from the outputs the seller sent: its real GPUs, links and host as a candidate."""
    from pathlib import Path

    from gpuadvisor.catalog.platforms import find_cpu, find_gpu_spec
    from gpuadvisor.plan.build import Build
    from gpuadvisor.plan.offer import import_offer

    rig, skipped = import_offer(Path(directory))
    if not rig.gpus:
        raise InputError(f"{directory}: the outputs show no GPU: nothing to plan with")
    if not rig.gpus[0].name:
        raise InputError(
            f"{directory}: the outputs do not name the GPU model: add the seller's nvidia-smi -q (or plain nvidia-smi) "
            "output"
        )
    spec = find_gpu_spec(rig.gpus[0].name)
    if spec is None:
        raise InputError(f"{directory}: GPU {rig.gpus[0].name!r} is not in the catalog: it cannot be planned")
    notes = list(skipped)
    if ram_given is not None:
        rig.host.memory_total_bytes = int(ram_given * 2**30)
        notes.append(f"host RAM {ram_given:g} GiB, as the seller reports it (--offer-ram)")
    ram_gib = rig.host.memory_total_bytes / 2**30 if rig.host.memory_total_bytes else None
    if ram_gib is None:  # assumed, never dropped: what such a machine ships with (2 GB of RAM per GB of GPU memory)
        ram_gib = 2 * len(rig.gpus) * spec.memory_bytes / 2**30
        rig.host.memory_total_bytes = int(ram_gib * 2**30)
        notes.append(
            f"host RAM not in the seller's outputs: assumed {ram_gib:,.0f} GiB (twice the GPU memory, what "
            "such servers ship with): ask the seller (free -g) and give it with --offer-ram"
        )
    cpu = find_cpu(rig.host.cpu_model or "") if rig.host.cpu_model else None
    if cpu is None:
        notes.append("CPU not in the seller's outputs or not in the catalog: its power is assumed (ask for lscpu)")
    b = Build(
        name=f"offered:{Path(directory).name}",
        title=f"offered machine ({Path(directory).name}): {len(rig.gpus)}x {spec.name}",
        origin=directory,
        gpu=spec,
        count=len(rig.gpus),
        cpu=cpu,
        sockets=rig.host.sockets or (2 if len(rig.gpus) >= 8 else 1),
        ram_gib=ram_gib,
        layout="given",
        rig=rig,
        notes=notes,
    )
    return b
