#!/usr/bin/env python3
"""How close the advisor's predictions are to published measurements of real runs.

Runs every case of benchmarks/calibration_cases.toml through the advisor's own functions (the rig built from the
GPU catalog as `advise` builds a planned rig, the layout the source names), and prints per case the prediction,
the measurement and their ratio, then per kind of figure the median and the worst ratios, against the goals:

    throughput: median 0.9-1.1, every case 0.67-1.5
    memory:     median 0.9-1.1, every case 0.75-1.33
    kv_cache:   every case 0.95-1.05 (for the vLLM engine version the case names)

and the throughput goals per training stack (eager PyTorch, torch.compile, Megatron-Core + Transformer Engine,
DeepSpeed, JAX). The time model's constants are fitted, refitted per held-out GPU generation and publication, and
the shipped bands derived, by benchmarks/fit_advisor.py (`--write` regenerates gpuadvisor/advisor/fitted.py and
calibration.toml); this script prints that report too (--refit).

    .venv/bin/python benchmarks/advisor_accuracy.py             # the table; exit 1 when a goal fails
    .venv/bin/python benchmarks/advisor_accuracy.py --refit     # also the held-out refits (benchmarks/fit_advisor.py)
    .venv/bin/python benchmarks/advisor_accuracy.py --markdown  # the table as Markdown (benchmarks/README.md)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuadvisor import catalog  # noqa: E402
from gpuadvisor.advisor import constants as C  # noqa: E402
from gpuadvisor.advisor import formulas as F  # noqa: E402
from gpuadvisor.advisor import inference as I  # noqa: E402
from gpuadvisor.advisor import strategies as S  # noqa: E402
from gpuadvisor.advisor import timing as T  # noqa: E402
from gpuadvisor.advisor.layout import build as build_layout  # noqa: E402
from gpuadvisor.advisor.memory import Layout  # noqa: E402
from gpuadvisor.advisor.rigview import hypothetical  # noqa: E402
from gpuadvisor.advisor.workload import (  # noqa: E402
    Architecture,
    Workload,
    architecture_from_hf_config,
    architecture_from_spec,
)

CASES_FILE = Path(__file__).with_name("calibration_cases.toml")
BANDS_FILE = ROOT / "gpuadvisor" / "advisor" / "calibration.toml"
GiB = 2**30

GOALS = {
    "throughput": {"median": (0.9, 1.1), "each": (0.67, 1.5)},
    "memory": {"median": (0.9, 1.1), "each": (0.75, 1.33)},
    "kv_cache": {"median": (0.95, 1.05), "each": (0.95, 1.05)},
    "formula": {"median": (0.999, 1.001), "each": (0.995, 1.005)},
}
NOT_INHERITED = {"id", "kind", "metric", "measured", "source", "setting", "fitted", "like", "excluded"}


def load_cases(path: Path = CASES_FILE) -> list[dict[str, Any]]:
    """The cases, each with the fields of the case it is ``like`` (recursively) filled in."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))["case"]
    by_id = {c["id"]: c for c in raw}

    def resolved(c: dict[str, Any]) -> dict[str, Any]:
        if "like" not in c:
            return dict(c)
        base = {k: v for k, v in resolved(by_id[c["like"]]).items() if k not in NOT_INHERITED}
        return {**base, **c}

    return [resolved(c) for c in raw]


# -- building the advisor's inputs from a case -------------------------------------------------------------------


def architecture(case: dict[str, Any]) -> Architecture:
    if "model" in case:
        spec = catalog.find_model(case["model"])
        assert spec is not None, case["model"]
        return architecture_from_spec(spec)
    if "hf_config" in case:  # a config.json beside the repository root, read as --hf-config reads it
        return architecture_from_hf_config(ROOT / case["hf_config"])
    a = case["arch"]
    h, heads = a["hidden"], a["heads"]
    # Both shapes: expansion 4, learned positions, tied embeddings, the sequence as the longest position.
    if a.get("gpt"):  # Megatron GPT: LayerNorm with bias, biases, vocab 51200
        vocab, norm, bias, source = 51200, "layernorm", True, "Narayanan et al. 2021 GPT shape"
    else:  # MPT (llm-foundry benchmark yamls): no biases, vocab 50368
        vocab, norm, bias, source = 50368, "rmsnorm", False, "llm-foundry MPT benchmark shape"
    return Architecture(
        name=a["name"],
        hidden=h,
        layers=a["layers"],
        heads=heads,
        kv_heads=heads,
        intermediate=4 * h,
        vocab=vocab,
        head_dim=h // heads,
        max_positions=case["seq_len"],
        tied_embeddings=True,
        mlp="plain",
        norm=norm,
        bias=bias,
        learned_positions=True,
        source=source,
    )


