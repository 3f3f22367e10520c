"""What the user wants to run: the model (an ``Architecture``, advisor.architecture) and the training or serving
settings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuadvisor import catalog
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import engines as E
from gpuadvisor.advisor.architecture import (
    Architecture,
    architecture_from_hf_config,
    architecture_from_params,
    architecture_from_spec,
)
from gpuadvisor.advisor.network import Network
from gpuadvisor.advisor.network import parse as parse_network
from gpuadvisor.errors import InputError

PRECISION_CHOICES = ("bf16", "fp16", "fp32", "fp8")
OPTIMIZER_CHOICES = ("adamw", "adam", "sgd", "adam8bit", "paged-adam8bit")
FINETUNE_CHOICES = ("full", "lora", "qlora")
CHECKPOINTING_CHOICES = ("auto", "none", "selective", "full")
KV_DTYPE_CHOICES = ("auto", "bf16", "fp16", "fp8", "fp32")
STATE_BYTES_CHOICES = ("16", "18", "20", "bf16")
LOSS_CHOICES = ("full", "chunked")
VLLM_VERSION_CHOICES = ("v0", "v1", "0.21")
QUANTIZATION_CHOICES = E.QUANTIZATIONS  # serving: weight format (vLLM --quantization, GGUF types; engines.toml)
ENGINE_CHOICES = E.ENGINES  # serving engine: its step overhead, batch cap and launch line (engines.toml)
# The training stack, for the time model's fused-kernel share (advisor.timing, constants.STACK_MEMORY_BOUND_FACTOR).
STACK_CHOICES = ("pytorch", "megatron", "deepspeed", "jax")
ATTENTION_KERNEL_CHOICES = ("flash2", "flash1")
# The --options that set the Workload field of the same name as given (from_options); the other workload options
# (model, params, hf_config, flash_attention, compile, optimizer_in_backward, capacity_factor) are read apart.
OPTION_FIELDS = (
    "task",
    "precision",
    "optimizer",
    "seq_len",
    "micro_batch",
    "global_batch",
    "checkpointing",
    "finetune",
    "lora_rank",
    "trainable_fraction",
    "state_bytes",
    "context",
    "concurrency",
    "kv_cache_dtype",
    "mfu",
    "nodes",
    "inter_node_gbps",
    "network",
    "loss",
    "vllm_version",
    "max_num_seqs",
    "gpu_memory_utilization",
    "input_len",
    "output_len",
    "quantization",
    "engine",
    "offline",
    "stack",
    "layout",
    "attention_kernel",
)


@dataclass
class Workload:
    """A training or serving job to fit on a rig."""

    arch: Architecture
    task: str = "train"  # train | inference
    precision: str = "bf16"
    optimizer: str = "adamw"
    seq_len: int | None = None  # default: min(4096, the model's max positions)
    micro_batch: int = 1
    global_batch: int | None = None  # sequences per optimizer step; default: micro_batch × data-parallel size
    checkpointing: str = "auto"  # auto | none | full
    finetune: str = "full"  # full | lora | qlora
    lora_rank: int = C.LORA_DEFAULT_RANK
    trainable_fraction: float | None = None  # overrides the LoRA count from the rank
    fused_attention: bool = True
    # The fused attention kernel's generation: flash2 (FlashAttention-2 and its peers: torch SDPA's flash backend,
    # cuDNN, Transformer Engine) | flash1 (FlashAttention-1 and the Triton FlashAttention MPT / llm-foundry run)
    attention_kernel: str = "flash2"
    state_bytes: str = "16"  # 16 | 18 | 20: the model-state accounting for mixed precision
    context: int | None = None  # inference: tokens per sequence (prompt + output)
    concurrency: int = 1  # inference: sequences served at once
    kv_cache_dtype: str = "auto"
    mfu: float | None = None  # --mfu: model FLOPs utilisation (None: predicted from the hardware, advisor.timing)
    compile: bool = False  # torch.compile: fuses memory-bound work
    stack: str = "pytorch"  # pytorch | megatron (Megatron-Core + Transformer Engine) | deepspeed | jax (XLA)
    loss: str = "full"  # full: logits materialised (bf16 + fp32 upcast + grad); chunked: chunked cross-entropy
    optimizer_in_backward: bool = False  # optimizer step fused into backward: gradients freed as they are used
    vllm_version: str = (
        "v1"  # v1 (V1, or V0 since PR #10511's profiler), v0 (V0 before it, <= 0.6.4), 0.21 (CUDA graphs subtracted)
    )
    max_num_seqs: int | None = None  # vLLM --max-num-seqs (default: vLLM's for the GPU)
    gpu_memory_utilization: float = C.VLLM_GPU_MEMORY_UTILIZATION  # vLLM --gpu-memory-utilization
    input_len: int | None = None  # serving: prompt tokens per request (default: context less output_len)
    output_len: int | None = None  # serving: generated tokens per request (default: min(512, context / 2))
    quantization: str | None = None  # serving: none | fp8 | int8 | awq | gptq (default: fp8 with --precision fp8)
    engine: str = "vllm"  # serving engine: vllm | sglang | nim | trtllm | llamacpp | ollama
    offline: bool = False  # serving: --concurrency requests submitted at once (a batch run), not a closed loop
    nodes: int = 1
    inter_node_gbps: float | None = None
    network: str | None = None  # --network FABRIC:RAILSxGBPS (advisor.network.parse), e.g. ib:8x400
    model_label: str = ""
    notes: list[str] = field(default_factory=list)
    precision_given: bool = True  # False when --precision was left out: the advisor may pick the GPU's 16-bit type
    stack_given: bool = True  # False when --stack (and --framework) were left out: each layout timed as its engine
    state_bytes_given: bool = True  # False when --state-bytes was left out: the stack's own accounting applies
    layout: str | None = None  # --layout: evaluate exactly this parallel layout (advisor.layout)

    # -- derived --------------------------------------------------------------------------------------
    def network_spec(self) -> Network | None:
        """The --network given, parsed (a bad one: InputError with what to write)."""
        return parse_network(self.network) if self.network else None

    @property
    def mfu_given(self) -> bool:
        return self.mfu is not None

    @property
    def compiled(self) -> bool:
        return self.compile

    @property
    def pure_bf16(self) -> bool:
        return self.state_bytes == "bf16" and self.precision != "fp32"

    def optimizer_step_bytes(self) -> float:
        """Bytes the optimizer step reads and writes per trainable parameter (memory-bound): mixed-precision AdamW
        reads the fp32 master, both moments and the fp32 gradient (16) and writes master, moments and the 16-bit
        copy (14): 30, as DeepSpeed's CPU-Adam count (constants.CPU_ADAM_BYTES_PER_PARAM); states in bf16 halve
        them; 8-bit states move 1 byte each. Without a master copy (pure bf16, LoRA adapters) the step reads and
        writes the weights themselves: torch's fused AdamW on bf16 parameters moves 2 + 2 + 2·2 + 2·2 + 2 = 14."""
        opt = self.optimizer_bytes()
        conv = self.state_convention()
        scale = 0.5 if self.pure_bf16 and opt.key not in ("adam8bit", "paged-adam8bit") else 1.0
        states = opt.states * scale
        grad = conv.grads if self.finetune == "full" else C.LORA_ADAPTER_BYTES.grads
        master = conv.master if self.finetune == "full" else 0.0
        weights = conv.weights if self.finetune == "full" else C.LORA_ADAPTER_BYTES.weights
        return 2 * (master + states) + grad + (weights if master else 2 * weights)

    @property
    def params(self) -> int:
        return self.arch.params

    @property
    def seq(self) -> int:
        if self.seq_len:
            return self.seq_len
        return min(4096, self.arch.max_positions or 4096)

    @property
    def ctx(self) -> int:
        if self.context:
            return self.context
        if self.input_len and self.output_len:
            return self.input_len + self.output_len
        return min(8192, self.arch.max_positions or 8192)

    @property
    def serving_lengths(self) -> tuple[int, int, bool]:
        """(input, output) tokens per request, and whether both were given (else the rest is assumed)."""
        if self.input_len and self.output_len:
            return self.input_len, self.output_len, True
        if self.output_len:
            return max(1, self.ctx - self.output_len), self.output_len, False
        if self.input_len:
            return self.input_len, max(1, self.ctx - self.input_len), False
        out = max(1, min(512, self.ctx // 2))
        return max(1, self.ctx - out), out, False

    @property
    def weight_quantization(self) -> str:
        if self.quantization:
            return self.quantization
        return E.default_quantization(self.engine, "fp8" if self.precision == "fp8" else "none")

    def trainable_params(self) -> int:
        """Parameters the optimizer updates: all of them, or the LoRA adapters on every linear layer."""
        if self.finetune == "full":
            return self.params
        if self.trainable_fraction is not None:
            return int(self.params * self.trainable_fraction)
        r = self.lora_rank
        return self.arch.layers * sum(r * (a + b) for a, b in self.arch.linear_shapes())

    def state_convention(self) -> C.StateBytes:
        if self.precision == "fp32":
            return C.FP32_STATES
        return C.STATE_CONVENTIONS[self.state_bytes]

    def optimizer_bytes(self) -> C.OptimizerBytes:
        return C.OPTIMIZERS[C.OPTIMIZER_ALIASES[self.optimizer]]

    def kv_bytes(self) -> float:
        if self.kv_cache_dtype == "auto":
            return C.DTYPE_BYTES["fp16" if self.precision == "fp8" else self.precision]
        return C.DTYPE_BYTES[self.kv_cache_dtype]

    def weight_bytes_inference(self) -> float:
        return C.DTYPE_BYTES[self.precision]

    def compute_precision(self) -> str:
        """The datasheet column the compute time uses: fp32 training runs at the fp32 (not TF32) peak,
        as PyTorch leaves TF32 matmuls off by default (torch.backends.cuda.matmul.allow_tf32 = False)."""
        return self.precision

    def weights_label(self) -> str:
        """The served weights as asked: the precision's, or the quantised format's (engines.toml)."""
        q = self.weight_quantization
        if q == "none":
            return f"{self.precision} weights"
        label = E.weight_format(q).label
        return label if label.endswith("weights") else f"{label} weights"

    def describe(self) -> str:
        p = self.params
        size = f"{p / 1e9:.2f}B" if p >= 1e9 else f"{p / 1e6:.0f}M"
        if self.task == "inference":
            return (
                f"{self.model_label or self.arch.name} ({size} params), serving {self.concurrency} × {self.ctx} "
                f"tokens, {self.weights_label()}"
            )
        tune = {
            "full": "full training",
            "lora": f"LoRA r={self.lora_rank}",
            "qlora": f"QLoRA r={self.lora_rank} (4-bit base)",
        }[self.finetune]
        return (
            f"{self.model_label or self.arch.name} ({size} params), {tune}, {self.precision}, {self.optimizer}, "
            f"seq {self.seq}, micro-batch {self.micro_batch}"
        )

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "arch"}
        d["model"] = self.model_label or self.arch.name
        d["params"] = self.params
        d["trainable_params"] = self.trainable_params() if self.task == "train" else None
        d["seq_len"] = self.seq
        d["context"] = self.ctx if self.task == "inference" else self.context
        d["architecture"] = self.arch.to_dict()
        return d

    # -- construction ---------------------------------------------------------------------------------
    @staticmethod
    def requested(**kw: Any) -> bool:
        """Whether the options name a model at all (``scan --model`` is optional)."""
        return bool(kw.get("model") or kw.get("params") or kw.get("hf_config"))

    @classmethod
    def from_options(cls, **kw: Any) -> Workload:
        """Build from the ``workload_options`` keyword arguments (unknown keys are ignored, None means default).

        Exactly one of model (a preset name), params (a count) or hf_config (a config.json path) names the model.
        """
        given = [k for k in ("model", "params", "hf_config") if kw.get(k)]
        if not given:
            raise InputError(
                f"no model given: pass --model NAME (one of {', '.join(catalog.model_names())}), --params 7e9, or "
                "--hf-config config.json"
            )
        if len(given) > 1:
            raise InputError(
                f"{' and '.join('--' + g.replace('_', '-') for g in given)} both given: name the model one way"
            )
        label = ""
        if kw.get("model"):
            name = str(kw["model"])
            if name.endswith(".json") or Path(name).is_file():
                arch = architecture_from_hf_config(name)
            else:
                spec = catalog.find_model(name)
                if spec is None:
                    raise InputError(
                        f"--model {name}: not a preset{catalog.model_suggestion(name)} (known: "
                        f"{', '.join(catalog.model_names())}); or give --params 7e9 or --hf-config FILE"
                    )
                arch = architecture_from_spec(spec)
                label = spec.id
        elif kw.get("params"):
            arch = architecture_from_params(_number(kw["params"], "--params"))
        else:
            arch = architecture_from_hf_config(kw["hf_config"])
        if kw.get("capacity_factor") is not None:
            if not arch.is_moe:
                raise InputError(
                    f"--capacity-factor {kw['capacity_factor']}: {arch.name} is not a mixture-of-experts model"
                )
            arch = replace(arch, capacity_factor=float(kw["capacity_factor"]))
        w = cls(
            arch=arch,
            model_label=label,
            precision_given=kw.get("precision") is not None,
            stack_given=kw.get("stack") is not None,
            state_bytes_given=kw.get("state_bytes") is not None,
        )
        changes = {k: v for k, v in kw.items() if k in OPTION_FIELDS and v is not None}
        if kw.get("flash_attention") is not None:
            changes["fused_attention"] = bool(kw["flash_attention"])
        for flag in ("compile", "optimizer_in_backward"):
            if kw.get(flag) is not None:
                changes[flag] = bool(kw[flag])
        w = replace(w, **changes)
        w.validate()
        return w

    def validate(self) -> None:
        checks = [
            (self.task in ("train", "inference"), f"--task {self.task}: choose train or inference"),
            (
                self.precision in PRECISION_CHOICES,
                f"--precision {self.precision}: choose one of {', '.join(PRECISION_CHOICES)}",
            ),
            (
                self.optimizer in C.OPTIMIZER_ALIASES,
                f"--optimizer {self.optimizer}: choose one of {', '.join(OPTIMIZER_CHOICES)}",
            ),
            (
                self.finetune in FINETUNE_CHOICES,
                f"--finetune {self.finetune}: choose one of {', '.join(FINETUNE_CHOICES)}",
            ),
            (
                self.checkpointing in CHECKPOINTING_CHOICES,
                f"--checkpointing {self.checkpointing}: choose one of {', '.join(CHECKPOINTING_CHOICES)}",
            ),
            (
                self.kv_cache_dtype in KV_DTYPE_CHOICES,
                f"--kv-cache-dtype {self.kv_cache_dtype}: choose one of {', '.join(KV_DTYPE_CHOICES)}",
            ),
            (self.state_bytes in STATE_BYTES_CHOICES, f"--state-bytes {self.state_bytes}: choose 16, 18 or 20"),
            (self.micro_batch >= 1, "--micro-batch must be at least 1"),
            (self.global_batch is None or self.global_batch >= 1, "--global-batch must be at least 1"),
            (
                self.seq_len is None or self.seq_len >= 2,
                f"--seq-len {self.seq_len}: a training sequence needs at least 2 tokens (an input and its next-token "
                "target)",
            ),
            (self.context is None or self.context >= 1, "--context must be at least 1"),
            (self.concurrency >= 1, "--concurrency must be at least 1"),
            (
                self.mfu is None or 0 < self.mfu < 1,
                f"--mfu {self.mfu}: give the model FLOPs utilisation as a fraction between 0 and 1 (0.35-0.6 is what "
                "published runs reach)",
            ),
            (self.loss in LOSS_CHOICES, f"--loss {self.loss}: choose full or chunked"),
            (self.stack in STACK_CHOICES, f"--stack {self.stack}: choose one of {', '.join(STACK_CHOICES)}"),
            (
                self.attention_kernel in ATTENTION_KERNEL_CHOICES,
                f"--attention-kernel {self.attention_kernel}: choose one of {', '.join(ATTENTION_KERNEL_CHOICES)}",
            ),
            (
                self.vllm_version in VLLM_VERSION_CHOICES,
                f"--vllm-version {self.vllm_version}: choose one of {', '.join(VLLM_VERSION_CHOICES)}",
            ),
            (self.max_num_seqs is None or self.max_num_seqs >= 1, "--max-num-seqs must be at least 1"),
            (
                0 < self.gpu_memory_utilization <= 1,
                f"--gpu-memory-utilization {self.gpu_memory_utilization}: give a fraction in (0, 1], e.g. 0.90",
            ),
            (
                self.quantization is None or self.quantization in QUANTIZATION_CHOICES,
                f"--quantization {self.quantization}: choose one of {', '.join(QUANTIZATION_CHOICES)}",
            ),
            (self.engine in ENGINE_CHOICES, f"--engine {self.engine}: choose one of {', '.join(ENGINE_CHOICES)}"),
            _engine_serves(self.engine, self.quantization),
            (
                not (
                    self.context
                    and self.input_len
                    and self.output_len
                    and self.input_len + self.output_len > self.context
                ),
                f"--input-len {self.input_len} + --output-len {self.output_len} exceed --context {self.context}: "
                "give a context of at least their sum, or leave --context out",
            ),
            (self.nodes >= 1, "--nodes must be at least 1"),
            (self.inter_node_gbps is None or self.inter_node_gbps > 0, "--inter-node-gbps must be positive"),
            (self.network is None or self.network_spec() is not None, "--network: not a network"),
            (self.lora_rank >= 1, "--lora-rank must be at least 1"),
            (
                self.trainable_fraction is None or 0 < self.trainable_fraction <= 1,
                "--trainable-fraction must be in (0, 1]",
            ),
            (
                self.arch.heads % self.arch.kv_heads == 0 if self.arch.kv_heads else False,
                f"model {self.arch.name}: {self.arch.heads} attention heads is not a multiple of {self.arch.kv_heads} "
                "KV heads",
            ),
        ]
        for ok, msg in checks:
            if not ok:
                raise InputError(msg)
        if self.finetune == "qlora" and self.precision == "fp32":
            raise InputError(
                "--finetune qlora with --precision fp32: QLoRA computes in bf16 or fp16 over 4-bit weights"
            )


def _number(value: Any, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} {value!r}: not a number (write 7e9 or 7000000000)") from None


def _engine_serves(engine: str, quantization: str | None) -> tuple[bool, str]:
    """Whether ``engine`` serves weights in ``quantization`` (engines.toml), and the line that says so if not."""
    if quantization is None or engine not in ENGINE_CHOICES:
        return True, ""
    e = E.engine(engine)
    return quantization in e.quantizations, (
        f"--quantization {quantization}: {e.label} serves {', '.join(e.quantizations)} (--engine llamacpp or ollama "
        "for GGUF types, vllm/sglang/trtllm for fp8, int8, awq, gptq)"
    )
