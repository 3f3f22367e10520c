"""The candidates of the advice: training layouts (memory, communication, time, error bands) and serving sizes
(memory, KV cache, serving figures)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from gpuadvisor.advice_model.record import Record


@dataclass(eq=False)
class RatioBand(Record):
    """Where a measurement of a predicted value falls: [value / ratio_high, value / ratio_low], the ratios
    (predicted / measured) of ``cases`` published runs (RatioBand.around). The fields every band
    starts with; Band and ServingBand add where their ratios come from."""

    low: float = 0.0
    high: float = 0.0
    ratio_low: float = 1.0
    ratio_high: float = 1.0
    cases: int = 0

    @classmethod
    def around(cls, value: float, ratio_low: float, ratio_high: float, **rest: Any) -> Self:
        """The band of a predicted ``value`` whose held-out ratios (predicted / measured) lie in [ratio_low,
        ratio_high]: what will be measured lies in [value / ratio_high, value / ratio_low]; ``rest``: the
        subclass's own fields."""
        return cls(low=value / ratio_high, high=value / ratio_low, ratio_low=ratio_low, ratio_high=ratio_high, **rest)


@dataclass(eq=False)
class Band(RatioBand):
    """The band of a training figure, from the calibration's published runs (advisor.calibration)."""

    OPTIONAL = frozenset({"narrowed_by"})
    basis: str = ""  # measured | datasheet | cases
    coverage: str = ""
    narrowed_by: str | None = None  # measured rates that could not narrow it, and why


@dataclass(eq=False)
class CandidateBands(Record):
    tokens_per_second: Band | None = None
    torch_peak_allocated_bytes: Band | None = None


@dataclass(eq=False)
class ServingBand(RatioBand):
    """The held-out band of a serving figure (advisor.serving.serving_band)."""

    sources: int = 0
    coverage: float = 0.0
    basis: str = ""


# -- training ---------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class MemoryFigures(Record):
    """Bytes per GPU of a training candidate (advisor.memory.MemoryBreakdown); host bytes per node."""

    params_bytes: float = 0
    grads_bytes: float = 0
    optimizer_bytes: float = 0
    activations_bytes: float = 0
    gathered_bytes: float = 0
    overhead_bytes: float = 0
    host_bytes: float = 0
    loss_bytes: float = 0
    buffers_bytes: float = 0
    total_bytes: float = 0  # what nvidia-smi shows: the fit check's figure
    torch_peak_allocated_bytes: float | None = None
    nvidia_smi_bytes: float | None = None


@dataclass(eq=False)
class CommFigures(Record):
    """One optimizer step's communication on one GPU (seconds, bytes, bandwidth in GB/s)."""

    data_parallel_bytes: float = 0
    data_parallel_seconds: float | None = 0
    data_parallel_exposed_seconds: float | None = 0
    tensor_parallel_seconds: float | None = 0
    pipeline_seconds: float | None = 0
    offload_seconds: float | None = 0
    offload_exposed_seconds: float | None = None
    context_parallel_seconds: float | None = 0
    context_parallel_exposed_seconds: float | None = 0
    expert_all_to_all_seconds: float | None = 0
    total_seconds: float | None = 0
    busbw_gbps: float | None = None
    busbw_source: str | None = None
    busbw_measured: bool | None = None
    tp_busbw_gbps: float | None = None
    detail: list[str] = field(default_factory=list)

    @property
    def exposed_seconds(self) -> float:
        """What the step waits for: data parallel's exposed part, tensor parallel, pipeline, offload's exposed part."""
        offload = self.offload_exposed_seconds if self.offload_exposed_seconds is not None else self.offload_seconds
        return (
            (self.data_parallel_exposed_seconds or 0)
            + (self.tensor_parallel_seconds or 0)
            + (self.pipeline_seconds or 0)
            + (offload or 0)
        )


