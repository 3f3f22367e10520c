"""Terminal rendering of an Advice (or of the dict a scan stores in rig.advice)."""
from __future__ import annotations

import json
from typing import Any

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


def render_advice(advice: Any) -> str:
    """The advice as text: the rig and workload, a table of every candidate, the memory breakdown, the pick
    with its reason and launch snippet, and the assumptions."""
    from tabulate import tabulate

    d = advice.to_dict() if hasattr(advice, "to_dict") else advice
    rig, w = d["rig"], d["workload"]
    lines = []
    lines.append(f"Rig: {rig['label']}: {_gib(rig['memory_per_gpu_bytes'])} GiB per GPU, NVLink domain {rig['nvlink_domain']}")
    if rig.get("busbw_source"):
        lines.append(f"  all-reduce busbw: {rig['busbw_source']}")
    if rig.get("inter_node_source"):
        lines.append(f"  across nodes: {rig['inter_node_source']}")
    lines.append(f"  peak: {rig['peak_source']}")
    lines.append(f"Workload: {w['model']} ({w['params'] / 1e9:.2f}B params), task {d['task']}, {w['precision']}"
                 + (f", {w['optimizer']}, {w['finetune']}, seq {w['seq_len']}, micro-batch {w['micro_batch']}" if d["task"] == "train"
                    else f", context {w['context']}, {w['concurrency']} concurrent, KV cache {w['kv_cache_dtype']}"))
    lines.append("")
    if d["task"] == "train":
        lines += _train_tables(d, tabulate)
    else:
        lines += _serve_tables(d, tabulate)
    if d["excluded"]:
        lines.append("Not considered:")
        lines += [f"  {e['strategy']}: {e['reason']}" for e in d["excluded"]]
        lines.append("")
    if d["pick"]:
        lines.append(f"Pick: {d['pick']}")
        lines.append(f"  {d['reason']}")
        if d.get("batch"):
            lines.append(f"  Batch: {d['batch']['lr_note']}")
        lines += _snippet(d.get("snippet"))
    else:
        lines.append(d["reason"])
        sr = d.get("smallest_rig")
        if sr and len(sr["all"]) > 1:
            lines.append("  Fewest GPUs per catalog product: " + "; ".join(f"{f['description']} ({f['strategy']})" for f in sr["all"][:6]))
    if d.get("notes"):
        lines.append("")
        lines.append("Notes:")
        lines += [f"  - {n}" for n in d["notes"]]
    lines.append("")
    lines.append("Assumptions:")
    lines += [f"  - {a}" for a in d["assumptions"]]
    sb = d.get("state_bytes")
    if sb:
        lines.append(f"  - bytes per parameter: {sb['used_per_param']:g} used (weights {sb['weights']:g} + grads {sb['grads']:g} + master {sb['master']:g} + "
                     f"optimizer {sb['optimizer_states']:g}); the tools disagree (with Adam):")
        lines += [f"      {c['bytes_per_param_with_adam']:g} B/param ({c['key']}): {c['source']}" for c in sb["conventions"]]
    lines.append("  - memory in GiB (2^30 bytes); bandwidth in GB/s (1e9 bytes/s)")
    return "\n".join(lines) + "\n"


def _train_tables(d: dict[str, Any], tabulate: Any) -> list[str]:
    rows, mem_rows = [], []
    for c in d["candidates"]:
        m = c["memory"]
        verdict = "PICK" if c["status"] == "pick" else c["reason"]
        rows.append([
            c["name"], f"{_gib(m['total_bytes'])} / {_gib(c['capacity_bytes'])}", "yes" if c["fits"] else "no",
            f"{_secs(c['comm']['total_seconds'])} ({_secs(_exposed(c))})", _secs(c["compute_seconds"]), _secs(c["step_seconds"]),
            _num(c["tokens_per_second"]), "?" if c["scaling_efficiency"] is None else f"{c['scaling_efficiency']:.2f}", verdict,
        ])
        mem_rows.append([c["name"], _gib(m["params_bytes"]), _gib(m["grads_bytes"]), _gib(m["optimizer_bytes"]),
                         _gib(m["activations_bytes"]), _gib(m["gathered_bytes"]), _gib(m["overhead_bytes"]), _gib(m["total_bytes"]),
                         _gib(m["host_bytes"]) if m["host_bytes"] else "-"])
    out = [tabulate(rows, headers=["strategy", "GiB/GPU", "fits", "comm/step (exposed)", "compute", "step", "tokens/s", "eff.", "verdict"],
                    tablefmt="simple", disable_numparse=True), ""]
    out.append("Memory per GPU (GiB):")
    out.append(tabulate(mem_rows, headers=["strategy", "params", "grads", "optimizer", "activations", "gathered", "overhead", "total", "host/node"],
                        tablefmt="simple", disable_numparse=True))
    out.append("")
    return out


def _exposed(c: dict[str, Any]) -> float:
    k = c["comm"]
    return (k["data_parallel_exposed_seconds"] or 0) + (k["tensor_parallel_seconds"] or 0) + (k["pipeline_seconds"] or 0) + (k["offload_seconds"] or 0)


def _serve_tables(d: dict[str, Any], tabulate: Any) -> list[str]:
    rows = []
    for o in d["candidates"]:
        rows.append([o["name"], _gib(o["weights_bytes"]), _gib(o["kv_cache_budget_bytes"]), _gib(o["kv_cache_needed_bytes"]),
                     f"{o['kv_capacity_tokens']:,}", o["max_sequences_at_context"], "yes" if o["fits"] else "no",
                     "PICK" if o["status"] == "pick" else o["reason"]])
    return [tabulate(rows, headers=["tensor parallel", "weights GiB/GPU", "KV budget GiB/GPU", "KV needed GiB/GPU", "KV tokens",
                                    "max seqs", "fits", "verdict"], tablefmt="simple", disable_numparse=True), ""]


def _snippet(s: dict[str, Any] | None) -> list[str]:
    if not s:
        return []
    out = ["", "Launch:"]
    if s.get("kind") == "vllm":
        return out + [f"  {s['command']}"]
    out.append(f"  {s['torchrun']}")
    if s.get("code"):
        out.append("")
        out += [f"  {line}" for line in s["code"].rstrip().splitlines()]
    if s.get("deepspeed_config"):
        out += ["", "  ds_config.json:"]
        out += [f"  {line}" for line in json.dumps(s["deepspeed_config"], indent=2).splitlines()]
    if s.get("accelerate_config"):
        out += ["", "  accelerate config (accelerate launch --config_file accelerate.yaml train.py):"]
        out += [f"  {line}" for line in s["accelerate_config"].rstrip().splitlines()]
    return out
