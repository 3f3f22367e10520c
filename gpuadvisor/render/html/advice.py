"""The strategy section of the HTML report, from the advisor's Advice (``rig.advice``, gpuadvisor.advice_model).

``advisor_view`` reads the typed advice (task, pick, reason, candidates, snippet, workload, rig, excluded,
smallest_rig, assumptions, notes). Any other object goes through ``html.advice_view``, which renders generically.
Every number shown is one the advice holds (bytes shown as GiB, 2**30 bytes, as the advisor's terminal output does).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from gpuadvisor.advice_model import (
    ADVICE_KIND,
    Advice,
    Candidate,
    ServingCandidate,
    ServingResult,
    Snippet,
    TrainCandidate,
    TrainingSnippet,
)
from gpuadvisor.render.html import svg_charts
from gpuadvisor.render.text.advice import fmt_gib, fmt_num, fmt_secs, fmt_tokens

GiB = 2**30

# Memory segments of a training candidate (advice_model.MemoryFigures) and of a serving option.
TRAIN_SEGMENTS = [
    ("params_bytes", "parameters"),
    ("grads_bytes", "gradients"),
    ("optimizer_bytes", "optimizer states"),
    ("activations_bytes", "activations"),
    ("gathered_bytes", "gathered unit"),
    ("buffers_bytes", "DeepSpeed buckets"),
    ("overhead_bytes", "overhead"),
]
SERVE_SEGMENTS = [
    ("weights_bytes", "weights"),
    ("activation_peak_bytes", "activation peak"),
    ("runtime_bytes", "runtime"),
    ("kv_cache_needed_bytes", "KV cache needed"),
]


def gib(x: Any) -> str:
    return fmt_gib(x, "—")


def secs(x: Any) -> str:
    return fmt_secs(x, "—")


def num(x: Any) -> str:
    return fmt_num(x, "—")


def pct(x: Any) -> str:
    return "—" if not isinstance(x, int | float) else f"{x:.0%}"


def _row_css(c: Candidate) -> str:
    if c.status == "pick":
        return "pick"
    return "nofit" if c.fits is False else ""


def _row(c: Candidate, cells: list[str]) -> dict[str, Any]:
    """A candidate's table row: its cells, then its status with the reason, styled as the pick or a misfit."""
    return {"css": _row_css(c), "cells": [*cells, c.status + (f": {c.reason}" if c.reason else "")]}


def _fits(c: Candidate) -> str:
    return "yes" if c.fits else "no"


def _nvlink_cell(c: ServingCandidate) -> str:
    """Whether the GPUs of a serving layout talk over NVLink; a one-GPU layout has no GPU-to-GPU traffic."""
    if c.gpus == 1:
        return "— (one GPU)"
    return "yes" if c.nvlink else "no"


C = TypeVar("C", TrainCandidate, ServingCandidate)
Columns = list[tuple[str, Callable[[C], str]]]

# The candidates tables: each column's header and its cell; the last column, the status, is every row's own (_row).
TRAIN_COLUMNS: Columns[TrainCandidate] = [
    ("strategy", lambda c: c.name),
    ("framework", lambda c: c.framework),
    ("DP×TP×PP", lambda c: f"{c.data_parallel}×{c.tensor_parallel}×{c.pipeline_parallel}"),
    ("memory / GPU (GiB)", lambda c: f"{gib(c.memory.total_bytes)} of {gib(c.capacity_bytes)}"),
    ("fits", _fits),
    ("headroom", lambda c: pct(c.headroom_fraction) if c.fits else "—"),
    ("comm / step", lambda c: secs(c.comm.total_seconds)),
    ("compute / step", lambda c: secs(c.compute_seconds)),
    ("step", lambda c: secs(c.step_seconds)),
    ("tokens/s", lambda c: fmt_tokens(c, "—")),
    ("speed vs ideal", lambda c: pct(c.ideal_speed_fraction)),
]
SERVE_COLUMNS: Columns[ServingCandidate] = [
    ("layout", lambda c: c.name),
    ("weights / GPU (GiB)", lambda c: gib(c.weights_bytes)),
    ("memory used (GiB)", lambda c: f"{gib(c.memory_used_bytes)} of {gib(c.capacity_bytes)}"),
    ("KV cache capacity (tokens)", lambda c: num(c.kv_capacity_tokens)),
    ("sequences at context", lambda c: num(c.max_sequences_at_context)),
    ("NVLink", _nvlink_cell),
    ("fits", _fits),
]


def _table(columns: Columns[C], cands: list[C]) -> dict[str, Any]:
    rows = [_row(c, [cell(c) for _, cell in columns]) for c in cands]
    return {"columns": [header for header, _ in columns] + ["status"], "rows": rows}


