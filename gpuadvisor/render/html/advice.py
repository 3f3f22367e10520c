"""The strategy section of the HTML report, from the advisor's dict (``rig.advice``, gpuadvisor.advisor).

``advisor_view`` reads the advisor's own shape (``kind == "gpuadvisor-advice"``: task, pick, reason,
candidates, pick_detail, snippet, workload, rig, excluded, smallest_rig, assumptions, notes). Any other dict
goes through ``html.advice_view``, which renders generically. Every number shown is one the dict holds
(bytes shown as GiB, 2**30 bytes, as the advisor's terminal output does).
"""

from __future__ import annotations

import json
from typing import Any

from gpuadvisor.render.html import svg_charts
from gpuadvisor.render.text.advice import fmt_gib, fmt_num, fmt_secs, fmt_tokens

GiB = 2**30
ADVICE_KIND = "gpuadvisor-advice"

# Memory segments of a training candidate (advisor.memory.MemoryBreakdown) and of a serving option.
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


def _row_css(c: dict[str, Any]) -> str:
    if c.get("status") == "pick":
        return "pick"
    return "nofit" if c.get("fits") is False else ""


def _train_table(cands: list[dict[str, Any]]) -> dict[str, Any]:
    cols = [
        "strategy",
        "framework",
        "DP×TP×PP",
        "memory / GPU (GiB)",
        "fits",
        "headroom",
        "comm / step",
        "compute / step",
        "step",
        "tokens/s",
        "speed vs ideal",
        "status",
    ]
    rows = []
    for c in cands:
        comm = c.get("comm") or {}
        mem = c.get("memory") or {}
        status = c.get("status") or ""
        if c.get("reason"):
            status += f": {c['reason']}"
        rows.append(
            {
                "css": _row_css(c),
                "cells": [
                    c.get("name", "?"),
                    c.get("framework", "—"),
                    f"{c.get('data_parallel', '?')}×{c.get('tensor_parallel', '?')}×{c.get('pipeline_parallel', '?')}",
                    f"{gib(mem.get('total_bytes'))} of {gib(c.get('capacity_bytes'))}",
                    "yes" if c.get("fits") else "no",
                    pct(c.get("headroom_fraction")) if c.get("fits") else "—",
                    secs(comm.get("total_seconds")),
                    secs(c.get("compute_seconds")),
                    secs(c.get("step_seconds")),
                    fmt_tokens(c, "—"),
                    pct(c.get("ideal_speed_fraction")),
                    status,
                ],
            }
        )
    return {"columns": cols, "rows": rows}


def _serve_table(cands: list[dict[str, Any]]) -> dict[str, Any]:
    cols = [
        "layout",
        "weights / GPU (GiB)",
        "memory used (GiB)",
        "KV cache capacity (tokens)",
        "sequences at context",
        "NVLink",
        "fits",
        "status",
    ]
    rows = []
    for c in cands:
        status = (c.get("status") or "") + (f": {c['reason']}" if c.get("reason") else "")
        rows.append(
            {
                "css": _row_css(c),
                "cells": [
                    c.get("name", "?"),
                    gib(c.get("weights_bytes")),
                    f"{gib(c.get('memory_used_bytes'))} of {gib(c.get('capacity_bytes'))}",
                    num(c.get("kv_capacity_tokens")),
                    num(c.get("max_sequences_at_context")),
                    _nvlink_cell(c),
                    "yes" if c.get("fits") else "no",
                    status,
                ],
            }
        )
    return {"columns": cols, "rows": rows}


def _serving_rows(sv: Any) -> list[tuple[str, str]]:
    """The pick's predicted serving figures (advisor/serving.py), each with its band."""
    if not isinstance(sv, dict) or not sv.get("fits"):
        return []
    b = sv.get("band") or {}

    def rng(key: str, f: Any) -> str:
        x = b.get(key)
        return f" (range {f(x['low'])}-{f(x['high'])})" if isinstance(x, dict) else ""

    return [
        (
            "prefill / decode",
            f"{secs(sv.get('prefill_s'))} per request ({sv.get('prefill_bound')}-bound) / "
            f"{secs(sv.get('decode_step_s'))} per step at batch {sv.get('running')} "
            f"({sv.get('decode_bound')}-bound)",
        ),
        ("TTFT / ITL", f"{secs(sv.get('ttft_s'))}{rng('ttft_s', secs)} / {secs(sv.get('itl_s'))}{rng('itl_s', secs)}"),
        (
            "output tokens/s",
            f"{num(sv.get('output_tokens_per_second'))}{rng('output_tokens_per_second', num)}, "
            f"{num(sv.get('output_tokens_per_second_per_user'))} per user, "
            f"{sv.get('concurrency')} x ({sv.get('input_len')} in + {sv.get('output_len')} out) "
            "tokens",
        ),
        ("running batch", f"{sv.get('running')} (the KV cache holds {sv.get('max_running')} requests of this length)"),
    ]


