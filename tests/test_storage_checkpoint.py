"""Checkpoint-size arithmetic against what torch.distributed.checkpoint writes, and against published sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.advisor.checkpoint import bytes_per_param, parse_interval, plan_checkpoint
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig, StorageBench, StoragePath

GiB, TiB = 2**30, 2**40

# A small model, trained one Adam step and saved with DCP (model + optimizer state dicts): one process, two
# processes with DDP (replicated states) or two with FSDP2 (sharded states), gloo on CPUs. Prints the parameter
# count and each file DCP wrote with its size.
DCP_SCRIPT = r"""
import os, sys, json, pathlib
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict

mode, world, rank, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if world > 1:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[5])
    dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512))
params = sum(p.numel() for p in model.parameters())
if mode == "ddp":
    model = torch.nn.parallel.DistributedDataParallel(model)
elif mode == "fsdp":
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    for m in model:
        if isinstance(m, torch.nn.Linear):
            fully_shard(m, mesh=mesh)
    fully_shard(model, mesh=mesh)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model(torch.randn(4, 512)).sum().backward()
opt.step()
msd, osd = get_state_dict(model, opt)
dcp.save({"model": msd, "optim": osd}, checkpoint_id=out)
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
if rank == 0:
    print(json.dumps([params, {f.name: f.stat().st_size for f in pathlib.Path(out).iterdir()}]))
"""


def _free_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _dcp(tmp_path: Path, mode: str, world: int) -> tuple[int, dict[str, int]]:
    out = tmp_path / f"ckpt-{mode}"
    script = tmp_path / "save.py"
    script.write_text(DCP_SCRIPT)
    port = _free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), mode, str(world), str(r), str(out), port],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(world)
    ]
    results = [p.communicate(timeout=240) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err[-2000:]
    params, files = json.loads(results[0][0].splitlines()[-1])
    return params, files


@pytest.fixture(scope="module")
def dcp_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, dict[str, int]]]:
    pytest.importorskip("torch.distributed.checkpoint")
    tmp = tmp_path_factory.mktemp("dcp")
    return {"single": _dcp(tmp, "single", 1), "ddp": _dcp(tmp, "ddp", 2), "fsdp": _dcp(tmp, "fsdp", 2)}


def test_dcp_world_size_1_matches_12_bytes_per_param(dcp_runs: dict) -> None:
    params, files = dcp_runs["single"]
    assert params == 512 * 1024 + 1024 + 1024 * 512 + 512
    per, _ = bytes_per_param("PyTorch FSDP", "16", "adamw")
    assert per == 12.0
    written = sum(files.values())
    # DCP adds a .metadata file and one 4-byte Adam step per parameter tensor: well under 2 %.
    assert written == pytest.approx(params * per, rel=0.02) and written > params * per
    assert ".metadata" in files


def test_dcp_ddp_replicated_states_written_once(dcp_runs: dict) -> None:
    params, files = dcp_runs["ddp"]
    # DDP's states are the same on both ranks: DCP's planner deduplicates them, so the total stays ~12 B/param.
    assert sum(files.values()) == pytest.approx(params * 12.0, rel=0.02)
    assert sorted(f for f in files if f.endswith(".distcp")) == ["__0_0.distcp", "__1_0.distcp"]


def test_dcp_fsdp_each_rank_writes_its_half(dcp_runs: dict) -> None:
    params, files = dcp_runs["fsdp"]
    shards = [size for name, size in files.items() if name.endswith(".distcp")]
    assert sum(files.values()) == pytest.approx(params * 12.0, rel=0.02)
    # sharded: each of the 2 ranks writes half the states, the per-node share plan_checkpoint uses
    assert len(shards) == 2 and all(size == pytest.approx(params * 12.0 / 2, rel=0.02) for size in shards)


def test_bloom_176b_published_checkpoint_sizes() -> None:
    """BigScience (bigscience.notion.site, "BigScience 176B Model"): "only the bf16 weights are 329GB, the full
    checkpoint with optimizer states is 2.3TB" (binary units); BLOOM has 176,247M parameters (arXiv:2211.05100)."""
    params = 176_247_000_000
    per, _ = bytes_per_param("DeepSpeed ZeRO stage 1", "16", "adamw")
    assert per == 14.0
    assert params * per / TiB == pytest.approx(2.3, rel=0.03)
    assert params * 2 / GiB == pytest.approx(329, rel=0.01)


def _advice(framework: str, zero: int, params: int = 70_553_706_496, nodes: int = 1) -> dict:
    return {
        "task": "train",
        "workload": {
            "params": params,
            "trainable_params": params,
            "state_bytes": "16",
            "optimizer": "adamw",
            "nodes": nodes,
            "seq_len": 4096,
            "architecture": {"vocab": 128256},
        },
        "pick_detail": {
            "framework": framework,
            "zero_stage": zero,
            "tensor_parallel": 1,
            "pipeline_parallel": 1,
            "step_seconds": 10.0,
            "tokens_per_second": 100_000.0,
        },
    }


def test_save_time_and_stall_at_measured_rate() -> None:
    rig = Rig()
    rig.storage.paths = [
        StoragePath(
            path="/ckpt",
            role="checkpoint",
            free_bytes=1500 * 10**9,
            bench=StorageBench(seq_write_gbps=4.0, seq_read_gbps=6.0, method="fio-3.33"),
        )
    ]
    plan = plan_checkpoint(rig, _advice("DeepSpeed ZeRO stage 3", 3, nodes=2), "30m")
    assert plan is not None
    assert plan.total_bytes == 70_553_706_496 * 14
    assert plan.sharded and plan.per_node_bytes == plan.total_bytes // 2
    assert plan.write_provenance == "measured" and plan.write_gbps == 4.0
    assert plan.save_seconds == pytest.approx(70_553_706_496 * 7 / 4e9, abs=0.1)  # 123.5 s
    assert plan.consolidated_save_seconds == pytest.approx(2 * plan.save_seconds, abs=0.1)
    assert plan.stall_fraction == pytest.approx(123.47 / (1800 + 123.47), abs=1e-4)
    assert plan.data_read_needed_gbps == pytest.approx(100_000 * 4 / 1e9)
    assert plan.data_read_measured_gbps == 6.0


def test_ddp_is_not_sharded_and_unmeasured_rate_is_assumed() -> None:
    plan = plan_checkpoint(Rig(), _advice("PyTorch DDP", 0, params=1_000_000_000), None)
    assert plan is not None and not plan.sharded and plan.bytes_per_param == 12.0
    assert plan.write_provenance == "assumed" and "assumed" in plan.write_source
    assert plan.interval_seconds == 3600 and "assumed" in plan.interval_source
    assert plan.save_seconds == pytest.approx(12e9 / 2e9)


def test_sample_bytes_and_intervals() -> None:
    plan = plan_checkpoint(Rig(), _advice("PyTorch FSDP", 3), "500steps", sample_bytes=150_000)
    assert plan is not None and plan.interval_seconds == 5000.0
    assert plan.data_read_needed_gbps == pytest.approx(100_000 / 4096 * 150_000 / 1e9)
    assert parse_interval("2h", None)[0] == 7200 and parse_interval("900s", None)[0] == 900
    assert parse_interval("45", None)[0] == 2700
    with pytest.raises(InputError, match="checkpoint-every"):
        parse_interval("soon", None)