def _serving_rows(sv: ServingResult | None) -> list[tuple[str, str]]:
    """The pick's predicted serving figures (advisor/serving.py), each with its band."""
    if sv is None or not sv.fits:
        return []

    def rng(key: str, f: Any) -> str:
        x = sv.band.get(key)
        return f" (range {f(x.low)}-{f(x.high)})" if x else ""

    return [
        (
            "prefill / decode",
            f"{secs(sv.prefill_s)} per request ({sv.prefill_bound}-bound) / "
            f"{secs(sv.decode_step_s)} per step at batch {sv.running} ({sv.decode_bound}-bound)",
        ),
        ("TTFT / ITL", f"{secs(sv.ttft_s)}{rng('ttft_s', secs)} / {secs(sv.itl_s)}{rng('itl_s', secs)}"),
        (
            "output tokens/s",
            f"{num(sv.output_tokens_per_second)}{rng('output_tokens_per_second', num)}"
            + (f" over {sv.replicas} replicas" if sv.replicas > 1 else "")
            + f", {num(sv.output_tokens_per_second_per_user)} per user, "
            f"{sv.concurrency} x ({sv.input_len} in + {sv.output_len} out) tokens"
            + (" as one batch run" if sv.offline else ""),
        ),
        ("running batch", f"{sv.running} (the KV cache holds {sv.max_running} requests of this length)"),
    ]


def _memory_chart(cands: list[Candidate]) -> svg_charts.StackedBars | None:
    rows = []
    for c in cands:
        if isinstance(c, TrainCandidate):
            parts = [(label, float(getattr(c.memory, key) or 0) / GiB) for key, label in TRAIN_SEGMENTS]
            total_gib = float(c.memory.total_bytes) / GiB
        else:  # memory used (weights, activation peak, runtime) plus the KV cache the request needs: the bar drawn
            parts = [(label, float(getattr(c, key) or 0) / GiB) for key, label in SERVE_SEGMENTS]
            total_gib = sum(v for _, v in parts)
        capacity = float(c.capacity_bytes) / GiB
        note = ""
        if c.fits is False and total_gib <= capacity:
            note = "fits GPU memory; rejected (see the table)"  # e.g. CPU offload short of host RAM
        rows.append((c.name, parts, capacity, total_gib, _row_css(c), note))
    if not rows:
        return None
    return svg_charts.stacked_bars(rows, unit="GiB")


def _snippets(snippet: Snippet | None) -> list[tuple[str, str]]:
    if snippet is None:
        return []
    if isinstance(snippet, TrainingSnippet):
        values: list[tuple[Any, str]] = [
            (snippet.torchrun, "launch (torchrun)"),
            (snippet.code, "in the training script"),
            (snippet.deepspeed_config, "ds_config.json (DeepSpeed)"),
            (snippet.fsdp, "FSDP settings"),
            (snippet.accelerate_config, "accelerate config (YAML)"),
            (snippet.accelerate_launch, "launch (accelerate)"),
        ]
    else:
        values = [("\n".join(snippet.commands) if snippet.commands else snippet.command, "launch")]
    return [
        (title, v if isinstance(v, str) else json.dumps(v, indent=2))
        for v, title in values
        if not (v is None or v == "" or v == {})
    ]


def _pick_rows(pd: Candidate | None) -> list[tuple[str, str | list[str]]]:
    """The pick's table: its layout, memory, step and speed (training), or its sizes, KV cache and serving figures."""
    key: list[tuple[str, str | list[str]]] = []
    if isinstance(pd, TrainCandidate):
        key = [
            ("framework", pd.framework),
            (
                "layout",
                f"data parallel {pd.data_parallel} × tensor parallel {pd.tensor_parallel} × pipeline "
                f"{pd.pipeline_parallel}"
                + (f", ZeRO stage {pd.zero_stage}" if pd.zero_stage else "")
                + (f", CPU offload: {pd.cpu_offload}" if pd.cpu_offload not in (None, "none") else "")
                + (", activation checkpointing" if pd.activation_checkpointing else ""),
            ),
            (
                "memory per GPU",
                f"{gib(pd.memory.total_bytes)} of {gib(pd.capacity_bytes)} GiB ({pct(pd.headroom_fraction)} free)",
            ),
            (
                "step",
                f"{secs(pd.step_seconds)} (compute {secs(pd.compute_seconds)}, communication "
                f"{secs(pd.comm.total_seconds)}; {secs(pd.step_seconds_no_overlap)} without overlap)",
            ),
            ("tokens/s", fmt_tokens(pd, "—")),
            ("speed vs ideal", pct(pd.ideal_speed_fraction)),
            (
                "batch",
                f"global {pd.global_batch}, gradient accumulation {pd.gradient_accumulation}, "
                f"{num(pd.tokens_per_step)} tokens per step",
            ),
        ]
        if pd.comm.detail:
            key.append(("communication", [str(line) for line in pd.comm.detail]))  # one row, one line per part
    elif isinstance(pd, ServingCandidate):
        key = [
            ("tensor parallel size", str(pd.tensor_parallel_size)),
            ("pipeline parallel size", str(pd.pipeline_parallel_size)),
            ("memory per GPU", f"{gib(pd.memory_used_bytes)} of {gib(pd.capacity_bytes)} GiB"),
            (
                "KV cache",
                f"{num(pd.kv_capacity_tokens)} tokens ({num(pd.max_sequences_at_context)} sequences at "
                "the requested context)",
            ),
        ]
        key += _serving_rows(pd.serving)
    return key


