"""Terminal rendering of an Advice (or of the dict a scan stores in rig.advice)."""

from __future__ import annotations

import json
from typing import Any

from gpuadvisor.render.text.width import fit_lines, term_width, verbatim

GiB = 2**30


def fmt_gib(x: Any, missing: str = "-") -> str:
    """Bytes as GiB with one decimal; ``missing`` for anything that is not a number."""
    return missing if not isinstance(x, int | float) else f"{x / GiB:.1f}"


def fmt_secs(x: Any, missing: str = "?") -> str:
    """Seconds in the unit that reads best: µs, ms or s."""
    if not isinstance(x, int | float):
        return missing
    if x == 0:
        return "0"
    if x < 1e-3:
        return f"{x * 1e6:.0f} µs"
    if x < 1:
        return f"{x * 1e3:.0f} ms"
    return f"{x:.2f} s"


def fmt_num(x: Any, missing: str = "?") -> str:
    return missing if not isinstance(x, int | float) else f"{x:,.0f}"


_gib, _secs, _num = fmt_gib, fmt_secs, fmt_num


def render_advice(advice: Any, *, explain: bool = False, width: int | None = None, keep_marks: bool = False) -> str:
    """The advice as text, every line at most ``width`` columns (default: the terminal's).

    By default short: the rig and workload in two lines, a table of every candidate, the pick with its reason,
    the launch command and the notes to read before launching. ``explain``: also where each figure comes from,
    the memory breakdown, what was not considered, the batch and learning-rate note, the whole launch snippet
    (training-script lines, DeepSpeed and accelerate configs) and every assumption with its source.
    Commands, code and configs are printed verbatim, never wrapped (gpuadvisor.render.text.width.verbatim);
    ``keep_marks`` for a caller that fits this text again inside its own view.
    """
    width = width or term_width()
    d = advice.to_dict() if hasattr(advice, "to_dict") else advice
    rig, w = d["rig"], d["workload"]
    lines = []
    lines.append(
        f"Rig: {rig['label']}: {_gib(rig['memory_per_gpu_bytes'])} GiB per GPU, NVLink domain {rig['nvlink_domain']}"
    )
    if explain:
        if rig.get("busbw_source"):
            lines.append(f"  all-reduce busbw: {rig['busbw_source']}")
        if rig.get("inter_node_source"):
            lines.append(f"  across nodes: {rig['inter_node_source']}")
        lines.append(f"  peak: {rig['peak_source']}")
    else:
        basis = []
        if isinstance(rig.get("busbw_gbps"), int | float):
            basis.append(
                f"all-reduce busbw {rig['busbw_gbps']:.0f} GB/s ("
                + ("measured" if rig.get("busbw_measured") else "expected from the links, not measured")
                + ")"
            )
        if isinstance(rig.get("peak_tflops"), int | float):
            basis.append(f"peak {rig['peak_tflops']:,.0f} TFLOP/s (datasheet)")
        if basis:
            lines.append("  " + "; ".join(basis))
    lines.append(
        f"Workload: {w['model']} ({w['params'] / 1e9:.2f}B params), task {d['task']}, {w['precision']}"
        + (
            f", {w['optimizer']}, {w['finetune']}, seq {w['seq_len']}, micro-batch {w['micro_batch']}"
            if d["task"] == "train"
            else f", context {w['context']}, {w['concurrency']} concurrent, KV cache {w['kv_cache_dtype']}"
        )
    )
    lines.append("")
    tables = _train_tables(d, width, explain) if d["task"] == "train" else _serve_tables(d, width)
    if explain and d["excluded"]:
        tables.append("Not considered:")
        tables += [f"  {e['strategy']}: {e['reason']}" for e in d["excluded"]]
        tables.append("")
    if d["pick"]:
        tables.append(f"Pick: {d['pick']}")
        tables.append(f"  {d['reason']}")
        if d["task"] == "train" and d.get("pick_detail"):
            tables.append(predicted_line(d["pick_detail"]))
        if d["task"] == "inference" and d.get("pick_detail"):
            tables += serving_lines(d["pick_detail"].get("serving"))
        if explain and d.get("batch"):
            tables.append(f"  Batch: {d['batch']['lr_note']}")
        tables += _snippet(d.get("snippet")) if explain else _launch_line(d.get("snippet"))
    else:
        tables.append(d["reason"])
        sr = d.get("smallest_rig")
        if sr and len(sr["all"]) > 1:
            tables.append(
                "  Fewest GPUs per catalog product: "
                + "; ".join(f"{f['description']} ({f['strategy']})" for f in sr["all"][:6])
            )
    if d.get("notes"):
        tables.append("")
        tables.append("Notes:")
        tables += [f"  - {n}" for n in d["notes"]]
    if explain:
        tables.append("")
        tables.append("Assumptions:")
        tables += [f"  - {a}" for a in d["assumptions"]]
        sb = d.get("state_bytes")
        if sb:
            tables.append(
                f"  - bytes per parameter: {sb['used_per_param']:g} used (weights {sb['weights']:g} + grads "
                f"{sb['grads']:g} + master {sb['master']:g} + "
                f"optimizer {sb['optimizer_states']:g}); the tools disagree (with Adam):"
            )
            tables += [
                f"      {c['bytes_per_param_with_adam']:g} B/param ({c['key']}): {c['source']}"
                for c in sb["conventions"]
            ]
        tables.append("  - memory in GiB (2^30 bytes); bandwidth in GB/s (1e9 bytes/s)")
    else:
        tables.append("")
        tables.append(
            "--explain adds the memory breakdown, the whole launch snippet (configs, training-script lines), "
            "the batch and learning-rate note, and every assumption with its source."
        )
    return "\n".join(fit_lines("\n".join(lines + tables).split("\n"), width, keep_marks=keep_marks)) + "\n"


