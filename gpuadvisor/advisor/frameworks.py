"""Launch lines for the pick in frameworks beyond the default snippet (``advise --framework NAME``).

launch(advice, name) reads only the advice (the pick, the workload, the rig and the default snippet) and
returns what to run in that framework, or why the pick does not map onto it. Training: torch (torchrun and
DDP/FSDP/ZeroRedundancyOptimizer code), deepspeed (its launcher and ds_config.json), accelerate (its config file
and launch line), megatron (pretrain_gpt.py), jax (jax.distributed and a device mesh with PartitionSpecs).
Serving: vllm, sglang, trtllm (TensorRT-LLM's trtllm-serve), llamacpp (llama-server), ollama.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from gpuadvisor.advice_model import (
    Advice,
    FrameworkLaunch,
    ServingCandidate,
    ServingSnippet,
    TrainCandidate,
    TrainingSnippet,
)
from gpuadvisor.advisor import constants as C

TRAIN_FRAMEWORKS = ("torch", "deepspeed", "accelerate", "megatron", "jax")
SERVE_FRAMEWORKS = ("vllm", "sglang", "trtllm", "llamacpp", "ollama")
FRAMEWORKS = TRAIN_FRAMEWORKS + SERVE_FRAMEWORKS
DOCS = {
    "torch": "https://pytorch.org/docs/stable/elastic/run.html",
    "deepspeed": "https://www.deepspeed.ai/getting-started/#launching-deepspeed-training",
    "accelerate": "https://huggingface.co/docs/accelerate/basic_tutorials/launch",
    "megatron": "https://github.com/NVIDIA/Megatron-LM#training",
    "jax": "https://docs.jax.dev/en/latest/notebooks/Distributed_arrays_and_automatic_parallelization.html",
    "vllm": "https://docs.vllm.ai/",
    "sglang": "https://docs.sglang.ai/",
    "trtllm": "https://nvidia.github.io/TensorRT-LLM/",
    "llamacpp": "https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
    "ollama": "https://github.com/ollama/ollama/tree/main/docs",
}
# The training stack each launch framework implies for the time model (Workload.stack): Accelerate and plain torch
# run the model's eager PyTorch kernels.
STACK = {"torch": "pytorch", "accelerate": "pytorch", "deepspeed": "deepspeed", "megatron": "megatron", "jax": "jax"}


def _result(
    name: str,
    commands: list[str] | None = None,
    files: dict[str, str] | None = None,
    code: str | None = None,
    notes: list[str] | None = None,
    reason: str | None = None,
) -> FrameworkLaunch:
    return FrameworkLaunch(
        framework=name,
        maps=reason is None,
        reason=reason,
        commands=commands or [],
        files=files or {},
        code=code,
        notes=notes or [],
        docs=DOCS[name],
    )


def launch(advice: Advice | Mapping[str, Any], name: str) -> FrameworkLaunch:
    """What to run for the advice's pick (the Advice, or its JSON) in framework ``name`` (one of FRAMEWORKS)."""
    advice = Advice.coerce(advice)
    if name not in FRAMEWORKS:
        raise ValueError(f"unknown framework {name!r}: one of {', '.join(FRAMEWORKS)}")
    serving = advice.task == "inference"
    if serving != (name in SERVE_FRAMEWORKS):
        want = ", ".join(SERVE_FRAMEWORKS if serving else TRAIN_FRAMEWORKS)
        return _result(
            name,
            reason=f"{name} is for {'serving' if name in SERVE_FRAMEWORKS else 'training'}; "
            f"for {'serving' if serving else 'training'} choose one of {want}",
        )
    p, s = advice.pick, advice.snippet
    if isinstance(p, ServingCandidate) and isinstance(s, ServingSnippet):
        return _serve(advice, p, s, name)
    if isinstance(p, TrainCandidate) and isinstance(s, TrainingSnippet):
        return _train(advice, p, s, name)
    return _result(name, reason="nothing fits on this rig: there is nothing to launch")


