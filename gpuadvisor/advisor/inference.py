"""Serving: weights and KV cache per GPU for each tensor-parallel size, the smallest that fits, vLLM's command."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuadvisor.advice_model import Excluded, ServingCandidate, ServingResult, ServingSnippet
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import engines as E
from gpuadvisor.advisor import formulas as F
from gpuadvisor.advisor import serving as SV
from gpuadvisor.advisor.architecture import Architecture
from gpuadvisor.advisor.rigview import RigView
from gpuadvisor.advisor.workload import Workload

# What the advice's ServingCandidate carries of an option under the option's own name, as it stands.
SAME_NAMED = (
    "kv_capacity_tokens",
    "capacity_bytes",
    "profile_tokens",
    "kv_heads_per_gpu",
    "nvlink",
    "fits",
    "status",
    "reason",
    "replicas",
)


@dataclass
class ServingOption:
    tp: int
    pp: int
    weights_bytes: float
    activation_bytes: float
    runtime_bytes: float  # vLLM's non-torch memory (CUDA context, NCCL buffers)
    kv_budget_bytes: float  # what is left for the KV cache on each GPU
    kv_per_token_bytes: float
    kv_needed_bytes: float
    capacity_bytes: int
    nvlink: bool
    profile_tokens: int = 0
    profile_seqs: int = 0
    kv_heads_per_gpu: float = 0.0
    reserved_bytes: int = C.DRIVER_RESERVED_BYTES
    status: str = "candidate"
    reason: str = ""
    replicas: int = 1  # data-parallel copies of this group on the rig's other GPUs
    rate: float | None = None  # the rig's predicted output tokens/s with every replica (None: not timed)
    layer_split: bool = False  # llama.cpp/Ollama: whole layers per GPU, no tensor parallelism

    @property
    def kv_capacity_tokens(self) -> int:
        if self.kv_budget_bytes <= 0:
            return 0
        blocks = int(self.kv_budget_bytes // (self.kv_per_token_bytes * C.VLLM_BLOCK_TOKENS))
        return blocks * C.VLLM_BLOCK_TOKENS

    @property
    def fits(self) -> bool:
        return self.kv_budget_bytes > 0 and self.kv_budget_bytes >= self.kv_needed_bytes

    def max_sequences(self, context: int) -> int:
        return self.kv_capacity_tokens // context

    @property
    def group(self) -> str:
        """The GPUs one copy of the model runs on: "TP=2", "TP=8 × PP=2", or (llama.cpp, Ollama) "layer split over
        2 GPUs" / "one GPU"."""
        if self.layer_split:
            return layer_split_group(self.tp * self.pp)
        return f"TP={self.tp}" + (f" × PP={self.pp}" if self.pp > 1 else "")

    @property
    def name(self) -> str:
        return self.group + (f" x{self.replicas}" if self.replicas > 1 else "")

    def to_model(self, context: int, serving: ServingResult | None = None) -> ServingCandidate:
        """The option as the advice carries it (bytes rounded), with its serving figures."""
        total = (
            self.weights_bytes
            + self.activation_bytes
            + self.runtime_bytes
            + min(max(self.kv_budget_bytes, 0), self.kv_needed_bytes)
        )
        return ServingCandidate(
            name=self.name,
            tensor_parallel_size=self.tp,
            pipeline_parallel_size=self.pp,
            weights_bytes=round(self.weights_bytes),
            activation_peak_bytes=round(self.activation_bytes),
            runtime_bytes=round(self.runtime_bytes),
            kv_cache_budget_bytes=round(max(self.kv_budget_bytes, 0)),
            kv_cache_needed_bytes=round(self.kv_needed_bytes),
            kv_bytes_per_token=round(self.kv_per_token_bytes),
            max_sequences_at_context=self.max_sequences(context),
            memory_used_bytes=round(total),
            driver_reserved_bytes=self.reserved_bytes,
            profile_sequences=self.profile_seqs,
            serving=serving,
            **{k: getattr(self, k) for k in SAME_NAMED},
        )