def workload(case: dict[str, Any]) -> Workload:
    arch = architecture(case)
    task = "inference" if case["kind"] == "kv_cache" else "train"
    w = Workload(arch=arch, task=task, model_label=case.get("model", ""))
    if "flash_attention" in case:
        w = dataclasses.replace(w, fused_attention=bool(case["flash_attention"]))
    fields = {
        k: case[k]
        for k in (
            "precision",
            "optimizer",
            "seq_len",
            "micro_batch",
            "finetune",
            "lora_rank",
            "state_bytes",
            "checkpointing",
            "compile",
            "loss",
            "optimizer_in_backward",
            "vllm_version",
            "max_num_seqs",
            "stack",
            "attention_kernel",
        )
        if k in case
    }
    nodes = case.get("nodes", 1)
    w = dataclasses.replace(w, nodes=nodes, inter_node_gbps=case.get("inter_node_gbps"), **fields)
    if task == "train":
        world = case.get("gpus_per_node", 1) * nodes
        dp = world // (case.get("tp", 1) * case.get("pp", 1))
        if "layout" in case:  # advise --layout's spelling: its data-parallel size
            dp = build_layout(case["layout"], view_for(case), w).dp
        w = dataclasses.replace(w, global_batch=case["micro_batch"] * case.get("accumulation", 1) * dp)
    w.validate()
    return w


def view_for(case: dict[str, Any]) -> Any:
    spec = catalog.gpu_by_id(case["gpu"])
    assert spec is not None, case["gpu"]
    return hypothetical(
        spec,
        case.get("gpus_per_node", 1),
        case.get("nodes", 1),
        case.get("inter_node_gbps"),
        nvlink=case.get("nvlink", True),
    )


def layout(case: dict[str, Any], view: Any) -> Layout:
    world = view.total_gpus
    strategy = case.get("strategy", "single")
    spans = view.nodes > 1
    if "layout" in case:
        return build_layout(case["layout"], view, workload(case))
    if strategy == "single":
        return Layout("single", "single GPU", "PyTorch", 0, dp=1)
    if strategy in ("ddp", "zero1", "zero2", "fsdp", "fsdp-offload"):
        stage = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3, "fsdp-offload": 3}[strategy]
        offload = "optimizer+params" if strategy == "fsdp-offload" else "none"
        return Layout(
            strategy,
            strategy,
            "",
            stage,
            dp=world,
            zero_stage=stage,
            shard_group=world,
            dp_spans_nodes=spans,
            offload=offload,
        )
    if strategy == "hsdp":
        return Layout(
            "hsdp",
            "HSDP",
            "",
            3,
            dp=world,
            zero_stage=3,
            hybrid=True,
            shard_group=view.gpus_per_node,
            dp_spans_nodes=True,
        )
    tp, pp = case.get("tp", 1), case.get("pp", 1)
    dp = world // (tp * pp)
    stage = case.get("zero_stage", 1 if dp > 1 else 0)
    return Layout(
        "megatron",
        f"TP={tp} PP={pp} DP={dp}",
        "",
        4,
        dp=dp,
        tp=tp,
        pp=pp,
        zero_stage=stage,
        shard_group=dp,
        dp_spans_nodes=spans and pp == 1,
        pp_across_nodes=pp > 1,
    )


def rates_for(case: dict[str, Any], view: Any, w: Workload) -> T.Rates:
    spec = view.spec
    prec = "bf16" if w.precision == "fp8" else w.compute_precision()
    peak = spec.peak_tflops(prec)
    return T.rates(
        spec,
        w.precision,
        peak,
        None,
        memory_gbps=case.get("memory_gbps"),
        power_w=case.get("power_limit_w"),
        attention_kernel=w.attention_kernel,
    )


def predict(case: dict[str, Any]) -> float:
    """The advisor's figure for the case's metric."""
    kind = case["kind"]
    if kind == "formula":
        return formula(case)
    w = workload(case)
    view = view_for(case)
    if kind == "kv_cache":
        opt = I.option(view, w, case.get("tp", 1), 1)
        return opt.kv_budget_bytes / GiB
    lay = layout(case, view)
    r = rates_for(case, view, w)
    cand = S.evaluate(view, w, lay, w.checkpointing == "full", r)
    metric = case["metric"]
    world = view.total_gpus
    if metric == "tokens_per_second_per_gpu":
        return cand.tokens_per_second / world
    if metric == "tokens_per_second_total":
        return cand.tokens_per_second
    if metric == "megatron_tflops_per_gpu":
        a = w.arch
        flops = F.megatron_flops_per_iteration(cand.global_batch, w.seq, a.layers, a.hidden, a.vocab, recompute=True)
        return flops / cand.step_seconds / world / 1e12
    if metric == "torch_allocated_gib":
        return cand.memory.allocated_bytes / GiB
    if metric == "torch_reserved_gib":
        return cand.memory.allocated_bytes * (1 + C.ALLOCATOR_RESERVE_FRACTION) / GiB
    raise ValueError(f"{case['id']}: unknown metric {metric}")