def _launch_line(s: dict[str, Any] | None) -> list[str]:
    """The launch command alone (the short output); the files it names come with --explain."""
    if not s:
        return []
    if s.get("framework"):  # advise --framework: what was asked for, whole
        return ["", "Launch:"] + _framework(s["framework"])
    if s.get("kind") == "vllm":
        return ["", "Launch:", *verbatim([s["command"]], "shell")]
    out = ["", "Launch:", *verbatim([s["torchrun"]], "shell")]
    files = [
        name
        for key, name in (("deepspeed_config", "ds_config.json"), ("accelerate_config", "accelerate.yaml"))
        if s.get(key)
    ]
    if files or s.get("code"):
        out += verbatim(
            [
                "# "
                + ", ".join(files + (["the lines for train.py"] if s.get("code") else []))
                + ": --explain prints them"
            ],
            "python",
        )
    return out


def _train_tables(d: dict[str, Any], width: int, explain: bool) -> list[str]:
    from gpuadvisor.render.text.width import fit_table

    rows, mem_rows = [], []
    for c in d["candidates"]:
        m = c["memory"]
        verdict = "PICK" if c["status"] == "pick" else c["reason"]
        rows.append(
            [
                c["name"],
                f"{_gib(m['total_bytes'])} / {_gib(c['capacity_bytes'])}",
                "yes" if c["fits"] else "no",
                f"{_secs(c['comm']['total_seconds'])} ({_secs(_exposed(c))})",
                _secs(c["compute_seconds"]),
                _secs(c["step_seconds"]),
                fmt_tokens(c),
                "?" if c.get("ideal_speed_fraction") is None else f"{c['ideal_speed_fraction']:.0%}",
                verdict,
            ]
        )
        mem_rows.append(
            [
                c["name"],
                _gib(m["params_bytes"]),
                _gib(m["grads_bytes"]),
                _gib(m["optimizer_bytes"]),
                _gib(m["activations_bytes"]),
                _gib(m["gathered_bytes"]),
                _gib(m.get("buffers_bytes", 0)),
                _gib(m["overhead_bytes"]),
                _gib(m["total_bytes"]),
                _gib(m["host_bytes"]) if m["host_bytes"] else "-",
            ]
        )
    headers = ["strategy", "GiB/GPU", "fits", "comm/step (exposed)", "compute", "step", "tokens/s", "eff.", "verdict"]
    caps = {c["capacity_bytes"] for c in d["candidates"]}
    foot = []
    if not explain:
        # Short: communication and compute are in the step time (--explain splits them); one capacity for every
        # candidate is said once; "does not fit: needs X GiB per GPU > Y GiB" repeats the memory column.
        one_cap = len(caps) == 1
        rows = [
            [
                r[0],
                _gib(c["memory"]["total_bytes"]) if one_cap else r[1],
                r[2],
                r[5],
                r[6],
                r[7],
                "does not fit" if c["status"] != "pick" and not c["fits"] else r[8],
            ]
            for r, c in zip(rows, d["candidates"], strict=True)
        ]
        headers = [headers[0], headers[1], headers[2], headers[5], headers[6], headers[7], headers[8]]
        if one_cap:
            foot = [f"GiB/GPU: memory each GPU needs, of {_gib(next(iter(caps)))} GiB usable; eff.: of the ideal speed"]
    out = fit_table(rows, headers, width, indent="") + foot + [""]
    if explain:
        out.append("Memory per GPU (GiB):")
        out += fit_table(
            mem_rows,
            [
                "strategy",
                "params",
                "grads",
                "optimizer",
                "activations",
                "gathered",
                "buckets",
                "overhead",
                "total",
                "host/node",
            ],
            width,
            indent="",
        )
        out.append("")
    return out


