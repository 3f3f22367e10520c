"""Serving performance: prefill and decode of a continuously batched server, per request and in aggregate.

The model, per replica of ``tp`` GPUs (one tensor-parallel group):

- prefill of one request (input I tokens) is compute-bound: 2 FLOPs per linear weight per token plus causal
  attention (2·L·I²·d_attn), at a fitted fraction of the datasheet dense peak; never faster than one read of the
  weights (Pope et al. 2022, "Efficiently Scaling Transformer Inference", section 2; vLLM docs, "Optimization
  and Tuning": prefill is compute-bound, decode memory-bound);
- one decode step for b running sequences runs the linear layers' matmuls (the weights read once, 2 FLOPs per
  weight per sequence) and then the attention kernels (each sequence's KV cache read, on average I + O/2
  tokens): kernels that follow one another, each bound by its own roofline, so the step is
  max(matmul compute, weight read) + max(attention compute, cache read), at a fitted fraction of the datasheet
  memory bandwidth and of the dense peak (the roofline applied to each operator and summed, as in Yuan et al.
  2024, "LLM Inference Unveiled: Survey and Roofline Model Insights", arXiv:2402.16363). At large batches the
  matmuls turn compute-bound while the cache read stays memory-bound: the two add up, neither hides the other;
- tensor parallelism adds two all-reduces per layer (Megatron-LM, Shoeybi et al. 2019, section 3) of
  b × hidden 16-bit values, a latency each plus the bytes over the link;
- the engine adds a fixed scheduling and launch overhead per step (fitted per engine);
- continuous batching at closed-loop concurrency c (every finished request is replaced at once, as
  ``vllm bench serve --max-concurrency`` and NVIDIA's AIPerf/GenAI-Perf ``--concurrency`` run it): the running
  batch is m = min(c, the sequences the KV cache holds, --max-num-seqs). Over one request's life every running
  request is prefilled once and O decode steps run, so a round takes the m prefills + O·decode(m); the other
  requests' prefills land between a request's decode steps (inter-token latency), and requests beyond m wait
  in the queue (their wait is in the time to first token). Output tokens/s = c·O / end-to-end (Little's law).
- the m prefills of a round share forward passes (SGLang batches waiting prompts into one prefill batch; vLLM's
  chunked prefill and TensorRT-LLM's in-flight batching fold prompt chunks into the decode steps), so they cost
  max(one prefill alone, m × a prompt's compute): short prompts at high concurrency do not each pay a full read
  of the weights (the weights are read once per forward pass for every sequence in it).

The constants are fitted by benchmarks/serving_fit.py on the published runs in benchmarks/serving_cases.toml
and written with their held-out error bands to serving_fit.toml next to this module (package data).
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuadvisor.advice_model import ServingBand, ServingResult
from gpuadvisor.advisor import engines as E
from gpuadvisor.advisor.architecture import Architecture

FIT_FILE = Path(__file__).with_name("serving_fit.toml")

ENGINES = E.ENGINES
QUANTIZATIONS = E.QUANTIZATIONS
DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0}
# Engines with no published run of their own in the fit take the per-step overhead of the engine they run on.
OVERHEAD_FROM = {"trtllm": "nim", "ollama": "llamacpp"}
# Which datasheet peak the matmuls of a quantisation run at: fp8 W8A8 on the FP8 Tensor Cores where the GPU has
# them; 4-bit weight-only kernels (Marlin, AWQ GEMM) dequantise to 16-bit and run at the 16-bit peak; int8
# W8A8 at the 16-bit peak as well (the catalog carries no INT8 column: an assumption, conservative by up to 2x).
# All-reduce latency of one small message inside a tensor-parallel group (vLLM's custom all-reduce over
# NVLink; NCCL over PCIe). Assumed, not fitted: the calibration has one tensor-parallel model only.
ALLREDUCE_LATENCY_S = {"nvlink": 8e-6, "pcie": 25e-6}


@dataclass(frozen=True)
class ServingConstants:
    """The fitted constants (benchmarks/serving_fit.py writes them to serving_fit.toml)."""

    decode_bandwidth_fraction: float = 0.75  # of the datasheet memory bandwidth a decode step reaches
    prefill_compute_fraction: float = 0.5  # of the datasheet dense peak the prefill matmuls reach
    step_overhead_s: dict[str, float] = field(default_factory=lambda: {"vllm": 0.002, "nim": 0.002})
    prefill_overlap: float = 1.0  # of the decode steps' idle compute the mixed-in prompt chunks fill

    def overhead(self, engine: str) -> tuple[float, str]:
        """The per-step overhead of ``engine`` and where it comes from."""
        if engine in self.step_overhead_s:
            return self.step_overhead_s[engine], f"fitted on published {engine} runs"
        base = OVERHEAD_FROM.get(engine)
        if base in self.step_overhead_s:
            return self.step_overhead_s[base], f"no published {engine} run in the calibration: {base}'s figure"
        return self.step_overhead_s.get("vllm", 0.0), f"no published {engine} run in the calibration: vLLM's figure"


@functools.cache
def _fit() -> dict[str, Any]:
    try:
        return tomllib.loads(FIT_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def fitted_constants() -> ServingConstants:
    """The shipped constants (the defaults above when the fit file is missing)."""
    c = _fit().get("constants")
    if not c:
        return ServingConstants()
    return ServingConstants(
        float(c["decode_bandwidth_fraction"]),
        float(c["prefill_compute_fraction"]),
        {k: float(v) for k, v in c["step_overhead_s"].items()},
        float(c.get("prefill_overlap", 1.0)),
    )


def serving_band(metric: str, value: float | None) -> ServingBand | None:
    """The held-out band of ``metric`` (output_tokens_per_second, ttft_s, itl_s) around a predicted value:
    [value / ratio_high, value / ratio_low], with the coverage the leave-one-publication-out refit measured."""
    b = _fit().get("bands", {}).get(metric)
    if not b or value is None:
        return None
    return ServingBand.around(
        value,
        float(b["ratio_low"]),
        float(b["ratio_high"]),
        cases=int(b["cases"]),
        sources=int(b["sources"]),
        coverage=float(b["coverage"]),
        basis="leave-one-publication-out refit over published serving runs",
    )


@dataclass(frozen=True)
class GpuRates:
    """What the serving model needs of a GPU: its datasheet rates and the memory CUDA sees."""

    name: str
    memory_bandwidth_gbps: float
    tflops: dict[str, float]
    cuda_memory_bytes: float
    nvlink: bool = True  # the tensor-parallel group shares NVLink (else PCIe)
    link_gbps: float = 0.0  # per direction between two GPUs of the group (0: unknown, latency only)

    def peak(self, precision: str) -> float:
        for p in (precision, "bf16", "fp16", "fp32"):
            if self.tflops.get(p):
                return float(self.tflops[p]) * 1e12
        raise ValueError(f"{self.name}: no datasheet peak")


def linear_params(arch: Architecture) -> int:
    """Weights of the transformer layers' linear projections (the ones quantisation applies to)."""
    return arch.layers * arch.layer_linear_params()