def _nvlink_cell(c: dict[str, Any]) -> str:
    """Whether the GPUs of a serving layout talk over NVLink; a one-GPU layout has no GPU-to-GPU traffic."""
    tp, pp = c.get("tensor_parallel_size"), c.get("pipeline_parallel_size")
    if isinstance(tp, int) and isinstance(pp, int) and tp * pp == 1:
        return "— (one GPU)"
    return "yes" if c.get("nvlink") else "no"


def _memory_chart(cands: list[dict[str, Any]], task: str) -> svg_charts.StackedBars | None:
    segments = TRAIN_SEGMENTS if task == "train" else SERVE_SEGMENTS
    rows = []
    for c in cands:
        source = c.get("memory") if task == "train" else c
        if not isinstance(source, dict) or not isinstance(c.get("capacity_bytes"), int | float):
            continue
        parts = [(label, float(source.get(key) or 0) / GiB) for key, label in segments]
        if task == "train":
            total = source.get("total_bytes")
            total_gib = float(total) / GiB if isinstance(total, int | float) else sum(v for _, v in parts)
        else:  # memory used (weights, activation peak, runtime) plus the KV cache the request needs: the bar drawn
            total_gib = sum(v for _, v in parts)
        capacity = float(c["capacity_bytes"]) / GiB
        note = ""
        if c.get("fits") is False and total_gib <= capacity:
            note = "fits GPU memory; rejected (see the table)"  # e.g. CPU offload short of host RAM
        rows.append((str(c.get("name", "?")), parts, capacity, total_gib, _row_css(c), note))
    if not rows:
        return None
    return svg_charts.stacked_bars(rows, unit="GiB")


def _snippets(snippet: Any) -> list[tuple[str, str]]:
    if not isinstance(snippet, dict):
        return []
    out = []
    titles = [
        ("torchrun", "launch (torchrun)"),
        ("command", "launch"),
        ("code", "in the training script"),
        ("deepspeed_config", "ds_config.json (DeepSpeed)"),
        ("fsdp", "FSDP settings"),
        ("accelerate_config", "accelerate config (YAML)"),
        ("accelerate_launch", "launch (accelerate)"),
    ]
    for key, title in titles:
        v = snippet.get(key)
        if v is None or v == "" or v == {}:
            continue
        out.append((title, v if isinstance(v, str) else json.dumps(v, indent=2)))
    return out


