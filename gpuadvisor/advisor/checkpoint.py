"""Checkpoints and the data loader: how big a save is, how long it stalls training, and the read rate needed.

What a training checkpoint holds (gradients are never saved):

- PyTorch DDP / FSDP with AMP or FSDP MixedPrecision: fp32 parameters (4 B) + Adam's exp_avg and exp_avg_sq
  in fp32 (8 B) = 12 B per parameter; torch.distributed.checkpoint (DCP) writes those tensors and a small
  ``.metadata`` file (tested against what DCP writes, tests/test_storage_checkpoint.py);
- DeepSpeed ZeRO and Megatron-LM with bf16/fp16 mixed precision: the 16-bit model weights (2 B) + the fp32
  master copy, exp_avg and exp_avg_sq (12 B) = 14 B per parameter (BigScience: BLOOM-176B's bf16 weights
  are 329 GB and its full checkpoint with optimizer states 2.3 TB, bigscience.notion.site "BigScience 176B
  Model"; 176.2e9 x 2 B = 328 GiB and x 14 B = 2.24 TiB);
- pure bf16 training without an fp32 master (torchtune): 2 + 2 x 2 = 6 B; 8-bit Adam: the weights + 2 B;
- a consolidated weights-only export (Hugging Face safetensors): 2 B (bf16) per parameter.

Save time: sharded saves (DCP, DeepSpeed per-rank files) have every node write its share at once, so a node
writes ``total / nodes`` at its measured write rate; a consolidated ``torch.save`` on rank 0 first gathers the
whole state to one host and writes it from there. The rate is the measured sequential write of the
checkpoint directory (``bench --storage``), else an assumption said as such. Blocking saves stall training:
the share is save time / checkpoint interval. Asynchronous saves (DCP ``async_save``) hide the write behind
training but still need the host RAM to stage it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpuadvisor.advice_model import Advice, CheckpointPlan, TrainCandidate
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig, StoragePath
from gpuadvisor.numbers import SECONDS_PER

GiB = 2**30
ASSUMED_WRITE_GBPS = 2.0
ASSUMED_WRITE_SOURCE = (
    "assumed 2 GB/s sequential write (nothing measured: run gpuadvisor bench --storage DIR on the checkpoint directory)"
)
DEFAULT_INTERVAL_S = 3600.0
BYTES_PER_TOKEN_SOURCE = (
    "token ids stored as uint16 when the vocabulary has under 65,536 entries, else 4 bytes "
    "(Megatron-LM's indexed dataset picks its dtype that way)"
)


def bytes_per_param(framework: str, state_bytes: str, optimizer: str) -> tuple[float, str]:
    """Checkpoint bytes per trained parameter and what they are."""
    if state_bytes == "bf16":
        moments = 2.0 if optimizer == "adam8bit" else 4.0
        return 2.0 + moments, f"bf16 weights 2 B + {optimizer} moments {moments:g} B (no fp32 master copy)"
    if optimizer == "adam8bit":
        return 6.0 + 2.0, "fp32 master 4 B + bf16 weights 2 B + 8-bit Adam moments 2 B"
    if optimizer == "sgd":
        return 8.0, "fp32 weights 4 B + fp32 momentum 4 B"
    if framework.startswith("PyTorch"):
        return 12.0, "fp32 parameters 4 B + Adam exp_avg and exp_avg_sq 8 B (FSDP/DDP state dicts)"
    return 14.0, "16-bit weights 2 B + fp32 master copy 4 B + Adam exp_avg and exp_avg_sq 8 B (DeepSpeed, Megatron-LM)"


def parse_interval(text: str | None, step_seconds: float | None) -> tuple[float, str]:
    """``--checkpoint-every``: "30m", "2h", "900s", "45" (minutes) or "500steps" (x the predicted step time)."""
    if text is None:
        return DEFAULT_INTERVAL_S, "assumed every hour (no --checkpoint-every given)"
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|sec|m|min|h|steps?)?\s*", text.lower())
    if not m or float(m.group(1)) <= 0:
        raise InputError(f"--checkpoint-every {text!r}: expected a duration (30m, 2h, 900s) or a step count (500steps)")
    value, unit = float(m.group(1)), m.group(2) or "m"
    if unit.startswith("step"):
        if not step_seconds:
            raise InputError(
                f"--checkpoint-every {text!r}: no predicted step time to turn steps into seconds; give a duration (30m)"
            )
        return value * step_seconds, f"every {value:g} steps x {step_seconds:.1f} s per step (predicted)"
    seconds = value * SECONDS_PER[unit[0]]  # s | sec, m | min, h
    return seconds, f"every {seconds / 60:g} min (--checkpoint-every)"


def write_rate(rig: Rig) -> tuple[float, str, str]:
    """(GB/s, where it comes from, provenance) for checkpoint writes."""
    for role in ("checkpoint", "working", "data"):
        for sp in rig.storage.paths:
            if sp.role == role and sp.bench is not None and sp.bench.seq_write_gbps:
                how = sp.bench.method or "bench --storage"
                return sp.bench.seq_write_gbps, f"measured sequential write of {sp.path} ({how})", sp.bench.provenance
    return ASSUMED_WRITE_GBPS, ASSUMED_WRITE_SOURCE, "assumed"


def read_rate(rig: Rig) -> tuple[float | None, str]:
    for role in ("data", "working", "checkpoint"):
        for sp in rig.storage.paths:
            if sp.role == role and sp.bench is not None and sp.bench.seq_read_gbps:
                return sp.bench.seq_read_gbps, f"measured sequential read of {sp.path} ({sp.bench.method})"
    return None, "no read rate measured (run gpuadvisor bench --storage DATA_DIR)"


def plan_checkpoint(
    rig: Rig, advice: Advice | Mapping[str, Any], checkpoint_every: str | None = None, sample_bytes: int | None = None
) -> CheckpointPlan | None:
    """From the advisor's output (or its JSON) and the rig's storage facts; None without a training pick."""
    a = Advice.coerce(advice)
    pick, w = a.pick, a.workload
    if a.task != "train" or not isinstance(pick, TrainCandidate):
        return None
    params = int(w.params or 0)
    trained = int(w.trainable_params or params)
    framework = pick.framework or ""
    per_param, contents = bytes_per_param(framework, str(w.state_bytes or "16"), str(w.optimizer or "adamw"))
    total = int(trained * per_param)
    notes: list[str] = []
    if trained < params:
        notes.append(f"fine-tuning {trained:,} of {params:,} parameters: the frozen base is not in the checkpoint")
    nodes = int(w.nodes or 1)
    sharded = (
        bool(pick.zero_stage)
        or "FSDP" in framework
        or int(pick.tensor_parallel or 1) > 1
        or int(pick.pipeline_parallel or 1) > 1
    )
    gbps, source, prov = write_rate(rig)
    per_node = total // nodes if sharded else total
    save_s = per_node / (gbps * 1e9)
    consolidated_s = total / (gbps * 1e9)
    interval, interval_src = parse_interval(checkpoint_every, pick.step_seconds)
    writers = (
        f"sharded: every rank writes its share ({nodes} node(s) at once; torch.distributed.checkpoint or "
        "per-rank files)"
        if sharded
        else "replicated states (DDP): written once, by rank 0's node (torch.distributed.checkpoint deduplicates)"
    )
    free_path, free = None, None
    for sp in rig.storage.paths:
        if sp.role in ("checkpoint", "working") and sp.free_bytes is not None:
            free_path, free = sp.path, sp.free_bytes
            break
    plan = CheckpointPlan(
        params=params,
        trained_params=trained,
        bytes_per_param=per_param,
        contents=contents,
        total_bytes=total,
        weights_only_bytes=int(params * 2),
        sharded=sharded,
        writers=writers,
        per_node_bytes=per_node,
        write_gbps=gbps,
        write_source=source,
        write_provenance=prov,
        save_seconds=round(save_s, 1),
        consolidated_save_seconds=round(consolidated_s, 1),
        interval_seconds=interval,
        interval_source=interval_src,
        stall_fraction=round(save_s / (interval + save_s), 4),
        host_ram_needed_bytes=total,
        free_bytes=free,
        free_path=free_path,
        notes=notes,
    )
    tps = pick.tokens_per_second
    if tps:
        seq = int(w.seq_len or 0)
        vocab = int(w.architecture.get("vocab") or 0)
        if sample_bytes:
            need = tps / max(seq, 1) * sample_bytes
            plan.notes.append(
                f"data: {tps / max(seq, 1):.1f} samples/s x {sample_bytes:,} B per sample (--sample-bytes)"
            )
        else:
            per_token = 2 if 0 < vocab < 65536 else 4
            need = tps * per_token
            plan.notes.append(f"data: {tps:,.0f} tokens/s x {per_token} B per token ({BYTES_PER_TOKEN_SOURCE})")
        plan.data_read_needed_gbps = round(need / 1e9, 12)
        plan.data_read_measured_gbps, plan.data_read_source = read_rate(rig)
    return plan


def checkpoint_free_enough(sp: StoragePath, total_bytes: int) -> bool | None:
    """Whether ``sp`` has room for two checkpoints (the one being written and the last good one)."""
    if sp.free_bytes is None:
        return None
    return sp.free_bytes >= 2 * total_bytes
