"""Serving engines and weight formats (engines.toml): each engine's flags, batch cap and data-parallel flag, each
format's bits per weight; and the launch lines of a serving pick, one per replica where the engine has no
data-parallel flag of its own.

    plan = Launch(engine="vllm", model="meta-llama/Meta-Llama-3-8B", tp=1, replicas=8, context=8192)
    launch_lines(plan)  # ['vllm serve meta-llama/Meta-Llama-3-8B --tensor-parallel-size 1 --data-parallel-size 8 ...']
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("engines.toml")
# A model with no Hugging Face id: a placeholder a shell reads as one word (no <, >, spaces or quotes).
MODEL_PLACEHOLDER = "path/to/model"


@functools.cache
def _table() -> dict[str, Any]:
    return tomllib.loads(TABLE.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    docs: str
    flags: dict[str, str]
    default_port: int
    max_batch: int  # the default cap on sequences decoded at once (0: none, the KV cache decides)
    max_batch_source: str
    quantizations: tuple[str, ...]
    preamble: str = ""
    layer_split: bool = False  # splits whole layers across GPUs (llama.cpp, Ollama), not tensor parallel

    def flag(self, key: str, **values: Any) -> str:
        f = self.flags.get(key, "")
        return f.format(**values) if f else ""


@dataclass(frozen=True)
class WeightFormat:
    name: str
    bits: float  # per linear-layer weight; 0: the 16-bit dtype
    head_bits: float  # the output head (lm_head); 0: the 16-bit dtype
    label: str
    suffix: str = ""  # the quantised checkpoint's usual name suffix
    compute: str = ""  # the datasheet peak its matmuls run at ("": the 16-bit one)
    gguf: bool = False


FLAG_KEYS = (
    "command",
    "tensor_parallel",
    "pipeline_parallel",
    "data_parallel",
    "context",
    "batch",
    "memory",
    "port",
    "quantization",
    "kv_fp8",
    "dtype",
)


@functools.cache
def engine(name: str) -> Engine:
    e = _table()["engines"][name]
    return Engine(
        name,
        e["label"],
        e["docs"],
        {k: str(e.get(k, "")) for k in FLAG_KEYS},
        int(e["default_port"]),
        int(e["max_batch"]),
        e["max_batch_source"],
        tuple(e["quantizations"]),
        e.get("preamble", ""),
        bool(e.get("layer_split", False)),
    )


@functools.cache
def weight_format(name: str) -> WeightFormat:
    q = _table()["quantization"][name]
    return WeightFormat(
        name,
        float(q["bits"]),
        float(q["head_bits"]),
        q["label"],
        q.get("suffix", ""),
        q.get("compute", ""),
        bool(q.get("gguf", False)),
    )


ENGINES: tuple[str, ...] = tuple(_table()["engines"])
QUANTIZATIONS: tuple[str, ...] = tuple(_table()["quantization"])
GGUF_TYPES: tuple[str, ...] = tuple(q for q in QUANTIZATIONS if weight_format(q).gguf)


def default_quantization(engine_name: str, given: str) -> str:
    """The weight format an engine serves when none was asked for: llama.cpp and Ollama serve GGUF files, whose
    usual download is Q4_K_M (Ollama's library default); the others the checkpoint's 16-bit weights."""
    if given != "none" or engine_name not in ("llamacpp", "ollama"):
        return given
    return "q4_k_m"


def default_max_batch(engine_name: str, cuda_memory_bytes: float, gpu_name: str) -> tuple[int | None, str]:
    """The engine's cap on sequences decoded at once when its launch line does not set one (None: no fixed cap)."""
    e = engine(engine_name)
    if engine_name == "vllm" and cuda_memory_bytes >= 70 * 2**30 and "a100" not in gpu_name.lower():
        return 1024, e.max_batch_source
    return (e.max_batch or None), e.max_batch_source


# --weights of vLLM-class engines as the GGUF file a layer-split engine (llama.cpp, Ollama) reads at about the same
# size: 4-bit AWQ/GPTQ as Q4_K_M (the usual 4-bit download), 8-bit as Q8_0, 16-bit as the F16 file.
GGUF_FOR = {"awq": "q4_k_m", "gptq": "q4_k_m", "int8": "q8_0", "fp8": "q8_0"}


def layer_split_quantization(engine_name: str, quantization: str | None) -> str | None:
    """The weight format a layer-split engine serves for ``quantization`` (a GGUF type; None: its default)."""
    if not engine(engine_name).layer_split or quantization is None:
        return quantization
    return GGUF_FOR.get(quantization, quantization)


@dataclass(frozen=True)
class SplitMemory:
    """One GPU of a layer-split group (engines.toml [memory.layer_split]): the fullest GPU's weights, its KV cache
    per token, the compute buffer and the CUDA context every GPU keeps."""

    layers: int  # repeating layers on the fullest GPU
    weights_bytes: float  # its layers and the output head
    kv_bytes_per_token: float  # its layers' K and V
    compute_bytes: float
    context_bytes: float

    def kv_budget(self, cuda_memory_bytes: float) -> float:
        """What is left of the memory CUDA sees for the KV cache on that GPU."""
        return cuda_memory_bytes - self.weights_bytes - self.compute_bytes - self.context_bytes


def split_rule() -> dict[str, Any]:
    return dict(_table()["memory"]["layer_split"])


def split_assumption(label: str) -> str:
    """What a layer-split engine's fit assumes, with its sources."""
    r = split_rule()
    return (
        f"{label} holds on each GPU its share of whole layers of the GGUF file (split by memory, the output head on "
        "the last GPU; the input embedding stays in host memory), their KV cache (context x --parallel slots, f16 "
        "unless q8_0), a compute buffer of max(4·b·(1 + 4·hidden + ctx·(1 + heads)), 4·b·(hidden + vocab)) bytes at "
        f"b = {r['ubatch']} (Ollama's estimate of llama.cpp's graph) and {r['cuda_context_mib']} MiB of CUDA context "
        "(Ollama's per-GPU minimum): " + r["source"]
    )


def split_memory(
    *,
    layers: int,
    layer_bytes: float,
    head_bytes: float,
    kv_layer_bytes_per_token: float,
    hidden: int,
    heads: int,
    vocab: int,
    context_tokens: int,
    gpus: int,
) -> SplitMemory:
    """llama.cpp's memory on the fullest of ``gpus`` equal GPUs at ``context_tokens`` of KV cache (context x
    slots). Its default split (src/llama-model.cpp, load_tensors) spreads the layers and the output as layers + 1
    units by the GPUs' memory: layer i goes to the first GPU k with i / (layers + 1) < (k + 1) / gpus, the output
    head to the last GPU."""
    r = split_rule()
    b = int(r["ubatch"])
    g = max(1, gpus)
    counts = [0] * g
    for i in range(layers):
        counts[min(g - 1, (i * g) // (layers + 1))] += 1
    per_layer = layer_bytes + context_tokens * kv_layer_bytes_per_token
    k = max(range(g), key=lambda k: counts[k] * per_layer + (head_bytes if k == g - 1 else 0.0))
    n = counts[k]
    head = head_bytes if k == g - 1 else 0.0
    compute = max(4 * b * (1 + 4 * hidden + context_tokens * (1 + heads)), 4 * b * (hidden + vocab))
    return SplitMemory(
        n, n * layer_bytes + head, n * kv_layer_bytes_per_token, float(compute), r["cuda_context_mib"] * 2**20
    )


def checkpoint(hf_id: str | None, quantization: str, engine_name: str) -> str:
    """The model a launch line names: the Hugging Face id for 16-bit weights (and fp8, which vLLM and SGLang
    quantise as they load); a quantised checkpoint's path otherwise (AWQ, GPTQ and INT8 are made offline; GGUF
    files for llama.cpp)."""
    q = weight_format(quantization)
    base = (hf_id or "").rsplit("/", 1)[-1]
    if q.gguf or engine_name in ("llamacpp", "ollama"):
        return f"path/to/{base or 'model'}-{q.suffix or 'F16'}.gguf"
    online = quantization == "none" or (quantization == "fp8" and engine_name in ("vllm", "sglang"))
    if online:
        return hf_id or MODEL_PLACEHOLDER
    return f"path/to/{base or 'model'}-{q.suffix}"


@dataclass(frozen=True)
class Launch:
    """What the launch lines need: the engine, the model, the sizes of one replica and how many there are."""

    engine: str
    model: str
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    context: int = 8192
    batch: int | None = None  # sequences per replica (the engine's batch cap), None: the engine's default
    memory_fraction: float = 0.90
    dtype: str = "bfloat16"
    quantization: str = "none"
    kv_fp8: bool = False
    nodes: int = 1
    gpus_per_node: int = 8


def _server(p: Launch, e: Engine, devices: str, port: int | None) -> list[str]:
    """One server's arguments (without the environment)."""
    gpus = p.tp * p.pp
    parts = [e.flag("command", model=p.model, devices=devices, port=port or e.default_port, context=p.context)]
    if e.layer_split:
        if gpus > 1:
            parts.append(e.flag("tensor_parallel", split=",".join(["1"] * gpus)))
    else:
        parts.append(e.flag("tensor_parallel", n=p.tp))
        if p.pp > 1:
            parts.append(e.flag("pipeline_parallel", n=p.pp))
    if port is None and p.replicas > 1:
        parts.append(e.flag("data_parallel", n=p.replicas))
    slots = p.batch or 1
    ctx = p.context * slots if e.name == "llamacpp" else p.context  # llama-server shares --ctx-size among slots
    parts.append(e.flag("context", n=ctx))
    if p.batch is not None or e.name == "llamacpp":
        parts.append(e.flag("batch", n=slots))
    parts.append(e.flag("memory", f=p.memory_fraction))
    if port is not None and port != e.default_port:
        parts.append(e.flag("port", n=port))
    parts.append(e.flag("dtype", d=p.dtype))
    if p.quantization in ("fp8", "awq", "gptq"):
        parts.append(e.flag("quantization", q=p.quantization))
    if p.kv_fp8:
        parts.append(e.flag("kv_fp8"))
    return [x for x in parts if x]


def _ollama(p: Launch, devices: str, port: int | None) -> str:
    env = [f"CUDA_VISIBLE_DEVICES={devices}"]
    if port is not None:
        env.append(f"OLLAMA_HOST=127.0.0.1:{port}")
    env += [f"OLLAMA_CONTEXT_LENGTH={p.context}", f"OLLAMA_NUM_PARALLEL={p.batch or 1}"]
    if p.tp > 1:
        env.append("OLLAMA_SCHED_SPREAD=1")
    if p.kv_fp8:
        env.append("OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0")
    return " ".join(env) + " ollama serve"


def launch_lines(p: Launch) -> list[str]:
    """The shell lines that start the pick: one line with the engine's data-parallel flag, or one server per
    replica (its GPUs in CUDA_VISIBLE_DEVICES, its own port) started in the background; comments where a step is
    the user's (the NIM image, an Ollama model tag, a load balancer in front of several ports)."""
    e = engine(p.engine)
    gpus = p.tp * p.pp
    out = [e.preamble] if e.preamble else []
    per_replica = p.replicas > 1 and not e.flags["data_parallel"]
    if not per_replica:
        devices = ",".join(str(i) for i in range(gpus))
        if p.engine == "ollama":
            out.append(_ollama(p, devices, None))
        else:
            out.append(" ".join(_server(p, e, devices, None)))
    else:
        for r in range(p.replicas):
            devices = ",".join(str(r * gpus + i) for i in range(gpus))
            port = e.default_port + r
            if p.engine == "ollama":
                out.append(_ollama(p, devices, port) + " &")
            elif p.engine == "nim":
                out.append(" ".join(_server(p, e, devices, port)) + " &")
            else:
                out.append(f"CUDA_VISIBLE_DEVICES={devices} " + " ".join(_server(p, e, devices, port)) + " &")
        out.append("wait")
        last = e.default_port + p.replicas - 1
        out.append(f"# ports {e.default_port}-{last}: put a load balancer in front")
    if p.engine == "ollama":
        out.append("# then: ollama run MODEL_TAG (its Ollama library tag)")
    if p.nodes > 1 and p.pp > 1:
        out.append(f"# {p.nodes} nodes: start the engine's multi-node runtime first")
    return out