def fmt_tokens(c: dict[str, Any], missing: str = "?") -> str:
    """A candidate's tokens/s with its error band from the published runs, e.g. "5,800 (4,900-6,700)"."""
    band = (c.get("band") or {}).get("tokens_per_second")
    if band and isinstance(c.get("tokens_per_second"), int | float):
        return f"{_num(c['tokens_per_second'])} ({_num(band['low'])}-{_num(band['high'])})"
    return fmt_num(c.get("tokens_per_second"), missing)


def predicted_line(c: dict[str, Any]) -> str:
    """The pick's predicted figures, saying which memory figure is which."""
    m = c["memory"]
    band = (c.get("band") or {}).get("tokens_per_second")
    mfu = f", MFU {c['mfu']:.0%}" if isinstance(c.get("mfu"), int | float) else ""
    basis = (
        f" (band: {band['cases']} published runs, "
        f"{'this GPU measured' if band['basis'] == 'measured' else 'datasheet rates'})"
        if band
        else ""
    )
    if band and band.get("narrowed_by"):
        basis = basis[:-1] + "; not narrowed by the measured rates: no calibration run used measured rates)"
    alloc = m.get("torch_peak_allocated_bytes")
    return (
        f"  Predicted: {fmt_tokens(c)} tokens/s{mfu}{basis}; memory per GPU: torch peak allocated {_gib(alloc)} GiB, "
        f"nvidia-smi about {_gib(m.get('nvidia_smi_bytes', m['total_bytes']))} GiB"
    )


def _exposed(c: dict[str, Any]) -> float:
    k = c["comm"]
    return (
        (k["data_parallel_exposed_seconds"] or 0)
        + (k["tensor_parallel_seconds"] or 0)
        + (k["pipeline_seconds"] or 0)
        + (k.get("offload_exposed_seconds", k["offload_seconds"]) or 0)
    )


def _serve_tables(d: dict[str, Any], width: int) -> list[str]:
    from gpuadvisor.render.text.width import fit_table

    rows = []
    for o in d["candidates"]:
        sv = o.get("serving") or {}
        rows.append(
            [
                o["name"],
                _gib(o["weights_bytes"]),
                _gib(o["kv_cache_budget_bytes"]),
                _gib(o["kv_cache_needed_bytes"]),
                f"{o['kv_capacity_tokens']:,}",
                o["max_sequences_at_context"],
                "yes" if o["fits"] else "no",
                _num(sv.get("output_tokens_per_second"), "-")
                + _range((sv.get("band") or {}).get("output_tokens_per_second"), _num)
                if sv.get("fits")
                else "-",
                "PICK" if o["status"] == "pick" else o["reason"],
            ]
        )
    return fit_table(
        rows,
        [
            "tensor parallel",
            "weights GiB/GPU",
            "KV budget GiB/GPU",
            "KV needed GiB/GPU",
            "KV tokens",
            "max seqs",
            "fits",
            "out tok/s",
            "verdict",
        ],
        width,
        indent="",
    ) + [""]


def _t(x: Any) -> str:
    """Seconds to three significant figures, in ms below a second (serving latencies)."""
    if not isinstance(x, int | float):
        return "?"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _range(b: dict[str, Any] | None, f: Any) -> str:
    return f" ({f(b['low'])}-{f(b['high'])})" if b else ""