# -- training ---------------------------------------------------------------------------------------------


def _train(d: Advice, p: TrainCandidate, s: TrainingSnippet, name: str) -> FrameworkLaunch:
    kind = s.kind
    ds_json = None
    if s.deepspeed_config:
        import json

        ds_json = json.dumps(s.deepspeed_config, indent=2) + "\n"
    if name == "megatron":
        if kind != "megatron":
            return _result(
                name,
                reason=f"the pick ({p.name}) uses no tensor or pipeline parallelism: Megatron-LM "
                "is for those; use torch, deepspeed or accelerate",
            )
        return _result(name, [s.torchrun])
    if kind == "megatron" and name != "jax":
        return _result(
            name,
            reason=f"the pick ({p.name}) needs tensor/pipeline parallelism, which the snippet "
            "launches with Megatron-LM: use --framework megatron",
        )
    if name == "torch":
        if p.cpu_offload != "none":
            return _result(
                name,
                reason="DeepSpeed's ZeRO-Offload (CPU optimizer step) has no plain-PyTorch equivalent "
                "here: use --framework deepspeed",
            )
        if kind == "deepspeed":  # ZeRO-1 without offload: DDP + torch's ZeroRedundancyOptimizer shards the optimizer
            code = (
                "import torch\n"
                "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
                "model = DDP(model.to(local_rank), device_ids=[local_rank])\n"
                "optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=lr)"
                "  # ZeRO stage 1\n"
            )
            return _result(name, [s.torchrun.replace(" --deepspeed ds_config.json", "")], code=code)
        return _result(name, [s.torchrun], code=s.code)
    if name == "deepspeed":
        if not ds_json:
            return _result(
                name,
                reason=f"the pick ({p.name}) is launched without DeepSpeed"
                + (" (HYBRID_SHARD is FSDP's)" if p.hybrid_shard else "")
                + ": use --framework torch or accelerate",
            )
        n, g = d.rig.nodes, d.rig.gpus_per_node
        cmd = (
            f"deepspeed --num_gpus {g} train.py --deepspeed ds_config.json"
            if n == 1
            else f"deepspeed --hostfile hostfile --num_nodes {n} --num_gpus {g} --master_addr $MASTER_ADDR "
            "--master_port 29500 "
            "train.py --deepspeed ds_config.json"
        )
        notes = (
            ["hostfile: one line per node, '<hostname> slots=" + str(g) + "' (DeepSpeed launches over pdsh/ssh)"]
            if n > 1
            else []
        )
        ds_code = s.code if kind == "deepspeed" else None
        if s.deepspeed_config_note:
            notes.append("ds_config.json: " + s.deepspeed_config_note)
        return _result(name, [cmd], files={"ds_config.json": ds_json}, code=ds_code, notes=notes)
    if name == "accelerate":
        if not s.accelerate_config:
            return _result(name, reason=f"no accelerate config for the pick ({p.name})")
        files = {"accelerate.yaml": s.accelerate_config}
        if ds_json and "DEEPSPEED" in s.accelerate_config:
            files["ds_config.json"] = ds_json
        return _result(name, [s.accelerate_launch or ""], files=files)
    return _jax(d, p)