def tp_sizes_ok(a: Architecture, t: int) -> bool:
    """Whether vLLM runs this tensor_parallel_size: the attention heads divide by it, and the KV heads divide by
    it or it by them (below one KV head per GPU vLLM replicates them: QKVParallelLinear num_kv_head_replicas)."""
    return a.heads % t == 0 and (a.kv_heads % t == 0 or t % a.kv_heads == 0)


def serving_options(view: RigView, w: Workload) -> tuple[list[ServingOption], list[Excluded]]:
    """One option per tensor_parallel_size vLLM accepts for the model's heads (tp_sizes_ok)."""
    a = w.arch
    out: list[ServingOption] = []
    excluded = []
    tps = [t for t in (1, 2, 4, 8, 16) if t <= view.gpus_per_node]
    pps = [1] if view.nodes == 1 else [1, view.nodes]
    for pp in pps:
        for t in tps:
            if not tp_sizes_ok(a, t) and not E.engine(w.engine).layer_split:  # whole layers: any GPU count
                if pp == 1:
                    excluded.append(
                        Excluded(
                            strategy=f"TP={t}",
                            reason=f"{a.heads} attention heads / {a.kv_heads} KV heads: vLLM needs the heads "
                            f"to divide by {t}, and the KV heads to divide by it or it by them",
                        )
                    )
                continue
            out.append(option(view, w, t, pp))
    return out, excluded