@dataclass(eq=False)
class TrainCandidate(Record):
    """One training layout as predicted (advisor.strategies.Candidate), its verdict and reason."""

    name: str = ""
    key: str = ""
    framework: str = ""
    data_parallel: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    virtual_pipeline_stages: int = 1
    context_parallel: int = 1
    expert_parallel: int = 1
    forced_layout: bool = False
    zero_stage: int = 0
    hybrid_shard: bool = False
    cpu_offload: str = "none"  # none | optimizer | optimizer+params
    activation_checkpointing: bool = False
    memory: MemoryFigures = field(default_factory=MemoryFigures)
    capacity_bytes: float = 0
    fits: bool = False
    headroom_fraction: float = 0.0
    gradient_accumulation: int = 1
    global_batch: int = 0
    tokens_per_step: int = 0
    comm: CommFigures = field(default_factory=CommFigures)
    compute_seconds: float | None = None
    compute_parts_seconds: dict[str, float | None] | None = None
    compute_floor_bound: bool | None = None
    recompute: str = "none"
    mfu: float | None = None
    band: CandidateBands | None = None
    pipeline_bubble_fraction: float = 0.0
    step_seconds: float | None = None
    step_seconds_no_overlap: float | None = None
    tokens_per_second: float | None = None
    ideal_speed_fraction: float | None = None  # the one efficiency figure: of the ideal speed
    status: str = "candidate"  # pick | rejected
    reason: str = ""

    @property
    def tokens_band(self) -> Band | None:
        return self.band.tokens_per_second if self.band else None


@dataclass(eq=False)
class Batch(Record):
    micro_batch: int = 1
    gradient_accumulation: int = 1
    data_parallel: int = 1
    global_batch: int = 0
    tokens_per_step: int = 0
    requested_global_batch: int | None = None
    lr_note: str = ""


@dataclass(eq=False)
class StateConvention(Record):
    bytes_per_param_with_adam: float = 0.0
    key: str = ""
    source: str = ""


@dataclass(eq=False)
class StateBytes(Record):
    """Bytes per parameter of the model states, and the conventions the tools disagree on."""

    used_per_param: float = 0.0
    weights: float = 0.0
    grads: float = 0.0
    master: float = 0.0
    optimizer_states: float = 0.0
    convention: str = ""
    source: str = ""
    optimizer_source: str = ""
    conventions: list[StateConvention] = field(default_factory=list)


# -- serving ----------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class ServingResult(Record):
    """Figures of one serving configuration (seconds, tokens/s, bytes) with their bands (advisor.serving)."""

    ROUND = 6
    engine: str = "vllm"
    tensor_parallel: int = 1
    concurrency: int = 1
    input_len: int = 0
    output_len: int = 0
    quantization: str = "none"
    kv_cache_dtype: str = ""
    gpu_memory_utilization: float = 0.0
    weights_bytes_per_gpu: float = 0.0
    kv_bytes_per_token_per_gpu: float = 0.0
    kv_budget_bytes_per_gpu: float = 0.0
    kv_capacity_tokens: int = 0
    max_running: int = 0  # the running batch the KV cache allows at this input + output length
    running: int = 0  # min(concurrency, max_running, max_num_seqs)
    prefill_s: float = 0.0  # one request's prefill, alone
    prefill_bound: str = ""  # compute | memory
    decode_step_s: float = 0.0  # one decode step at the running batch
    decode_bound: str = ""
    allreduce_s_per_step: float = 0.0
    ttft_s: float = 0.0
    itl_s: float = 0.0
    e2e_s: float = 0.0
    output_tokens_per_second: float = 0.0
    output_tokens_per_second_per_user: float = 0.0
    fits: bool = False
    notes: list[str] = field(default_factory=list)
    band: dict[str, ServingBand | None] = field(default_factory=dict)
    offline: bool = False  # a batch run: concurrency requests submitted at once
    replicas: int = 1  # data-parallel copies: concurrency and output tokens/s are the rig's, the rest one replica's


@dataclass(eq=False)
class ServingCandidate(Record):
    """One vLLM tensor/pipeline-parallel size (advisor.inference.ServingOption), its memory and serving figures."""

    name: str = ""
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    weights_bytes: float = 0
    activation_peak_bytes: float = 0
    runtime_bytes: float = 0
    kv_cache_budget_bytes: float = 0
    kv_cache_needed_bytes: float = 0
    kv_bytes_per_token: float = 0
    kv_capacity_tokens: int = 0
    max_sequences_at_context: int = 0
    memory_used_bytes: float = 0
    capacity_bytes: float = 0
    driver_reserved_bytes: float = 0
    profile_tokens: int = 0
    profile_sequences: int = 0
    kv_heads_per_gpu: float = 0.0
    nvlink: bool = False
    fits: bool = False
    status: str = "candidate"
    reason: str = ""
    serving: ServingResult | None = None
    replicas: int = 1  # data-parallel copies of this tensor/pipeline-parallel group

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def total_gpus(self) -> int:
        """The GPUs of every replica."""
        return self.gpus * self.replicas


Candidate = TrainCandidate | ServingCandidate
