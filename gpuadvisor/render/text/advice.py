"""Terminal rendering of an Advice (gpuadvisor.advice_model; or of its JSON)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpuadvisor.advice_model import (
    Advice,
    FrameworkLaunch,
    ServingBand,
    ServingCandidate,
    ServingResult,
    ServingSnippet,
    Snippet,
    TrainCandidate,
)
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


def render_advice(
    advice: Advice | Mapping[str, Any], *, explain: bool = False, width: int | None = None, keep_marks: bool = False
) -> str:
    """The advice as text, every line at most ``width`` columns (default: the terminal's).

    By default short: the rig and workload in two lines, a table of every candidate, the pick with its reason,
    the launch command and the notes to read before launching. ``explain``: also where each figure comes from,
    the memory breakdown, what was not considered, the batch and learning-rate note, the whole launch snippet
    (training-script lines, DeepSpeed and accelerate configs) and every assumption with its source.
    Commands, code and configs are printed verbatim, never wrapped (gpuadvisor.render.text.width.verbatim);
    ``keep_marks`` for a caller that fits this text again inside its own view.
    """
    width = width or term_width()
    a = Advice.coerce(advice)
    rig, w = a.rig, a.workload
    lines = []
    lines.append(f"Rig: {rig.label}: {_gib(rig.memory_per_gpu_bytes)} GiB per GPU, NVLink domain {rig.nvlink_domain}")
    if explain:
        if rig.busbw_source:
            lines.append(f"  all-reduce busbw: {rig.busbw_source}")
        if rig.inter_node_source:
            lines.append(f"  across nodes: {rig.inter_node_source}")
        lines.append(f"  peak: {rig.peak_source}")
    else:
        basis = []
        if isinstance(rig.busbw_gbps, int | float):
            basis.append(
                f"all-reduce busbw {rig.busbw_gbps:.0f} GB/s ("
                + ("measured" if rig.busbw_measured else "expected from the links, not measured")
                + ")"
            )
        if isinstance(rig.peak_tflops, int | float):
            basis.append(f"peak {rig.peak_tflops:,.0f} TFLOP/s (datasheet)")
        if basis:
            lines.append("  " + "; ".join(basis))
    lines.append(
        f"Workload: {w.model} ({w.params / 1e9:.2f}B params), task {a.task}, {w.precision}"
        + (
            f", {w.optimizer}, {w.finetune}, seq {w.seq_len}, micro-batch {w.micro_batch}"
            if a.task == "train"
            else f", context {w.context}, {w.concurrency} concurrent, KV cache {w.kv_cache_dtype}"
        )
    )
    lines.append("")
    tables = _train_tables(a.training, width, explain) if a.task == "train" else _serve_tables(a.serving, width)
    if explain and a.excluded:
        tables.append("Not considered:")
        tables += [f"  {e.strategy}: {e.reason}" for e in a.excluded]
        tables.append("")
    if a.pick_name:
        tables += _pick_lines(a, explain)
    else:
        tables.append(a.reason)
        sr = a.smallest_rig
        if sr and len(sr.all) > 1:
            tables.append(
                "  Fewest GPUs per catalog product: " + "; ".join(f"{f.description} ({f.strategy})" for f in sr.all[:6])
            )
    if a.notes:
        tables.append("")
        tables.append("Notes:")
        tables += [f"  - {n}" for n in a.notes]
    if explain:
        tables += _assumption_lines(a)
    else:
        tables.append("")
        tables.append(
            "--explain adds the memory breakdown, the whole launch snippet (configs, training-script lines), "
            "the batch and learning-rate note, and every assumption with its source."
        )
    return "\n".join(fit_lines("\n".join(lines + tables).split("\n"), width, keep_marks=keep_marks)) + "\n"


def _pick_lines(a: Advice, explain: bool) -> list[str]:
    """The pick, why, its predicted figures and how to launch it."""
    out = [f"Pick: {a.pick_name}", f"  {a.reason}"]
    if isinstance(a.pick, TrainCandidate):
        out.append(predicted_line(a.pick))
    if isinstance(a.pick, ServingCandidate):
        out += serving_lines(a.pick.serving)
    if explain and a.batch:
        out.append(f"  Batch: {a.batch.lr_note}")
    return out + (_snippet(a.snippet) if explain else _launch_line(a.snippet))


def _assumption_lines(a: Advice) -> list[str]:
    out = ["", "Assumptions:"]
    out += [f"  - {x}" for x in a.assumptions]
    sb = a.state_bytes
    if sb:
        out.append(
            f"  - bytes per parameter: {sb.used_per_param:g} used (weights {sb.weights:g} + grads "
            f"{sb.grads:g} + master {sb.master:g} + "
            f"optimizer {sb.optimizer_states:g}); the tools disagree (with Adam):"
        )
        out += [f"      {c.bytes_per_param_with_adam:g} B/param ({c.key}): {c.source}" for c in sb.conventions]
    out.append("  - memory in GiB (2^30 bytes); bandwidth in GB/s (1e9 bytes/s)")
    return out


def _launch_line(s: Snippet | None) -> list[str]:
    """The launch command alone (the short output); the files it names come with --explain."""
    if not s:
        return []
    if s.framework:  # advise --framework: what was asked for, whole
        return ["", "Launch:"] + _framework(s.framework)
    if isinstance(s, ServingSnippet):
        return ["", "Launch:", *verbatim(s.commands or [s.command], "shell")]
    out = ["", "Launch:", *verbatim([s.torchrun], "shell")]
    files = [
        name
        for present, name in ((s.deepspeed_config, "ds_config.json"), (s.accelerate_config, "accelerate.yaml"))
        if present
    ]
    if files or s.code:
        out += verbatim(
            ["# " + ", ".join(files + (["the lines for train.py"] if s.code else [])) + ": --explain prints them"],
            "python",
        )
    return out


def _train_tables(cands: list[TrainCandidate], width: int, explain: bool) -> list[str]:
    from gpuadvisor.render.text.width import fit_table

    rows, mem_rows = [], []
    for c in cands:
        m = c.memory
        verdict = "PICK" if c.status == "pick" else c.reason
        rows.append(
            [
                c.name,
                f"{_gib(m.total_bytes)} / {_gib(c.capacity_bytes)}",
                "yes" if c.fits else "no",
                f"{_secs(c.comm.total_seconds)} ({_secs(c.comm.exposed_seconds)})",
                _secs(c.compute_seconds),
                _secs(c.step_seconds),
                fmt_tokens(c),
                "?" if c.ideal_speed_fraction is None else f"{c.ideal_speed_fraction:.0%}",
                verdict,
            ]
        )
        mem_rows.append(
            [
                c.name,
                _gib(m.params_bytes),
                _gib(m.grads_bytes),
                _gib(m.optimizer_bytes),
                _gib(m.activations_bytes),
                _gib(m.gathered_bytes),
                _gib(m.buffers_bytes),
                _gib(m.overhead_bytes),
                _gib(m.total_bytes),
                _gib(m.host_bytes) if m.host_bytes else "-",
            ]
        )
    headers = ["strategy", "GiB/GPU", "fits", "comm/step (exposed)", "compute", "step", "tokens/s", "eff.", "verdict"]
    caps = {c.capacity_bytes for c in cands}
    foot = []
    if not explain:
        # Short: communication and compute are in the step time (--explain splits them); one capacity for every
        # candidate is said once; "does not fit: needs X GiB per GPU > Y GiB" repeats the memory column.
        one_cap = len(caps) == 1
        rows = [
            [
                r[0],
                _gib(c.memory.total_bytes) if one_cap else r[1],
                r[2],
                r[5],
                r[6],
                r[7],
                "does not fit" if c.status != "pick" and not c.fits else r[8],
            ]
            for r, c in zip(rows, cands, strict=True)
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


def fmt_tokens(c: TrainCandidate, missing: str = "?") -> str:
    """A candidate's tokens/s with its error band from the published runs, e.g. "5,800 (4,900-6,700)"."""
    band = c.tokens_band
    if band and isinstance(c.tokens_per_second, int | float):
        return f"{_num(c.tokens_per_second)} ({_num(band.low)}-{_num(band.high)})"
    return fmt_num(c.tokens_per_second, missing)


def predicted_line(c: TrainCandidate) -> str:
    """The pick's predicted figures, saying which memory figure is which."""
    m = c.memory
    band = c.tokens_band
    mfu = f", MFU {c.mfu:.0%}" if isinstance(c.mfu, int | float) else ""
    basis = (
        f" (band: {band.cases} published runs, "
        f"{'this GPU measured' if band.basis == 'measured' else 'datasheet rates'})"
        if band
        else ""
    )
    if band and band.narrowed_by:
        basis = basis[:-1] + "; not narrowed by the measured rates: no calibration run used measured rates)"
    smi = m.nvidia_smi_bytes if m.nvidia_smi_bytes is not None else m.total_bytes
    return (
        f"  Predicted: {fmt_tokens(c)} tokens/s{mfu}{basis}; memory per GPU: torch peak allocated "
        f"{_gib(m.torch_peak_allocated_bytes)} GiB, nvidia-smi about {_gib(smi)} GiB"
    )


def _serve_tables(cands: list[ServingCandidate], width: int) -> list[str]:
    from gpuadvisor.render.text.width import fit_table

    rows = []
    for o in cands:
        sv = o.serving
        rows.append(
            [
                o.name,
                _gib(o.weights_bytes),
                _gib(o.kv_cache_budget_bytes),
                _gib(o.kv_cache_needed_bytes),
                f"{o.kv_capacity_tokens:,}",
                o.max_sequences_at_context,
                "yes" if o.fits else "no",
                _num(sv.output_tokens_per_second, "-") + _range(sv.band.get("output_tokens_per_second"), _num)
                if sv and sv.fits
                else "-",
                "PICK" if o.status == "pick" else o.reason,
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


def _range(b: ServingBand | None, f: Any) -> str:
    return f" ({f(b.low)}-{f(b.high)})" if b else ""


def serving_lines(sv: ServingResult | None) -> list[str]:
    """The pick's serving figures: prefill and decode, TTFT/ITL, end-to-end, output tokens/s, the running batch
    the KV cache allows, each with its band."""
    if not sv or not sv.fits:
        return []
    b = sv.band
    cov = b.get("output_tokens_per_second")
    out = [
        f"  Serving {sv.concurrency} x ({sv.input_len} in + {sv.output_len} out) tokens"
        + (" as one batch run" if sv.offline else "")
        + f" on {sv.engine}, TP={sv.tensor_parallel}"
        + (f" x{sv.replicas} replicas" if sv.replicas > 1 else "")
        + f", weights {sv.quantization}, KV cache {sv.kv_cache_dtype}:",
        f"    prefill {_t(sv.prefill_s)}{_range(b.get('prefill_s'), _t)} per request "
        f"({sv.prefill_bound}-bound); decode step {_t(sv.decode_step_s)}{_range(b.get('decode_step_s'), _t)} "
        f"at batch {sv.running} ({sv.decode_bound}-bound"
        + (f", all-reduces {_t(sv.allreduce_s_per_step)}" if sv.allreduce_s_per_step else "")
        + ")",
        f"    TTFT {_t(sv.ttft_s)}{_range(b.get('ttft_s'), _t)}, ITL {_t(sv.itl_s)}"
        f"{_range(b.get('itl_s'), _t)}, end-to-end {_t(sv.e2e_s)}{_range(b.get('e2e_s'), _t)}",
        f"    output {_num(sv.output_tokens_per_second)} tokens/s"
        + (" over all replicas" if sv.replicas > 1 else "")
        + f"{_range(b.get('output_tokens_per_second'), _num)}, {sv.output_tokens_per_second_per_user:.1f} per user"
        f"{_range(b.get('output_tokens_per_second_per_user'), lambda x: f'{x:.1f}')}",
        f"    KV cache: {sv.kv_capacity_tokens:,} tokens at {sv.gpu_memory_utilization:.2f} GPU memory "
        f"utilisation{' per replica' if sv.replicas > 1 else ''}: room for {sv.max_running} running requests of "
        f"{sv.input_len + sv.output_len:,} tokens each",
    ]
    if cov:
        out.append(
            f"    ranges: predicted/measured of published serving runs held out one publication at a time "
            f"({cov.cases} runs, {cov.sources} sources; {cov.coverage:.0%} of them inside)"
        )
    out += [f"    note: {n}" for n in sv.notes]
    return out


def _captioned(caption: str, lines: list[str], kind: str = "text") -> list[str]:
    """A block a user copies (a file, a script's lines, a command) under its caption: a blank line before the
    caption and the block indented under it, so that what is selected by its indent is the block and nothing else
    (a caption or the next block at the same indent made a copied accelerate.yaml fail to load)."""
    return ["", f"  {caption}", *verbatim(lines, kind, indent="    ")]


def _snippet(s: Snippet | None) -> list[str]:
    if not s:
        return []
    out = ["", "Launch:"]
    if s.framework:
        return out + _framework(s.framework)
    if isinstance(s, ServingSnippet):
        return out + verbatim(
            [
                *(s.commands or [s.command]),
                "# other engines: gpuadvisor advise ... --engine sglang|trtllm|llamacpp|ollama",
            ],
            "shell",
        )
    out += verbatim([s.torchrun], "shell")
    if s.code:
        out += _captioned("train.py (the lines to add):", s.code.rstrip().splitlines(), "python")
    if s.deepspeed_config:
        note = [f"  ({s.deepspeed_config_note})"] if s.deepspeed_config_note else []
        out += ["", *note] if note else []
        out += _captioned("ds_config.json:", json.dumps(s.deepspeed_config, indent=2).splitlines())
    if s.accelerate_config:
        launch = s.accelerate_launch or "accelerate launch --config_file accelerate.yaml train.py"
        out += _captioned("accelerate.yaml:", s.accelerate_config.rstrip().splitlines())
        out += _captioned("launched with:", [launch], "shell")
    out += ["", "  (one framework's lines: gpuadvisor advise ... --framework torch|deepspeed|accelerate|megatron|jax)"]
    return out


def _framework(f: FrameworkLaunch) -> list[str]:
    """One framework's launch block (advise --framework)."""
    if not f.maps:
        return verbatim([f"# {f.framework}: not printed: {f.reason}"], "python")
    out = verbatim(f.commands, "shell")
    if f.code:
        out += _captioned("train.py (the lines to add):", f.code.rstrip().splitlines(), "python")
    for name, text in f.files.items():
        out += _captioned(f"{name}:", text.rstrip().splitlines())
    if f.code or f.files:
        out.append("")  # the notes are a block of their own
    out += verbatim([f"# {n}" for n in f.notes] + [f"# {f.framework} docs: {f.docs}"], "python")
    return out