def serving_lines(sv: dict[str, Any] | None) -> list[str]:
    """The pick's serving figures: prefill and decode, TTFT/ITL, end-to-end, output tokens/s, the running batch
    the KV cache allows, each with its band."""
    if not sv or not sv.get("fits"):
        return []
    b = sv.get("band") or {}
    cov = b.get("output_tokens_per_second")
    out = [
        f"  Serving {sv['concurrency']} x ({sv['input_len']} in + {sv['output_len']} out) tokens on {sv['engine']}, "
        f"TP={sv['tensor_parallel']}, weights {sv['quantization']}, KV cache {sv['kv_cache_dtype']}:",
        f"    prefill {_t(sv['prefill_s'])}{_range(b.get('prefill_s'), _t)} per request "
        f"({sv['prefill_bound']}-bound); decode step {_t(sv['decode_step_s'])}{_range(b.get('decode_step_s'), _t)} "
        f"at batch {sv['running']} ({sv['decode_bound']}-bound"
        + (f", all-reduces {_t(sv['allreduce_s_per_step'])}" if sv.get("allreduce_s_per_step") else "")
        + ")",
        f"    TTFT {_t(sv['ttft_s'])}{_range(b.get('ttft_s'), _t)}, ITL {_t(sv['itl_s'])}"
        f"{_range(b.get('itl_s'), _t)}, end-to-end {_t(sv['e2e_s'])}{_range(b.get('e2e_s'), _t)}",
        f"    output {_num(sv['output_tokens_per_second'])} tokens/s"
        f"{_range(b.get('output_tokens_per_second'), _num)}, {sv['output_tokens_per_second_per_user']:.1f} per user"
        f"{_range(b.get('output_tokens_per_second_per_user'), lambda x: f'{x:.1f}')}",
        f"    KV cache: {sv['kv_capacity_tokens']:,} tokens at {sv['gpu_memory_utilization']:.2f} GPU memory "
        f"utilisation: room for {sv['max_running']} running requests of this length (each holds "
        f"{sv['input_len'] + sv['output_len'] // 2:,} tokens on average over its life)",
    ]
    if cov:
        out.append(
            f"    ranges: predicted/measured of published serving runs held out one source at a time "
            f"({cov['cases']} runs, {cov['sources']} sources; {cov['coverage']:.0%} of them inside)"
        )
    out += [f"    note: {n}" for n in sv.get("notes", [])]
    return out


def _snippet(s: dict[str, Any] | None) -> list[str]:
    if not s:
        return []
    out = ["", "Launch:"]
    if s.get("framework"):
        return out + _framework(s["framework"])
    if s.get("kind") == "vllm":
        return out + verbatim(
            [s["command"], "# other servers: gpuadvisor advise ... --framework sglang|trtllm|llamacpp|ollama"], "shell"
        )
    out += verbatim([s["torchrun"]], "shell")
    if s.get("code"):
        out += ["", "  train.py (the lines to add):"]
        out += verbatim(s["code"].rstrip().splitlines(), "python")
    if s.get("deepspeed_config"):
        out += [""] + ([f"  ({s['deepspeed_config_note']})"] if s.get("deepspeed_config_note") else [])
        out += ["  ds_config.json:"]
        out += verbatim(json.dumps(s["deepspeed_config"], indent=2).splitlines())
    if s.get("accelerate_config"):
        launch = s.get("accelerate_launch") or "accelerate launch --config_file accelerate.yaml train.py"
        out += ["", "  accelerate.yaml:", *verbatim(s["accelerate_config"].rstrip().splitlines())]
        out += ["  launched with:", *verbatim([launch], "shell")]
    out += ["", "  (one framework's lines: gpuadvisor advise ... --framework torch|deepspeed|accelerate|megatron|jax)"]
    return out


def _framework(f: dict[str, Any]) -> list[str]:
    """One framework's launch block (advise --framework)."""
    if not f["maps"]:
        return verbatim([f"# {f['framework']}: not printed: {f['reason']}"], "python")
    out = verbatim(f["commands"], "shell")
    if f.get("code"):
        out += ["", "  train.py (the lines to add):"]
        out += verbatim(f["code"].rstrip().splitlines(), "python")
    for name, text in f.get("files", {}).items():
        out += ["", f"  {name}:"] + verbatim(text.rstrip().splitlines())
    if f.get("files"):
        out.append("")
    out += verbatim([f"# {n}" for n in f.get("notes", [])] + [f"# {f['framework']} docs: {f['docs']}"], "python")
    return out
