#!/usr/bin/env python3
"""The calibration cases (calibration_cases.toml): each published run loaded with the fields of the case it is
``like``, turned into the advisor's inputs (the rig built from the GPU catalog as `advise` builds a planned rig, the
layout the source names) and predicted by the advisor's own functions. Shared by advisor_accuracy.py (the table and
its goals) and fit_advisor.py (the fit of the time model's parameters and the bands)."""

from __future__ import annotations

import dataclasses
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuadvisor import catalog  # noqa: E402
from gpuadvisor.advisor import constants as C  # noqa: E402
from gpuadvisor.advisor import fitted, network  # noqa: E402
from gpuadvisor.advisor import formulas as F  # noqa: E402
from gpuadvisor.advisor import inference as I  # noqa: E402
from gpuadvisor.advisor import strategies as S  # noqa: E402
from gpuadvisor.advisor import timing as T  # noqa: E402
from gpuadvisor.advisor.architecture import (  # noqa: E402
    Architecture,
    architecture_from_hf_config,
    architecture_from_spec,
)
from gpuadvisor.advisor.fitted import FitParams  # noqa: E402
from gpuadvisor.advisor.layout import build as build_layout  # noqa: E402
from gpuadvisor.advisor.memory import Layout  # noqa: E402
from gpuadvisor.advisor.rigview import hypothetical  # noqa: E402
from gpuadvisor.advisor.workload import Workload  # noqa: E402

CASES_FILE = Path(__file__).with_name("calibration_cases.toml")
GiB = 2**30

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
    if a.get("gpt"):  # Megatron GPT: LayerNorm with bias, biases, vocab 51200 (or the case's: BLOOM's 250880)
        vocab, norm, bias, source = a.get("vocab", 51200), "layernorm", True, "Narayanan et al. 2021 GPT shape"
    else:  # MPT (llm-foundry benchmark yamls): no biases, vocab 50368
        vocab, norm, bias, source = 50368, "rmsnorm", False, "llm-foundry MPT benchmark shape"
    return Architecture(
        name=a["name"],
        hidden=h,
        layers=a["layers"],
        heads=heads,
        kv_heads=a.get("kv_heads", heads),
        intermediate=4 * h,
        vocab=vocab,
        head_dim=h // heads,
        max_positions=case["seq_len"],
        tied_embeddings=a.get("tied", True),
        mlp="plain",
        norm=norm,
        bias=bias,
        learned_positions=a.get("learned_positions", True),
        source=source,
    )


# A case's workload and rig view do not depend on the fitted parameters (neither module reads them): built once per
# case dict and reused, a fit's half a million predictions cost a third of the time (their cached properties kept).
_BUILT: dict[tuple[str, int], tuple[dict[str, Any], Any]] = {}


def _once(what: str, case: dict[str, Any], build: Any) -> Any:
    hit = _BUILT.get((what, id(case)))
    if hit is not None and hit[0] is case:
        return hit[1]
    value = build(case)
    _BUILT[(what, id(case))] = (case, value)
    return value


def workload(case: dict[str, Any]) -> Workload:
    """The advisor's workload for the case (built once per case dict)."""
    return _once("workload", case, _workload)


def _workload(case: dict[str, Any]) -> Workload:
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
    """The hypothetical rig the case ran on (built once per case dict)."""
    return _once("view", case, _view_for)


def _view_for(case: dict[str, Any]) -> Any:
    spec = catalog.gpu_by_id(case["gpu"])
    assert spec is not None, case["gpu"]
    return hypothetical(
        spec,
        case.get("gpus_per_node", 1),
        case.get("nodes", 1),
        case.get("inter_node_gbps"),
        nvlink=case.get("nvlink", True),
        network=network.parse(case["network"]) if "network" in case else None,
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


def predict(case: dict[str, Any], fit: FitParams | None = None) -> float:
    """The advisor's figure for the case's metric, with the time model's fitted parameters ``fit`` (default: the
    shipped ones)."""
    with fitted.using(fit):
        return _predict(case)


def _predict(case: dict[str, Any]) -> float:
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
    if metric == "maxtext_tflops_per_gpu":
        # MaxText's TFLOP/sec/device (maxtext_utils.calculate_tflops_training_per_device, 2024): 6 × every
        # parameter (the input embedding too) + the causal half of 12·L·s·d_attn, per token
        a = w.arch
        return (6 * w.params + 6 * a.layers * w.seq * a.q_dim) * cand.tokens_per_second / world / 1e12
    if metric == "megatron_tflops_per_gpu":
        a = w.arch
        flops = F.megatron_flops_per_iteration(cand.global_batch, w.seq, a.layers, a.hidden, a.vocab, recompute=True)
        return flops / cand.step_seconds / world / 1e12
    if metric == "torch_allocated_gib":
        return cand.memory.allocated_bytes / GiB
    if metric == "gpu_memory_gb":  # what nvidia-smi shows, in GB
        return cand.memory.total_bytes / 1e9
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


# -- running --------------------------------------------------------------------------------------------------------


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
    held_out: bool = False  # a publication kept out of every fit (the check on runs no constant saw)
    publication: str = ""

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured


def run(cases: list[dict[str, Any]] | None = None, fit: FitParams | None = None) -> list[Result]:
    """Every case (default: the file's) predicted with ``fit`` (default: the shipped parameters)."""
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
                float(predict(case, fit)),
                gen,
                tuple(case.get("fitted", ())),
                stack,
                case.get("source", ""),
                case.get("setting", ""),
                case.get("excluded", ""),
                bool(case.get("held_out", False)),
                case.get("publication", ""),
            )
        )
    return out


def counted(results: list[Result]) -> list[Result]:
    """The cases the goals are judged on: all but those whose measurement the hardware cannot produce (each says
    why)."""
    return [r for r in results if not r.excluded]
