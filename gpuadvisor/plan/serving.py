"""Serving throughput of a build: the advisor's pick for tensor-parallel engines (advisor_serving), and for a
layer-split engine the advisor's serving model (gpuadvisor.advisor.serving: prefill and decode
timed separately, continuous batching bounded by the KV cache, tensor-parallel all-reduces, weight and KV-cache
quantisation; fitted on published NVIDIA NIM and vLLM benchmarks, with the band from the held-out runs) for every
tensor-parallel size the advisor found to fit, as replicas of it on the build's GPUs sharing the concurrency.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from gpuadvisor.advice_model import Advice, ServingCandidate

ASSUMPTIONS = (
    "serving: the advisor's serving model (prefill compute-bound, decode bandwidth-bound, continuous batching at "
    "the given concurrency bounded by the KV cache; fitted on published NVIDIA NIM and vLLM benchmarks); a build "
    "with more GPUs than one tensor-parallel group serves replicas of it, each taking an equal share of the "
    "concurrent requests (a load balancer in front, assumed); the advisor's pick and replicas, over every GPU of the "
    "build, except that a pipeline split across nodes gives way to one node's group with replicas when that fits (a "
    "token passes the stages in turn)"
)


@dataclass
class Serving:
    replicas: int
    tensor_parallel: int
    sequences_per_replica: float
    step_ms: float  # one decode step at the running batch
    bound: str  # memory | compute (the decode step)
    name: str
    tokens_per_second: float  # output tokens/s of the whole build
    per_sequence_tokens_per_second: float
    ttft_s: float
    itl_s: float
    band: tuple[float, float] | None  # output tokens/s of the build, from the held-out published runs
    band_basis: str | None

    @property
    def generation_tokens_per_second(self) -> float | None:
        """One sequence's writing speed once its prompt is read (1 / the inter-token latency): what llama.cpp's
        tg figures and a chat user's eye measure, where tokens_per_second also counts each request's prompt."""
        return 1.0 / self.itl_s if self.itl_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        out = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}
        g = self.generation_tokens_per_second
        return out | {"generation_tokens_per_second": round(g, 3) if g else None}


LAYER_SPLIT_ENGINES = ("llama.cpp", "ollama")
LAYER_SPLIT = (
    "a layer-split engine (llama.cpp, Ollama) puts each GPU's share of the layers in turn on the token's path: "
    "one stream reads every weight at one GPU's bandwidth, so more GPUs hold a bigger model but add no speed; "
    "timed as one GPU of the group's memory with one GPU's bandwidth, on the advisor's serving model with the "
    "engine's own per-step overhead; what fits is the engine's own memory rule (below)"
)


def advisor_serving(advice: Advice, concurrency: int) -> Serving | None:
    """The advisor's own pick (gpuadvisor.advisor.inference: every tensor-parallel size with as many replicas as the
    whole build holds, across its nodes, timed on the workload's engine; the fastest that fits), as the plan's
    row. None when nothing fits or the GPU has no datasheet rates."""
    pick = advice.pick
    if not advice.fits or not isinstance(pick, ServingCandidate) or pick.serving is None or not pick.serving.fits:
        return None
    if pick.pipeline_parallel_size > 1:  # stages across nodes run in turn for a token: the node's own group
        within = [
            c
            for c in advice.serving
            if c.fits and c.pipeline_parallel_size == 1 and c.serving is not None and c.serving.fits
        ]
        if within:
            pick = max(within, key=lambda c: c.serving.output_tokens_per_second if c.serving else 0.0)
    r = pick.serving
    if r is None:
        return None
    replicas = max(1, pick.replicas)
    band = r.band.get("output_tokens_per_second") if r.band else None
    return Serving(
        replicas,
        pick.tensor_parallel_size * pick.pipeline_parallel_size,
        math.ceil(max(1, concurrency) / replicas),
        r.decode_step_s * 1e3,
        r.decode_bound,
        pick.name.split(" x")[0],
        r.output_tokens_per_second,
        r.output_tokens_per_second_per_user,
        r.ttft_s,
        r.itl_s,
        (float(band.low), float(band.high)) if band else None,
        f"{band.coverage} (ratio x{band.ratio_low:.2f}-x{band.ratio_high:.2f}, held-out published serving runs)"
        if band
        else None,
    )


def serving_throughput(
    advice: Advice, *, gpus: int, spec: Any, workload: Any, layer_split: bool = False, cards: list[Any] | None = None
) -> Serving | None:
    """The fastest way to serve the workload's concurrency on the build: over every tensor-parallel size the
    advisor found to fit (its pick is the smallest; a larger one reads the weights fewer times per token),
    replicas of it on the build's GPUs. None when nothing fits or the GPU has no datasheet rates."""
    if not advice.fits or spec is None:
        return None
    link = advice.rig.busbw_gbps
    best = None
    for c in advice.serving:
        if not c.fits:
            continue
        s = _one(c, gpus=gpus, spec=spec, workload=workload, link_gbps=link, layer_split=layer_split, cards=cards)
        if s is not None and (best is None or s.tokens_per_second > best.tokens_per_second * 1.001):
            best = s
    return best