def formula(case: dict[str, Any]) -> float:
    a = case["args"]
    f = case["formula"]
    if f == "zero_model_state_gb":
        v = F.zero_model_state_bytes(a["psi"], a["stage"], a["n"]) / 1e9
    elif f == "deepspeed_zero2_gib":
        v = F.deepspeed_zero2_estimate_bytes(a["params"], a["gpus"], a["version"]) / GiB
    elif f == "deepspeed_zero2_offload_gib":
        v = F.deepspeed_zero2_estimate_bytes(a["params"], a["gpus"], a["version"], cpu_offload=True) / GiB
    elif f == "korthikanti_gib":
        v = (
            F.activation_bytes_per_layer(
                a["s"],
                a["b"],
                a["h"],
                a["a"],
                a.get("t", 1),
                sequence_parallel=a.get("sequence_parallel", False),
                recompute=a.get("recompute", "none"),
            )
            / GiB
        )
    elif f == "korthikanti_model_gib":
        v = a["layers"] * F.activation_bytes_per_layer(a["s"], a["b"], a["h"], a["a"], fused_attention=True) / GiB
    else:
        raise ValueError(f"{case['id']}: unknown formula {f}")
    return round(v, case.get("round", 3))


# -- running and summarising ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    id: str
    kind: str
    metric: str
    measured: float
    predicted: float
    generation: str
    fitted: tuple[str, ...]
    stack: str  # the training stack whose fused kernels the time model applies (timing.stack_key)
    source: str
    setting: str
    excluded: str = ""

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured


def run(cases: list[dict[str, Any]] | None = None) -> list[Result]:
    out = []
    for case in cases if cases is not None else load_cases():
        gen = "-"
        if "gpu" in case:
            gen = catalog.gpu_by_id(case["gpu"]).architecture
        stack = T.stack_key(workload(case)) if case["kind"] == "throughput" else "-"
        out.append(
            Result(
                case["id"],
                case["kind"],
                case["metric"],
                float(case["measured"]),
                float(predict(case)),
                gen,
                tuple(case.get("fitted", ())),
                stack,
                case.get("source", ""),
                case.get("setting", ""),
                case.get("excluded", ""),
            )
        )
    return out


def stats(results: list[Result]) -> dict[str, Any] | None:
    if not results:
        return None
    ratios = sorted(r.ratio for r in results)
    return {"n": len(ratios), "median": statistics.median(ratios), "min": ratios[0], "max": ratios[-1]}


def goal_ok(kind: str, s: dict[str, Any] | None) -> bool:
    if s is None:
        return True
    g = GOALS[kind]
    return g["median"][0] <= s["median"] <= g["median"][1] and g["each"][0] <= s["min"] and s["max"] <= g["each"][1]


def counted(results: list[Result]) -> list[Result]:
    """The cases the goals are judged on: all but those whose measurement the hardware cannot produce (each says
    why)."""
    return [r for r in results if not r.excluded]


def summary(results: list[Result]) -> dict[str, dict[str, Any]]:
    out = {}
    results = counted(results)
    for kind in GOALS:
        s = stats([r for r in results if r.kind == kind])
        if s:
            out[kind] = {**s, "ok": goal_ok(kind, s)}
    return out


def per_stack(results: list[Result]) -> dict[str, dict[str, Any]]:
    """The throughput goals per training stack (the median of each stack's runs 0.9-1.1, each run 0.67-1.5)."""
    out = {}
    rs = [r for r in counted(results) if r.kind == "throughput"]
    for stack in sorted({r.stack for r in rs}):
        s = stats([r for r in rs if r.stack == stack])
        if s:
            out[stack] = {**s, "ok": goal_ok("throughput", s)}
    return out


def _band(rs: list[Result]) -> dict[str, Any]:
    """The middle 80 % of the cases' ratios (10th to 90th percentile), and the worst ones."""
    ratios = sorted(r.ratio for r in rs)
    if len(ratios) >= 10:
        dec = statistics.quantiles(ratios, n=10, method="inclusive")
        lo, hi = dec[0], dec[-1]
    else:
        lo, hi = ratios[0], ratios[-1]
    return {
        "ratio_low": round(lo, 3),
        "ratio_high": round(hi, 3),
        "worst_low": round(ratios[0], 3),
        "worst_high": round(ratios[-1], 3),
        "cases": len(ratios),
    }