def advisor_view(a: Any) -> dict[str, Any]:
    """View of the advisor's dict for the template (see the module docstring for the shape)."""
    a = a.to_json_dict() if hasattr(a, "to_json_dict") else a
    task = a.get("task") or "train"
    cands = [c for c in a.get("candidates") or [] if isinstance(c, dict)]
    w = a.get("workload") or {}
    r = a.get("rig") or {}
    pd = a.get("pick_detail") or {}
    key: list[tuple[str, str | list[str]]] = []
    if pd and task == "train":
        mem = pd.get("memory") or {}
        key = [
            ("framework", str(pd.get("framework", "—"))),
            (
                "layout",
                f"data parallel {pd.get('data_parallel')} × tensor parallel {pd.get('tensor_parallel')} × pipeline "
                f"{pd.get('pipeline_parallel')}"
                + (f", ZeRO stage {pd['zero_stage']}" if pd.get("zero_stage") else "")
                + (f", CPU offload: {pd['cpu_offload']}" if pd.get("cpu_offload") not in (None, "none") else "")
                + (", activation checkpointing" if pd.get("activation_checkpointing") else ""),
            ),
            (
                "memory per GPU",
                f"{gib(mem.get('total_bytes'))} of {gib(pd.get('capacity_bytes'))} GiB "
                f"({pct(pd.get('headroom_fraction'))} free)",
            ),
            (
                "step",
                f"{secs(pd.get('step_seconds'))} (compute {secs(pd.get('compute_seconds'))}, communication "
                f"{secs((pd.get('comm') or {}).get('total_seconds'))}; "
                f"{secs(pd.get('step_seconds_no_overlap'))} without overlap)",
            ),
            ("tokens/s", fmt_tokens(pd, "—")),
            ("speed vs ideal", pct(pd.get("ideal_speed_fraction"))),
            (
                "batch",
                f"global {pd.get('global_batch', '—')}, gradient accumulation {pd.get('gradient_accumulation', '—')}, "
                f"{num(pd.get('tokens_per_step'))} tokens per step",
            ),
        ]
        detail = [str(line) for line in (pd.get("comm") or {}).get("detail") or []]
        if detail:
            key.append(("communication", detail))  # one row, one line per part
    elif pd:
        key = [
            ("tensor parallel size", str(pd.get("tensor_parallel_size", "—"))),
            ("pipeline parallel size", str(pd.get("pipeline_parallel_size", "—"))),
            ("memory per GPU", f"{gib(pd.get('memory_used_bytes'))} of {gib(pd.get('capacity_bytes'))} GiB"),
            (
                "KV cache",
                f"{num(pd.get('kv_capacity_tokens'))} tokens ({num(pd.get('max_sequences_at_context'))} sequences at "
                "the requested context)",
            ),
        ]
        key += _serving_rows(pd.get("serving"))
    batch = a.get("batch") or {}
    if isinstance(batch, dict) and batch.get("lr_note"):
        key.append(("learning rate", str(batch["lr_note"])))
    workload = []
    if w:
        params = w.get("params")
        workload = [
            ("model", str(w.get("model") or w.get("model_label") or "—")),
            ("parameters", f"{params / 1e9:.2f} B" if isinstance(params, int | float) else "—"),
            ("task", str(a.get("task", "—")) + (f", {w['finetune']}" if w.get("finetune") and task == "train" else "")),
            ("precision", str(w.get("precision", "—"))),
        ]
        if task == "train":
            workload += [
                ("optimizer", str(w.get("optimizer", "—"))),
                ("sequence length", str(w.get("seq_len", "—"))),
                ("micro-batch", str(w.get("micro_batch", "—"))),
                ("global batch", _global_batch(w, a)),
            ]
        else:
            workload += [
                ("context", str(w.get("context") or "—")),
                ("concurrent sequences", str(w.get("concurrency", "—"))),
                ("KV cache dtype", str(w.get("kv_cache_dtype", "—"))),
            ]
        arch = w.get("architecture") or {}
        if isinstance(arch, dict) and arch.get("source"):
            workload.append(("architecture from", str(arch["source"])))
    rig_rows = []
    if r:
        rig_rows = [
            ("rig", str(r.get("label", "—"))),
            ("GPU memory", f"{gib(r.get('memory_per_gpu_bytes'))} GiB ({r.get('memory_source', '')})"),
        ]
        if r.get("peak_source"):
            rig_rows.append(("peak", str(r["peak_source"])))
        if r.get("busbw_source"):
            rig_rows.append(("all-reduce busbw", str(r["busbw_source"])))
        if r.get("inter_node_source"):
            rig_rows.append(("across nodes", str(r["inter_node_source"])))
    smallest = []
    sr = a.get("smallest_rig") or {}
    if isinstance(sr, dict):
        for k, title in (("smallest", "smallest rig that fits"), ("same_gpu", "with this GPU")):
            s = sr.get(k)
            if isinstance(s, dict):
                smallest.append((title, f"{s.get('description', '?')} ({s.get('strategy', '?')})"))
    return {
        "advisor": True,
        "task": task,
        "fits": a.get("fits"),
        "below_target": below_target(a),
        "pick_name": a.get("pick"),
        "reason": a.get("reason"),
        "key": key,
        "snippets": _snippets(a.get("snippet")),
        "table": _train_table(cands) if task == "train" else _serve_table(cands),
        "chart": _memory_chart(cands, task),
        "excluded": [
            (str(e.get("strategy", "?")), str(e.get("reason", "")))
            for e in a.get("excluded") or []
            if isinstance(e, dict)
        ],
        "workload": workload,
        "rig": rig_rows,
        "smallest": smallest,
        "assumptions": [str(x) for x in a.get("assumptions") or []],
        "notes": [str(x) for x in a.get("notes") or []],
        "measured": bool(r.get("busbw_measured")),
    }


def _global_batch(w: dict[str, Any], a: dict[str, Any]) -> str:
    """The global batch given, or the one the advisor assumed (saying so), or a dash."""
    if w.get("global_batch"):
        return str(w["global_batch"])
    batch = a.get("batch") or {}
    used = batch.get("global_batch") if isinstance(batch, dict) else None
    if isinstance(used, int):
        return f"{used:,} (none given: assumed, see the notes)"
    return "— (none given)"


def is_advisor_dict(a: Any) -> bool:
    a = a.to_json_dict() if hasattr(a, "to_json_dict") else a
    return isinstance(a, dict) and a.get("kind") == ADVICE_KIND


def below_target(a: dict[str, Any]) -> str | None:
    """Why the pick is below the advisor's own efficiency target for this many GPUs (the box is then not green), or
    None. Efficiency is the advisor's one figure, the fraction of the ideal speed (``ideal_speed_fraction``). The target
    is the advisor's (``target_efficiency`` in the dict, else advisor.constants)."""
    pd = a.get("pick_detail") or {}
    r = a.get("rig") or {}
    eff = pd.get("ideal_speed_fraction")
    gpus = (r.get("gpus_per_node") or 0) * (r.get("nodes") or 1)
    if a.get("task", "train") != "train" or not isinstance(eff, int | float) or gpus < 2:
        return None
    target = a.get("target_efficiency")
    if not isinstance(target, int | float):
        from gpuadvisor.advisor.constants import target_efficiency

        target = target_efficiency(gpus)
    if eff >= target:
        return None
    return f"{eff:.0%} of the ideal speed, below the {target:.0%} the advisor aims for on {gpus} GPUs"