def _one(
    c: ServingCandidate,
    *,
    gpus: int,
    spec: Any,
    workload: Any,
    link_gbps: float | None,
    layer_split: bool = False,
    cards: list[Any] | None = None,
) -> Serving | None:
    from gpuadvisor.advisor import serving as SV
    from gpuadvisor.advisor.inference import layer_split_group

    tp = c.gpus
    if tp > gpus:
        return None
    concurrency = max(1, int(workload.concurrency or 1))
    replicas = max(1, min(gpus // tp, concurrency))
    per = math.ceil(concurrency / replicas)
    if layer_split:  # the group's memory, one GPU's bandwidth, no tensor-parallel all-reduce
        group = sorted(cards, key=lambda g: -g.memory_bandwidth_gbps)[:tp] if cards else [spec] * tp
        res = _layer_split(c, group, dataclasses.replace(workload, concurrency=per))
    else:
        res = SV.predict_workload(
            dataclasses.replace(workload, concurrency=per),
            spec,
            tp,
            cuda_memory_bytes=c.capacity_bytes,
            nvlink=c.nvlink,
            link_gbps=None if c.nvlink else link_gbps,
            kv_budget_bytes=c.kv_cache_budget_bytes,
        )
    if not res.fits:
        return None
    band = res.band.get("output_tokens_per_second") if res.band else None
    low_high = (float(band.low) * replicas, float(band.high) * replicas) if band else None
    basis = (
        f"{band.coverage} (ratio x{band.ratio_low:.2f}-x{band.ratio_high:.2f}, held-out published serving runs)"
        if band
        else None
    )
    return Serving(
        replicas,
        tp,
        per,
        res.decode_step_s * 1e3,
        res.decode_bound,
        layer_split_group(tp) if layer_split else c.name.split(" x")[0],
        replicas * res.output_tokens_per_second,
        res.output_tokens_per_second_per_user,
        res.ttft_s,
        res.itl_s,
        low_high,
        basis,
    )


def _layer_split(c: ServingCandidate, group: list[Any], workload: Any) -> Any:
    """One layer-split group: each GPU holds layers in proportion to its memory (llama.cpp's default
    --tensor-split) and runs them at its own speed, one GPU after another, so a token takes the time-weighted sum
    of the cards' times; one kind of card is its own time."""
    from gpuadvisor.advisor import serving as SV

    tp = len(group)
    kv = c.kv_cache_budget_bytes * tp if c.kv_cache_budget_bytes else None
    memory = sum(g.memory_bytes for g in group)
    results = []
    for g in {g.id: g for g in group}.values():
        share = sum(x.memory_bytes for x in group if x.id == g.id) / memory
        r = SV.predict_workload(
            workload, g, 1, cuda_memory_bytes=c.capacity_bytes * tp, nvlink=False, link_gbps=None, kv_budget_bytes=kv
        )
        results.append((share, r))
    if len(results) == 1 or not all(r.fits and r.output_tokens_per_second for _, r in results):
        return results[0][1]
    pace = min((r for _, r in results), key=lambda r: r.output_tokens_per_second)
    seconds = sum(share / r.output_tokens_per_second for share, r in results)  # per output token of the group
    scale = 1.0 / seconds / pace.output_tokens_per_second
    out = dataclasses.replace(pace)
    out.output_tokens_per_second = pace.output_tokens_per_second * scale
    out.output_tokens_per_second_per_user = pace.output_tokens_per_second_per_user * scale
    out.decode_step_s = sum(share * r.decode_step_s for share, r in results)
    out.itl_s = sum(share * r.itl_s for share, r in results)
    out.ttft_s = sum(share * r.ttft_s for share, r in results)
    b = pace.band.get("output_tokens_per_second") if pace.band else None
    if b is not None:
        out.band = dict(pace.band) | {
            "output_tokens_per_second": dataclasses.replace(b, low=b.low * scale, high=b.high * scale)
        }
    return out


def capped(s: Serving, prefill: float, decode: float, output_len: int) -> Serving:
    """The serving row under a GPU power cap: the prompt is read at ``prefill`` of full speed (compute-bound), each
    token written at ``decode`` (the decode step's own bound decides which curve the caller passes); the build's
    tokens/s and band scale by the time of one request (its prompt, then ``output_len`` tokens)."""
    before = s.ttft_s + output_len * s.itl_s
    ttft, itl = s.ttft_s / prefill, s.itl_s / decode
    scale = before / (ttft + output_len * itl) if before > 0 else decode
    return dataclasses.replace(
        s,
        step_ms=s.step_ms / decode,
        tokens_per_second=s.tokens_per_second * scale,
        per_sequence_tokens_per_second=s.per_sequence_tokens_per_second * scale,
        ttft_s=ttft,
        itl_s=itl,
        band=(s.band[0] * scale, s.band[1] * scale) if s.band else None,
    )