def _split(arch: Architecture, params: int) -> tuple[int, int, int]:
    """(linear, head, the rest: input embedding and norms) of the weights; a tied head is the embedding."""
    lin = min(params, linear_params(arch))
    head = min(params - lin, arch.vocab * arch.hidden)
    return lin, head, params - lin - head


def weight_bytes(arch: Architecture, params: int, dtype: str, quantization: str) -> float:
    """All weights held in memory: the linear layers in the weight format (engines.toml), the output head at the
    format's head bits (vLLM's quantised linear methods leave lm_head in 16 bits; llama.cpp keeps it in Q6_K), the
    input embedding in the linear format for GGUF files (llama.cpp quantises token_embd with the rest) and in the
    16-bit dtype otherwise (vLLM's VocabParallelEmbedding is not quantised), norms in the 16-bit dtype."""
    base = DTYPE_BYTES.get(dtype, 2.0)
    if quantization == "none":
        return params * base
    q = E.weight_format(quantization)
    lin, head, rest = _split(arch, params)
    embed = 0 if arch.tied_embeddings else min(rest, arch.vocab * arch.hidden)
    embed_bytes = embed * q.bits / 8 if q.gguf else embed * base
    return lin * q.bits / 8 + head * (q.head_bits / 8 or base) + embed_bytes + (rest - embed) * base


def decode_read_bytes(arch: Architecture, params: int, dtype: str, quantization: str) -> float:
    """The weight bytes one forward pass reads: every weight but the untied input embedding, of which a step reads
    only its sequences' rows (a lookup table, not a matmul)."""
    embed = 0 if arch.tied_embeddings else arch.vocab * arch.hidden
    base = DTYPE_BYTES.get(dtype, 2.0)
    q = E.weight_format(quantization)
    per_embed = q.bits / 8 if q.gguf and q.bits else base
    return weight_bytes(arch, params, dtype, quantization) - min(embed, params) * per_embed


def kv_bytes_per_token(arch: Architecture, tp: int, kv_dtype: str) -> float:
    """K and V of every layer for one token on one GPU; below one KV head per GPU the heads are replicated."""
    heads = max(1.0, arch.kv_heads / tp)
    return 2 * arch.layers * heads * arch.head_dim * DTYPE_BYTES[kv_dtype]