def profile_shape(view: RigView, w: Workload, replicas: int = 1) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) of vLLM's profile pass: its `vllm serve` defaults for this GPU
    (vllm/engine/arg_utils.py get_batch_defaults), with max_num_seqs the --max-num-seqs our command passes."""
    cuda_total = view.cuda_memory_bytes
    large = cuda_total >= C.VLLM_LARGE_GPU_BYTES and "a100" not in view.gpu_name.lower()
    tokens, seqs = C.VLLM_PROFILE_LARGE if large else C.VLLM_PROFILE_DEFAULT
    if w.max_num_seqs is not None:
        seqs = w.max_num_seqs
    elif w.concurrency > 1 and not w.offline:
        seqs = per_replica(w, replicas)  # the --max-num-seqs the launch line passes each replica
    return tokens, min(seqs, tokens)


def weight_bytes(w: Workload) -> float:
    """Bytes of the served weights: every parameter at the precision's size; with fp8 (vLLM --quantization fp8)
    only the transformer layers' linear weights are 8-bit, the embeddings, lm_head and norms stay 16-bit
    (vLLM's Fp8LinearMethod quantizes linear layers; the lm_head is a ParallelLMHead)."""
    q = w.weight_quantization
    if q == "none" and w.precision != "fp8":
        return w.params * w.weight_bytes_inference()
    if q != "fp8":  # int8 / AWQ / GPTQ: quantised linear layers, the rest in the 16-bit dtype
        return SV.weight_bytes(w.arch, w.params, "bf16" if w.precision == "fp8" else w.precision, q)
    linear = min(w.params, w.arch.layers * w.arch.layer_linear_params())
    return linear * C.DTYPE_BYTES["fp8"] + (w.params - linear) * C.DTYPE_BYTES["bf16"]


def layer_split_group(gpus: int) -> str:
    """llama.cpp's or Ollama's model on ``gpus`` GPUs: whole layers on each, no tensor parallelism."""
    return f"layer split over {gpus} GPUs" if gpus > 1 else "one GPU"


def option(view: RigView, w: Workload, t: int, pp: int) -> ServingOption:
    """Per GPU, vLLM's own accounting (vllm/v1/worker/gpu_worker.py determine_available_memory): the KV cache gets
    gpu_memory_utilization × the CUDA-visible memory, less the weights/(t·p), the profile pass's activation peak
    and the non-torch memory. A layer-split engine (llama.cpp, Ollama) has its own rule: split_option."""
    if E.engine(w.engine).layer_split:
        return split_option(view, w, t, pp)
    a = w.arch
    weights = weight_bytes(w) / (t * pp)
    replicas = replica_count(view, w, t, pp)
    tokens, seqs = profile_shape(view, w, replicas)
    act_dtype = C.DTYPE_BYTES["bf16"]
    # The profiled forward pass: the MLP's gate+up output and a few hidden-size buffers per token (16-bit); then
    # the sampler over the last position of each sequence, with the forward's hidden states still held.
    forward = tokens * (2 * a.intermediate + 4 * a.hidden) * act_dtype / t
    sampler = seqs * a.vocab * C.VLLM_SAMPLER_BYTES_PER_LOGIT + tokens * a.hidden * act_dtype
    if w.vllm_version == "v0":
        # V0 before the profiler gained its dummy sampler run (vllm-project/vllm PR #10511, Dec 2024; vLLM <= 0.6.4):
        # the profile peak is the forward pass and the fp32 logits of the sampled positions.
        sampler = seqs * a.vocab * 4 + tokens * a.hidden * act_dtype
    act = max(forward, sampler)
    kv_heads = max(1.0, a.kv_heads / t)
    kv_tok = F.kv_cache_bytes_per_token(math.ceil(a.layers / pp), kv_heads, a.head_dim, w.kv_bytes())
    runtime = C.VLLM_NON_TORCH_BYTES_SINGLE if t * pp == 1 else C.VLLM_NON_TORCH_BYTES_PARALLEL
    reserved = view.reserved_bytes
    usable = w.gpu_memory_utilization * view.cuda_memory_bytes
    budget = usable - weights - act - runtime
    if w.vllm_version == "0.21":
        budget -= C.VLLM_CUDA_GRAPH_BYTES  # captured before the KV cache is sized, so it comes out of the budget
    need = w.ctx * per_replica(w, replicas) * kv_tok
    nvlink = t == 1 or view.nvlink_groups_of(t)
    o = ServingOption(
        t, pp, weights, act, runtime, budget, kv_tok, need, view.memory_bytes, nvlink, tokens, seqs, kv_heads, reserved
    )
    o.replicas = replicas
    return o


def split_option(view: RigView, w: Workload, t: int, pp: int) -> ServingOption:
    """llama.cpp and Ollama on t x pp GPUs (engines.toml [memory.layer_split]): whole layers of the GGUF file on each
    GPU, the output head on the last, the input embedding in host memory; each GPU keeps the compute buffer and
    the CUDA context; the rest of what CUDA sees on the fullest GPU is its KV cache (f16, or q8_0 with an fp8
    --kv-cache-dtype), for the context of every --parallel slot."""
    a = w.arch
    q = E.weight_format(w.weight_quantization)
    head_bits = (q.bits if a.tied_embeddings else q.head_bits) or 16.0
    kv = E.split_rule()["kv_q8_0_bytes"] if w.kv_cache_dtype == "fp8" else 2.0
    replicas = replica_count(view, w, t, pp)
    slots = per_replica(w, replicas)
    m = E.split_memory(
        layers=a.layers,
        layer_bytes=a.layer_linear_params() * (q.bits or 16.0) / 8,
        head_bytes=a.vocab * a.hidden * head_bits / 8,
        kv_layer_bytes_per_token=2 * a.kv_heads * a.head_dim * kv,
        hidden=a.hidden,
        heads=a.heads,
        vocab=a.vocab,
        context_tokens=w.ctx * slots,
        gpus=t * pp,
    )
    nvlink = t == 1 or view.nvlink_groups_of(t)
    o = ServingOption(
        t,
        pp,
        m.weights_bytes,
        m.compute_bytes,
        m.context_bytes,
        m.kv_budget(view.cuda_memory_bytes),
        m.kv_bytes_per_token,
        w.ctx * slots * m.kv_bytes_per_token,
        view.memory_bytes,
        nvlink,
        0,
        slots,
        float(a.kv_heads),
        view.reserved_bytes,
    )
    o.replicas, o.layer_split = replicas, True
    return o


def replica_count(view: RigView, w: Workload, t: int, pp: int) -> int:
    """Data-parallel copies of a t x pp group: as many as the rig's GPUs hold (whole groups in each node), no
    more than there are requests to spread over them; one for a group that spans nodes."""
    if pp > 1:
        return 1
    return max(1, min((view.gpus_per_node // t) * view.nodes, w.concurrency))


def per_replica(w: Workload, replicas: int) -> int:
    """The requests one replica holds at once: its share of --concurrency (a batch run needs room for one)."""
    return 1 if w.offline else math.ceil(w.concurrency / replicas)


def pick_serving(opts: list[ServingOption]) -> ServingOption | None:
    """The fastest option that fits: the highest output tokens/s over the rig with all its replicas (at a closed
    loop of --concurrency that is also the shortest end-to-end latency); within 2 % of the fastest, the fewest
    GPUs per replica, inside an NVLink domain. Options not timed (a GPU outside the catalog): the fewest GPUs."""
    fitting = [o for o in opts if o.fits]
    if not fitting:
        return None
    rates = [o.rate for o in fitting if o.rate]
    if len(rates) == len(fitting):
        best = max(rates)
        fitting = [o for o in fitting if (o.rate or 0) >= 0.98 * best]
    return min(fitting, key=lambda o: (o.tp * o.pp, not o.nvlink))


def serving_performance(view: RigView, w: Workload, o: ServingOption) -> ServingResult | None:
    """Prefill, decode, TTFT/ITL and output tokens/s of option ``o`` at the workload's concurrency and lengths
    (None when the GPU is not in the catalog: no datasheet rates to time it)."""
    if view.spec is None:
        return None
    link = view.intra_busbw(o.tp, o.nvlink).gbps if o.tp > 1 else 0.0
    res = SV.predict_workload(
        w,
        view.spec,
        o.tp * o.pp,
        cuda_memory_bytes=view.cuda_memory_bytes,
        nvlink=o.nvlink,
        link_gbps=link,
        kv_budget_bytes=o.kv_budget_bytes,
        replicas=o.replicas,
    )
    o.rate = res.output_tokens_per_second if res.fits else None
    if o.pp > 1:
        res.notes.append(
            f"pipeline parallel over {o.pp} nodes is timed as one tensor-parallel group of {o.tp * o.pp} "
            "GPUs (assumed: the stages' hand-offs across nodes are not counted)"
        )
    return res


def serving_assumptions(w: Workload, view: RigView) -> list[str]:
    """What the serving figures assume, each with its source."""
    inp, out, given = w.serving_lengths
    k = SV.fitted_constants()
    overhead, src = k.overhead(w.engine)
    lines = [
        f"serving figures: {w.concurrency} concurrent request{'s' if w.concurrency != 1 else ''} (closed loop) "
        f"of {inp} "
        f"prompt + {out} generated tokens" + ("" if given else " (assumed: give --input-len and --output-len)"),
        f"prefill at {k.prefill_compute_fraction:.0%} of the datasheet dense peak, decode at "
        f"{k.decode_bandwidth_fraction:.0%} of the datasheet memory bandwidth, {w.engine} step overhead "
        f"{overhead * 1e3:.1f} ms ({src}): fitted on published NIM, vLLM, SGLang and llama.cpp runs; bands from a "
        "leave-one-publication-out refit",
        f"tensor parallelism: 2 all-reduces per layer, {SV.ALLREDUCE_LATENCY_S['nvlink'] * 1e6:.0f} µs each over "
        "NVLink, "
        f"{SV.ALLREDUCE_LATENCY_S['pcie'] * 1e6:.0f} µs over PCIe (assumed) plus the bytes at the all-reduce busbw",
    ]
    if view.spec is None:
        lines.append(f"{view.gpu_name} is not in the GPU catalog: no datasheet rates, so no serving times")
    q = w.weight_quantization
    if q in ("int8", "awq", "gptq"):
        kind = {"int8": "INT8 (W8A8)", "awq": "AWQ 4-bit", "gptq": "GPTQ 4-bit"}[q]
        lines.append(
            f"weights: a pre-quantised {kind} checkpoint of the model (vLLM reads its quantisation "
            "config); 4-bit weights at group size 128 with a 16-bit scale per group; the matmuls timed at "
            "the 16-bit peak"
        )
    return lines


def explain_serving(opts: list[ServingOption], chosen: ServingOption | None, w: Workload) -> str:
    gib = C.GiB
    for o in opts:
        if o is chosen:
            o.status = "pick"
            continue
        o.status = "rejected"
        if o.kv_budget_bytes <= 0 and E.engine(w.engine).layer_split:
            o.reason = (
                f"the weights on the fullest GPU ({o.weights_bytes / gib:.1f} GiB), its compute buffer "
                f"({o.activation_bytes / gib:.1f} GiB) and the CUDA context ({o.runtime_bytes / gib:.2f} GiB) leave "
                f"no room for a KV cache in the {(o.capacity_bytes - o.reserved_bytes) / gib:.1f} GiB CUDA sees"
            )
        elif o.kv_budget_bytes <= 0:
            o.reason = (
                f"weights alone ({o.weights_bytes / gib:.1f} GiB per GPU) leave no room for a KV cache in "
                f"{w.gpu_memory_utilization:.0%} of the {(o.capacity_bytes - o.reserved_bytes) / gib:.1f} GiB "
                "CUDA sees"
            )
        elif not o.fits:
            n = per_replica(w, o.replicas)
            o.reason = (
                f"KV cache for {n} × {w.ctx} tokens needs {o.kv_needed_bytes / gib:.1f} GiB per GPU, "
                f"{o.kv_budget_bytes / gib:.1f} GiB left (room for {o.max_sequences(w.ctx)} sequences)"
            )
        elif chosen is not None and o.rate and chosen.rate and o.rate < 0.98 * chosen.rate:
            o.reason = f"fits, {o.rate:,.0f} output tokens/s against {chosen.rate:,.0f} for {chosen.name}"
        elif chosen is not None:
            o.reason = f"fits, no faster, more GPUs per replica than {chosen.name}"
    if chosen is None:
        return ""
    n = per_replica(w, chosen.replicas)
    seqs = chosen.max_sequences(w.ctx)
    holds = (
        f"holds the weights ({chosen.weights_bytes / gib:.1f} GiB per GPU) and "
        f"{n} sequence{'s' if n != 1 else ''} of {w.ctx} tokens; its KV cache holds {chosen.kv_capacity_tokens:,} "
        f"tokens ({seqs} sequence{'s' if seqs != 1 else ''} at that context)"
    )
    if chosen.rate is None:
        return f"{chosen.name} is the smallest tensor-parallel size that {holds}."
    if chosen.replicas > 1:
        share = "a batch run's requests" if w.offline else f"the {w.concurrency} requests ({n} each)"
        return (
            f"{chosen.name}: {chosen.replicas} replicas of TP={chosen.tp} on {chosen.replicas * chosen.tp} GPUs "
            f"serve {share} fastest of the options; each {holds}."
        )
    return f"{chosen.name} is the fastest option that fits: it {holds}."


def launch_plan(w: Workload, o: ServingOption, hf_id: str, view: RigView | None = None) -> E.Launch:
    """The launch lines' inputs for option ``o`` on the workload's engine: --max-num-seqs (or the engine's batch
    flag) only when a concurrency or a cap was asked for (the engine's own default is the better cap for a server
    than 1); AWQ and GPTQ in float16, the dtype their vLLM and SGLang kernels take."""
    q = w.weight_quantization
    batch = (
        w.max_num_seqs if w.max_num_seqs is not None else (per_replica(w, o.replicas) if w.concurrency > 1 else None)
    )
    if w.offline and w.max_num_seqs is None:
        batch = None
    dtype = "float16" if q in ("awq", "gptq") else C.TORCH_DTYPE.get(w.precision, "bfloat16")
    return E.Launch(
        engine=w.engine,
        model=E.checkpoint(hf_id or None, q, w.engine),
        tp=o.tp,
        pp=o.pp,
        replicas=o.replicas,
        context=w.ctx,
        batch=batch,
        memory_fraction=w.gpu_memory_utilization,
        dtype=dtype,
        quantization=q,
        kv_fp8=w.kv_cache_dtype == "fp8",
        nodes=view.nodes if view else 1,
        gpus_per_node=view.gpus_per_node if view else o.tp * o.pp,
    )


def serving_snippet(w: Workload, o: ServingOption, hf_id: str, view: RigView) -> ServingSnippet:
    """The pick's launch lines on the workload's engine (engines.launch_lines)."""
    plan = launch_plan(w, o, hf_id, view)
    lines = E.launch_lines(plan)
    first = next(x for x in lines if not x.startswith("#"))
    return ServingSnippet(
        kind=w.engine,
        command=first,
        tensor_parallel_size=o.tp,
        pipeline_parallel_size=o.pp,
        nproc_per_node=view.gpus_per_node,
        nnodes=view.nodes,
        commands=lines,
        model=plan.model,
        replicas=o.replicas,
    )


def vllm_command(w: Workload, o: ServingOption, model_id: str) -> str:
    """The `vllm serve` line of option ``o`` (the engine's line when --engine names another)."""
    return next(x for x in E.launch_lines(launch_plan(w, o, model_id)) if not x.startswith("#"))


def batch_hint(opts: list[ServingOption], w: Workload) -> str:
    """When the weights fit but the KV cache cannot hold --concurrency sequences at once: a batch run of that
    many requests (--offline) queues the rest instead."""
    if w.offline or not any(o.kv_budget_bytes >= o.kv_per_token_bytes * w.ctx for o in opts):
        return ""
    return f". A batch of {w.concurrency} requests run as they fit: --offline"


def what_fits_here(view: RigView, w: Workload) -> str:
    """The weight and KV-cache formats that would fit on this same rig, before any other hardware: the
    quantisations the engine serves (and an fp8 KV cache), each tried at every tensor-parallel size."""
    found = []
    kvs = ["auto", "fp8"] if w.kv_cache_dtype != "fp8" else ["fp8"]
    for q in E.engine(w.engine).quantizations:
        for kv in kvs:
            if q == w.weight_quantization and kv == w.kv_cache_dtype:
                continue
            w2 = replace(w, quantization=q, kv_cache_dtype=kv)
            opts, _ = serving_options(view, w2)
            fit = [o for o in opts if o.fits]
            if fit:
                o = min(fit, key=lambda o: o.tp * o.pp)
                found.append((E.weight_format(q).label + (", KV cache fp8" if kv == "fp8" else ""), o.name))
                break
    if not found:
        return ""
    return (
        ". On this rig, "
        + "; ".join(f"{what} fits at {name}" for what, name in found[:4])
        + (" (--quantization, --kv-cache-dtype)")
    )


@dataclass
class ServingPlan:
    """The best way to serve a workload on a rig (best_serving): the pick (tensor/pipeline-parallel size and its
    replicas), its predicted figures (the rig's output tokens/s, one replica's latencies), its launch lines, and
    every option considered with its own figures."""

    pick: ServingOption | None
    result: ServingResult | None
    lines: list[str]
    options: list[ServingOption]
    results: list[ServingResult | None]


def best_serving(view: RigView, w: Workload, hf_id: str = "") -> ServingPlan:
    """For callers that price serving (plan): every TP x replicas option of ``w`` (its model, engine,
    quantisation, concurrency or --offline batch) on ``view``, timed, the fastest that fits picked, and its
    launch lines on the workload's engine."""
    opts, _ = serving_options(view, w)
    results = [serving_performance(view, w, o) if o.kv_budget_bytes > 0 else None for o in opts]
    pick = pick_serving(opts)
    explain_serving(opts, pick, w)
    if pick is None:
        return ServingPlan(None, None, [], opts, results)
    return ServingPlan(
        pick, results[opts.index(pick)], E.launch_lines(launch_plan(w, pick, hf_id, view)), opts, results
    )