def bands(results: list[Result]) -> dict[str, Any]:
    """Ratio ranges the advisor reads at run time (the middle 80 % of the cases of a kind; all of them below 10 cases),
    every case predicted from datasheet rates. No case ran with measured rates, so there is no "measured" band;
    benchmarks/fit_advisor.py replaces the throughput entry with the band of the held-out ratios."""
    out: dict[str, Any] = {}
    for kind in ("throughput", "memory", "kv_cache"):
        rs = [r for r in counted(results) if r.kind == kind]
        if not rs:
            continue
        entry = {"datasheet": _band(rs)}
        out[kind] = entry
    return out


def bands_toml(b: dict[str, Any]) -> str:
    lines = [
        "# Generated by benchmarks/fit_advisor.py --write from benchmarks/calibration_cases.toml: do not edit.",
        "# predicted / measured over the published runs: ratio_low/high the 10th/90th percentile (all cases below 10),",
        "# worst_low/high the extremes. A prediction v has the band [v / ratio_high, v / ratio_low]. Throughput:",
        "# the ratios of runs predicted by constants fitted without their GPU generation (held out); memory and",
        "# KV cache: the ratios of every run (their constants are counted or fitted by hand on these runs).",
        "",
    ]
    for kind, entry in b.items():
        for basis, v in entry.items():
            lines += [f"[bands.{kind}.{basis}]"] + [f"{k} = {json.dumps(x)}" for k, x in v.items()] + [""]
    return "\n".join(lines)


# -- printing ----------------------------------------------------------------------------------------------------


def fmt(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}" if x < 1 else f"{x:.2f}"


def table(results: list[Result], markdown: bool) -> str:
    rows = [
        (
            r.id + (" (excl.)" if r.excluded else ""),
            r.kind,
            r.generation,
            r.metric,
            fmt(r.measured),
            fmt(r.predicted),
            f"{r.ratio:.3f}",
            r.setting[:90],
        )
        for r in results
    ]
    head = ("id", "kind", "GPU gen.", "metric", "measured", "predicted", "ratio", "setting")
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(out)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    return "\n".join("  ".join(str(x).ljust(wd) for x, wd in zip(row, widths, strict=False)) for row in [head, *rows])


def report(results: list[Result], markdown: bool = False) -> str:
    lines = [table(results, markdown), ""]
    for r in results:
        if r.excluded:
            lines.append(f"excluded from the goals: {r.id}: {r.excluded}")
    lines.append("")
    summ = summary(results)
    sep = "| " if markdown else ""
    if markdown:
        lines += [
            "| kind | cases | median | worst low | worst high | goal (median; every case) | met |",
            "|---|---|---|---|---|---|---|",
        ]
    else:
        lines.append("per kind (ratio = predicted / measured):")
    for kind, s in summ.items():
        g = GOALS[kind]
        goal = f"{g['median'][0]}-{g['median'][1]}; {g['each'][0]}-{g['each'][1]}"
        cells = [
            kind,
            str(s["n"]),
            f"{s['median']:.3f}",
            f"{s['min']:.3f}",
            f"{s['max']:.3f}",
            goal,
            "yes" if s["ok"] else "NO",
        ]
        lines.append(sep + (" | ".join(cells) + " |" if markdown else "  " + "  ".join(cells)))
    lines.append("")
    lines.append("throughput per training stack:")
    if markdown:
        lines += ["", "| stack | cases | median | worst low | worst high | met |", "|---|---|---|---|---|---|"]
    for stack, s in per_stack(results).items():
        cells = [
            stack,
            str(s["n"]),
            f"{s['median']:.3f}",
            f"{s['min']:.3f}",
            f"{s['max']:.3f}",
            "yes" if s["ok"] else "NO",
        ]
        lines.append(sep + (" | ".join(cells) + " |" if markdown else "  " + "  ".join(cells)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument(
        "--refit", action="store_true", help="also refit per held-out generation and source (fit_advisor.py)"
    )
    args = ap.parse_args(argv)
    results = run()
    print(report(results, args.markdown))
    ok = all(s["ok"] for s in summary(results).values()) and all(s["ok"] for s in per_stack(results).values())
    if args.refit:
        import fit_advisor

        rep = fit_advisor.run()
        print("\n" + fit_advisor.report_text(rep))
        ok = ok and rep.nested_share >= fit_advisor.HELD_OUT_GOAL
    if not ok:
        print("\nGOAL NOT MET", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