def _allreduce(arch: Architecture, gpu: GpuRates, tp: int, tokens: int) -> float:
    """Two all-reduces per layer of tokens × hidden 16-bit values (ring: 2(t-1)/t of the bytes per GPU)."""
    if tp <= 1:
        return 0.0
    lat = ALLREDUCE_LATENCY_S["nvlink" if gpu.nvlink else "pcie"]
    size = tokens * arch.hidden * 2.0
    wire = 2 * (tp - 1) / tp * size / (gpu.link_gbps * 1e9) if gpu.link_gbps > 0 else 0.0
    return 2 * arch.layers * (lat + wire)


def predict(
    arch: Architecture,
    params: int,
    gpu: GpuRates,
    *,
    tp: int = 1,
    dtype: str = "bf16",
    quantization: str = "none",
    kv_cache_dtype: str = "auto",
    concurrency: int = 1,
    input_len: int = 1024,
    output_len: int = 256,
    engine: str = "vllm",
    gpu_memory_utilization: float = 0.90,
    max_num_seqs: int | None = None,
    kv_budget_bytes: float | None = None,
    runtime_bytes: float | None = None,
    constants: ServingConstants | None = None,
    with_band: bool = True,
    offline: bool = False,
) -> ServingResult:
    """Serving figures of ``arch`` (``params`` weights) on ``tp`` GPUs of ``gpu`` at ``concurrency``
    requests of ``input_len`` prompt and ``output_len`` generated tokens.

    kv_budget_bytes: the KV-cache bytes per GPU when the caller has vLLM's own accounting (advisor/inference.py);
    otherwise gpu_memory_utilization × CUDA memory less the weights and runtime_bytes (default 1.5 GiB per GPU
    for activations, CUDA context and communication buffers: an assumption).
    max_num_seqs: the engine's batch cap (None: the engine's default, engines.toml).
    offline: ``concurrency`` requests submitted at once (trtllm-bench throughput, vLLM's offline LLM.generate):
    the engine runs as many as its batch cap and KV cache allow, the rest wait; output tokens/s is the batch run's.
    """
    k = constants or fitted_constants()
    notes: list[str] = []
    kv_dtype = kv_cache_dtype if kv_cache_dtype != "auto" else ("bf16" if dtype in ("fp8", "bf16") else dtype)
    w_gpu = weight_bytes(arch, params, dtype, quantization) / tp
    kv_tok = kv_bytes_per_token(arch, tp, kv_dtype)
    if kv_budget_bytes is None:
        runtime = 1.5 * 2**30 if runtime_bytes is None else runtime_bytes
        kv_budget_bytes = gpu_memory_utilization * gpu.cuda_memory_bytes - w_gpu - runtime
    capacity = int(max(kv_budget_bytes, 0) // (kv_tok * 16)) * 16  # vLLM's 16-token blocks
    split = tp  # GPUs the weights and the cache are spread over
    if E.engine(engine).layer_split and tp > 1:
        # llama.cpp / Ollama put whole layers on each GPU: a token passes through the GPUs one after another,
        # so a step takes one GPU's time for all the layers (no all-reduce); only the memory is spread.
        notes.append(f"layer split over {tp} GPUs: each holds 1/{tp} of the layers, a token runs them in turn")
        tp, kv_tok = 1, kv_tok * split
    w_read = decode_read_bytes(arch, params, dtype, quantization) / tp
    seq_len = input_len + output_len
    max_running = capacity // seq_len  # sequences held at their full length: no preemption
    fits = max_running >= 1
    cap, cap_src = (
        (max_num_seqs, "--max-num-seqs")
        if max_num_seqs
        else E.default_max_batch(engine, gpu.cuda_memory_bytes, gpu.name)
    )
    running = max(1, min(concurrency, max_running or 1, cap or concurrency))
    if fits and running < concurrency:
        held = "the KV cache holds" if running == max_running else f"the engine's batch cap ({cap_src}) runs"
        notes.append(
            f"{held} {running} sequences of {input_len}+{output_len} tokens at once: "
            f"{concurrency - running} of the {concurrency} requests wait in the queue"
        )
    if not fits:
        notes.append("the KV cache cannot hold one sequence of this length: nothing is served")

    wf = E.weight_format(quantization)
    prec = wf.compute or ("bf16" if dtype == "fp8" else dtype)
    peak = gpu.peak(prec) * k.prefill_compute_fraction
    bw = gpu.memory_bandwidth_gbps * 1e9 * k.decode_bandwidth_fraction
    d_attn = arch.heads * arch.head_dim
    lin = linear_params(arch)
    head = arch.vocab * arch.hidden  # lm_head: logits of the last position of each sequence
    overhead, overhead_src = k.overhead(engine)

    # prefill of one request
    pf_flops = (2 * lin * input_len + 2 * arch.layers * input_len**2 * d_attn + 2 * head) / tp
    pf_compute = pf_flops / peak
    pf_memory = (w_read + input_len * kv_tok) / bw
    pf_comm = _allreduce(arch, gpu, tp, input_len)
    prefill = max(pf_compute, pf_memory) + pf_comm + overhead
    pf_bound = "compute" if pf_compute >= pf_memory else "memory"

    # one decode step at the running batch: the linear layers' matmuls (the weights read once, every sequence's
    # FLOPs), then attention (every running sequence's cache read once): separate kernels, each on its roofline
    avg_ctx = input_len + output_len / 2  # a running sequence's cache, averaged over its life
    gemm_compute = running * 2 * (lin + head) / tp / peak
    attn_compute = running * 4 * arch.layers * avg_ctx * d_attn / tp / peak
    kv_read = running * avg_ctx * kv_tok / bw
    dec_compute = gemm_compute + attn_compute
    dec_memory = w_read / bw + kv_read
    comm = _allreduce(arch, gpu, tp, running)
    step = max(gemm_compute, w_read / bw) + max(attn_compute, kv_read) + comm + overhead
    dec_bound = "compute" if dec_compute > dec_memory else "memory"

    # A round: every running request is prefilled once and O - 1 decode steps run. With one request the prefill
    # and its decode follow each other. With more, the engines mix prompt chunks into the decode steps (vLLM's
    # chunked prefill, SGLang's mixed batches, TensorRT-LLM's in-flight batching, llama-server's one batch): the
    # compute-bound prompt work runs in the compute the bandwidth-bound decode steps leave idle (a fitted share of
    # it), never taking a round below one prompt and the decode steps.
    o = max(output_len, 1)
    pf_marginal = max(pf_compute, input_len * kv_tok / bw) + pf_comm
    prefills_s = max(prefill, running * pf_marginal)
    if running == 1:
        round_s = prefill + (o - 1) * step
    else:
        # the prompts' work fills the compute left idle by bandwidth-bound decode steps, to the fitted share
        slack = (o - 1) * max(dec_memory - dec_compute, 0.0)
        prompts = running * pf_marginal
        exposed = prompts - k.prefill_overlap * min(prompts, slack)
        round_s = max(prefill + (o - 1) * step, (o - 1) * step + exposed)
    itl = (round_s - prefill) / max(o - 1, 1)
    if offline:
        tput = running * o / round_s
        e2e = math.ceil(concurrency / running) * round_s  # the whole batch
        ttft = prefill if running >= concurrency else e2e - round_s + prefill
    elif running >= concurrency:
        # prefill utilisation ρ of the round: a new request waits for the prefills ahead of it (M/D/1 mean wait)
        rho = min(prefills_s / round_s, 0.95)
        ttft = prefill + step + (rho * prefill / (2 * (1 - rho)) if running > 1 else 0.0)
        e2e = ttft + (o - 1) * itl
        tput = concurrency * o / e2e
    else:
        tput = running * o / round_s
        e2e = concurrency * o / tput
        ttft = e2e - (o - 1) * itl
    res = ServingResult(
        engine=engine,
        tensor_parallel=split,
        concurrency=concurrency,
        input_len=input_len,
        output_len=output_len,
        quantization=quantization,
        kv_cache_dtype=kv_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
        weights_bytes_per_gpu=w_gpu,
        kv_bytes_per_token_per_gpu=kv_tok / (split if tp != split else 1),
        kv_budget_bytes_per_gpu=max(kv_budget_bytes, 0),
        kv_capacity_tokens=capacity,
        max_running=max_running,
        running=running,
        prefill_s=prefill,
        prefill_bound=pf_bound,
        decode_step_s=step,
        decode_bound=dec_bound,
        allreduce_s_per_step=comm,
        ttft_s=ttft,
        itl_s=itl,
        e2e_s=e2e,
        output_tokens_per_second=tput if fits else 0.0,
        output_tokens_per_second_per_user=(o / (prefill + (o - 1) * itl) if offline else o / e2e) if fits else 0.0,
        fits=fits,
        notes=notes,
        offline=offline,
    )
    if engine not in k.step_overhead_s:
        notes.append(f"engine {engine}: {overhead_src}")
    if with_band and fits:
        res.band = {m: serving_band(m, getattr(res, m)) for m in ("output_tokens_per_second", "ttft_s", "itl_s")}
        res.band["output_tokens_per_second_per_user"] = serving_band(
            "output_tokens_per_second", res.output_tokens_per_second_per_user
        )
        # end-to-end = concurrency x output / output tokens/s (Little's law): the throughput band, inverted
        tb = res.band["output_tokens_per_second"]
        res.band["e2e_s"] = (
            None
            if tb is None
            else replace(
                tb,
                low=res.e2e_s * tb.ratio_low,
                high=res.e2e_s * tb.ratio_high,
                basis=tb.basis + " (output tokens/s band, inverted: end-to-end = concurrency x output / tokens/s)",
            )
        )
        # the prefill and the decode step are what TTFT and ITL measure at concurrency 1: their bands
        for part, metric in (("prefill_s", "ttft_s"), ("decode_step_s", "itl_s")):
            b = serving_band(metric, getattr(res, part))
            res.band[part] = None if b is None else replace(b, basis=b.basis + f" ({metric}'s band)")
    return res


def with_constants(k: ServingConstants, **changes: Any) -> ServingConstants:
    return replace(k, **changes)


def rates_from_spec(
    spec: Any, *, cuda_memory_bytes: float | None = None, nvlink: bool = True, link_gbps: float | None = None
) -> GpuRates:
    """GpuRates from a catalog GpuSpec (gpuadvisor.catalog.gpus())."""
    mem = cuda_memory_bytes if cuda_memory_bytes is not None else spec.memory_bytes - (spec.reserved_mib or 480) * 2**20
    link = link_gbps if link_gbps is not None else (spec.nvlink_gbps_per_direction or 0.0) if nvlink else 0.0
    return GpuRates(
        spec.name, float(spec.memory_bandwidth_gbps), dict(spec.tflops), float(mem), nvlink, float(link or 0.0)
    )


def ratio_ok(r: float) -> bool:
    return math.isfinite(r) and r > 0


def predict_workload(
    w: Any,
    spec: Any,
    tp: int,
    *,
    cuda_memory_bytes: float | None = None,
    nvlink: bool = True,
    link_gbps: float | None = None,
    kv_budget_bytes: float | None = None,
    with_band: bool = True,
    replicas: int = 1,
) -> ServingResult:
    """predict() for an advisor Workload (its model, precision, --quantization, --kv-cache-dtype, --concurrency,
    --input-len/--output-len, --engine, --gpu-memory-utilization, --max-num-seqs, --offline) on ``replicas``
    copies of ``tp`` GPUs of a catalog GpuSpec, the requests spread evenly over the copies: the entry point for
    callers that price serving (plan). Output tokens/s and the concurrency are the rig's; latencies, the running
    batch and the memory one replica's."""
    inp, out, _ = w.serving_lengths
    gpu = rates_from_spec(spec, cuda_memory_bytes=cuda_memory_bytes, nvlink=nvlink, link_gbps=link_gbps)
    res = predict(
        w.arch,
        w.params,
        gpu,
        tp=tp,
        dtype="bf16" if w.precision == "fp8" else w.precision,
        quantization=w.weight_quantization,
        # llama.cpp and Ollama keep the cache in f16 unless told (--cache-type-k/v, OLLAMA_KV_CACHE_TYPE)
        kv_cache_dtype="fp16" if w.kv_cache_dtype == "auto" and E.engine(w.engine).layer_split else w.kv_cache_dtype,
        concurrency=math.ceil(w.concurrency / replicas),
        input_len=inp,
        output_len=out,
        engine=w.engine,
        gpu_memory_utilization=w.gpu_memory_utilization,
        max_num_seqs=w.max_num_seqs,
        kv_budget_bytes=kv_budget_bytes,
        with_band=with_band,
        offline=bool(getattr(w, "offline", False)),
    )
    return with_replicas(res, replicas, w.concurrency)


def with_replicas(res: ServingResult, replicas: int, concurrency: int) -> ServingResult:
    """One replica's figures as the rig's: output tokens/s (and its band) times the replicas, the concurrency the
    whole rig's; every latency is one replica's (each serves its share of the requests)."""
    if replicas <= 1:
        return res
    share = res.concurrency
    scale = concurrency / share if res.concurrency * replicas > concurrency else replicas
    res.output_tokens_per_second *= scale
    b = res.band.get("output_tokens_per_second")
    if b is not None:
        res.band["output_tokens_per_second"] = replace(b, low=b.low * scale, high=b.high * scale)
    res.concurrency, res.replicas = concurrency, replicas
    return res