def _jax(d: Advice, p: TrainCandidate) -> FrameworkLaunch:
    """A jax.sharding.Mesh for the pick and the PartitionSpecs of the batch, the weights and the optimizer state.

    Weights are written as [in_features, out_features] (flax/haiku Dense kernels). Data parallel replicates the
    weights (P()); ZeRO-1/2 shards the optimizer state (and, stage 2, the gradients) over 'data'; FSDP
    (ZeRO-3) shards the weights themselves over 'fsdp'; HYBRID_SHARD shards inside a node and replicates across
    ('replica', 'fsdp'); tensor parallel splits column-parallel kernels (q/k/v, gate/up) on their output and
    row-parallel ones (o, down) on their input over 'model' (Megatron-LM's split, Shoeybi et al. 2019).
    """
    rig = d.rig
    name = "jax"
    if p.pipeline_parallel > 1:
        return _result(name, reason="JAX has no pipeline-parallel launcher of its own: the pick pipelines its layers")
    if p.cpu_offload != "none":
        return _result(
            name,
            reason="the pick offloads the optimizer to the CPU (DeepSpeed ZeRO-Offload), which this "
            "JAX mesh does not express",
        )
    nodes, g = rig.nodes, rig.gpus_per_node
    world, tp, zero = nodes * g, p.tensor_parallel, p.zero_stage
    shape: tuple[int, ...]
    axes: tuple[str, ...]
    if tp > 1:
        shape, axes = (world // tp, tp), ("data", "model")
        batch, col, row = "P('data')", "P(None, 'model')", "P('model', None)"
        opt_col, opt_row = ("P('data', 'model')", "P('model', 'data')") if zero >= 1 else (col, row)
        specs = [
            f"batch = {batch}",
            f"params = {{'column': {col}, 'row': {row}}}  # q/k/v, gate/up: column; o, down: row",
            f"optimizer_state = {{'column': {opt_col}, 'row': {opt_row}}}",
        ]
    elif p.hybrid_shard:
        shape, axes = (nodes, g), ("replica", "fsdp")
        specs = ["batch = P(('replica', 'fsdp'))", "params = P('fsdp', None)", "optimizer_state = P('fsdp', None)"]
    elif zero == 3:
        shape, axes = (world,), ("fsdp",)
        specs = ["batch = P('fsdp')", "params = P('fsdp', None)", "optimizer_state = P('fsdp', None)"]
    else:
        shape, axes = (world,), ("data",)
        shard = "P('data', None)"
        specs = [
            "batch = P('data')" if world > 1 else "batch = P()",
            "params = P()",
            f"grads = {shard if zero >= 2 else 'P()'}",
            f"optimizer_state = {shard if zero >= 1 else 'P()'}",
        ]
    lines = ["import jax", "from jax.sharding import NamedSharding, PartitionSpec as P"]
    if nodes > 1:
        lines.append(
            f"jax.distributed.initialize()  # one process per node ({g} GPUs each): SLURM/Open MPI fill in the "
            "coordinator, or pass coordinator_address='$MASTER_ADDR:1234', num_processes="
            + str(nodes)
            + ", process_id=$NODE_RANK"
        )
    lines.append(f"mesh = jax.make_mesh({shape!r}, {axes!r})")
    lines += specs
    lines.append(
        "sharding = lambda spec: NamedSharding(mesh, spec)  # jax.device_put(x, sharding(params)), jit in/out_shardings"
    )
    notes = []
    if p.activation_checkpointing:
        notes.append("activation checkpointing: wrap each transformer block in jax.checkpoint (jax.remat)")
    cmd = "python train.py" + ("  # on every node" if nodes > 1 else "")
    return _result(name, [cmd], code="\n".join(lines) + "\n", notes=notes)


# -- serving ----------------------------------------------------------------------------------------------


def _serve(d: Advice, p: ServingCandidate, s: ServingSnippet, name: str) -> FrameworkLaunch:
    w, rig = d.workload, d.rig
    tp, pp, ctx, conc = p.tensor_parallel_size, p.pipeline_parallel_size, w.context or 0, w.concurrency
    dtype = C.TORCH_DTYPE[w.precision]
    model = s.model or shlex.split(s.command)[2]  # vllm serve MODEL ...
    gpus = tp * pp
    mem_note = "the memory figures above are vLLM's accounting; this server sizes its KV cache its own way"
    if name == "vllm":
        return _result(name, [s.command])
    if name == "sglang":
        parts = ["python -m sglang.launch_server", f"--model-path {model}", f"--tp-size {tp}"]
        if pp > 1:
            parts.append(f"--pp-size {pp}")
        parts += [f"--context-length {ctx}", f"--dtype {dtype}"]
        if conc > 1:
            parts.append(f"--max-running-requests {conc}")
        quant = w.quantization or ("fp8" if w.precision == "fp8" else None)
        if quant in ("fp8", "awq", "gptq"):
            parts.append(f"--quantization {quant}")
        if w.kv_cache_dtype == "fp8":
            parts.append("--kv-cache-dtype fp8_e4m3")  # vLLM's fp8 KV cache is E4M3 too
        if rig.nodes > 1:
            parts.append(f"--nnodes {rig.nodes} --node-rank $NODE_RANK --dist-init-addr $MASTER_ADDR:5000")
        return _result(name, [" ".join(parts)], notes=[mem_note + " (--mem-fraction-static)"])
    if rig.nodes > 1 and pp > 1 and name != "trtllm":
        return _result(name, reason=f"the pick spans {rig.nodes} nodes; {name} serves from one machine")
    if name == "trtllm":
        parts = ["trtllm-serve", model, "--backend pytorch", f"--tp_size {tp}"]
        if pp > 1:
            parts.append(f"--pp_size {pp}")
        parts += [f"--max_seq_len {ctx}", f"--max_batch_size {conc}", "--kv_cache_free_gpu_memory_fraction 0.9"]
        notes = [mem_note]
        if rig.nodes > 1 and pp > 1:
            notes.append(
                "across nodes trtllm-serve runs under MPI: mpirun -n "
                + str(gpus)
                + " trtllm-llmapi-launch trtllm-serve ..."
            )
        if w.precision == "fp8":
            notes.append("fp8: serve an FP8 checkpoint (quantized with NVIDIA TensorRT Model Optimizer)")
        return _result(name, [" ".join(parts)], notes=notes)
    split = ",".join(["1"] * gpus)
    devices = ",".join(str(i) for i in range(gpus))
    if name == "llamacpp":
        parts = [f"CUDA_VISIBLE_DEVICES={devices}", "llama-server", "-m model.gguf", "--n-gpu-layers 999"]
        if gpus > 1:
            parts += ["--split-mode layer", f"--tensor-split {split}"]
        parts += [f"--ctx-size {ctx * conc}", f"--parallel {conc}"]
        if w.kv_cache_dtype == "fp8":
            parts.append("--cache-type-k q8_0 --cache-type-v q8_0 --flash-attn on")
        notes = [
            f"--ctx-size is shared by the {conc} slot{'s' if conc > 1 else ''} (--parallel): {ctx} tokens each",
            "model.gguf: the model converted to GGUF (llama.cpp's convert_hf_to_gguf.py); a quantized GGUF "
            f"(Q8_0, Q4_K_M) needs less memory than the {w.precision} weights counted above",
            "--split-mode layer puts whole layers on each GPU (no per-layer all-reduce, unlike tensor parallel); "
            "--split-mode row splits each matrix across the GPUs",
        ]
        return _result(name, [" ".join(parts)], notes=notes)
    # ollama
    env = [f"CUDA_VISIBLE_DEVICES={devices}", f"OLLAMA_CONTEXT_LENGTH={ctx}", f"OLLAMA_NUM_PARALLEL={conc}"]
    if gpus > 1:
        env.append("OLLAMA_SCHED_SPREAD=1")
    if w.kv_cache_dtype == "fp8":
        env.append("OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0")
    notes = [
        "Ollama splits a model's layers across the visible GPUs when it does not fit on one (no tensor parallel); "
        "OLLAMA_SCHED_SPREAD=1 spreads it over all of them",
        'MODEL: set it to the model\'s name in the Ollama library (ollama pull "$MODEL"), usually 4-bit quantized: '
        "less "
        f"memory than the {w.precision} weights counted above",
    ]
    return _result(name, [" ".join(env) + " ollama serve", 'ollama run "$MODEL"'], notes=notes)