def _workload_rows(a: Advice) -> list[tuple[str, str]]:
    w, task = a.workload, a.task
    params = w.params
    rows = [
        ("model", str(w.model or w.model_label or "—")),
        ("parameters", f"{params / 1e9:.2f} B" if isinstance(params, int | float) else "—"),
        ("task", task + (f", {w.finetune}" if w.finetune and task == "train" else "")),
        ("precision", w.precision),
    ]
    if task == "train":
        rows += [
            ("optimizer", w.optimizer),
            ("sequence length", str(w.seq_len)),
            ("micro-batch", str(w.micro_batch)),
            ("global batch", _global_batch(a)),
        ]
    else:
        rows += [
            ("context", str(w.context or "—")),
            ("concurrent sequences", str(w.concurrency)),
            ("KV cache dtype", w.kv_cache_dtype),
        ]
    if w.architecture.get("source"):
        rows.append(("architecture from", str(w.architecture["source"])))
    return rows


def _rig_rows(a: Advice) -> list[tuple[str, str]]:
    r = a.rig
    rows = [("rig", r.label), ("GPU memory", f"{gib(r.memory_per_gpu_bytes)} GiB ({r.memory_source})")]
    if r.peak_source:
        rows.append(("peak", r.peak_source))
    if r.busbw_source:
        rows.append(("all-reduce busbw", r.busbw_source))
    if r.inter_node_source:
        rows.append(("across nodes", r.inter_node_source))
    return rows


def advisor_view(advice: Any) -> dict[str, Any]:
    """View of the advisor's Advice (or its JSON) for the template."""
    a = Advice.coerce(advice)
    sr = a.smallest_rig
    smallest = [
        (title, f"{s.description} ({s.strategy})")
        for s, title in (
            (sr.smallest if sr else None, "smallest rig that fits"),
            (sr.same_gpu if sr else None, "with this GPU"),
        )
        if s is not None
    ]
    key = _pick_rows(a.pick)
    if a.batch and a.batch.lr_note:
        key.append(("learning rate", a.batch.lr_note))
    return {
        "advisor": True,
        "task": a.task,
        "fits": a.fits,
        "below_target": below_target(a),
        "pick_name": a.pick_name,
        "reason": a.reason,
        "key": key,
        "snippets": _snippets(a.snippet),
        "table": _table(TRAIN_COLUMNS, a.training) if a.task == "train" else _table(SERVE_COLUMNS, a.serving),
        "chart": _memory_chart(a.candidates),
        "excluded": [(e.strategy, e.reason) for e in a.excluded],
        "workload": _workload_rows(a),
        "rig": _rig_rows(a),
        "smallest": smallest,
        "assumptions": [str(x) for x in a.assumptions],
        "notes": [str(x) for x in a.notes],
        "measured": bool(a.rig.busbw_measured),
    }


def _global_batch(a: Advice) -> str:
    """The global batch given, or the one the advisor assumed (saying so), or a dash."""
    if a.workload.global_batch:
        return str(a.workload.global_batch)
    if a.batch is not None:
        return f"{a.batch.global_batch:,} (none given: assumed, see the notes)"
    return "— (none given)"


def is_advisor_dict(a: Any) -> bool:
    """Whether ``a`` is the advisor's advice (typed, or its JSON), not another tool's object."""
    return isinstance(a, Advice) or (isinstance(a, dict) and a.get("kind") == ADVICE_KIND)


def below_target(a: Advice) -> str | None:
    """Why the pick is below the advisor's own efficiency target for this many GPUs (the box is then not green), or
    None. Efficiency is the advisor's one figure, the fraction of the ideal speed (``ideal_speed_fraction``); the
    target is the advisor's (advisor.constants.target_efficiency)."""
    eff = a.pick.ideal_speed_fraction if isinstance(a.pick, TrainCandidate) else None
    gpus = a.rig.total_gpus
    if a.task != "train" or eff is None or gpus < 2:
        return None
    from gpuadvisor.advisor.constants import target_efficiency

    target = target_efficiency(gpus)
    if eff >= target:
        return None
    return f"{eff:.0%} of the ideal speed, below the {target:.0%} the advisor aims for on {gpus} GPUs"
