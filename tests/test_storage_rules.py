"""GA9xx storage rules on probed fake trees and hand-made facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuadvisor.probes.storage import probe_storage

from gpuadvisor.advisor.checkpoint import plan_checkpoint
from gpuadvisor.facts import Gpu, Rig, StorageBench, StoragePath
from gpuadvisor.rules import evaluate
from tests.test_storage_probe import build_tree, fake_statvfs

GiB = 2**30


def codes(rig: Rig, prefix: str = "GA9") -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in evaluate(rig) if f.code.startswith(prefix)]


def _rig(tmp_path: Path, *paths: tuple[str, str]) -> Rig:
    rig = Rig(gpus=[Gpu(index=i, memory_total_bytes=80 * GiB) for i in range(8)])
    rig.storage = probe_storage(list(paths), root=build_tree(tmp_path), statvfs=fake_statvfs)
    return rig


def test_nvme_link_at_x2_found_raid_members_fine(tmp_path: Path) -> None:
    rig = _rig(tmp_path, ("/", "working"), ("/data", "data"))
    found = [f for f in evaluate(rig) if f.code == "GA901"]
    assert len(found) == 1
    assert "nvme0n1" in found[0].message and "x2 where both ends support x4" in found[0].message
    assert found[0].observed == {"current_link_width": 2} and found[0].expected == {"max_link_width": 4}


def test_network_and_hdd_reported(tmp_path: Path) -> None:
    rig = _rig(tmp_path, ("/mnt/nfs/imagenet", "data"), ("/scratch", "checkpoint"), ("/data", "working"))
    found = {f.subject: f for f in evaluate(rig) if f.code == "GA902"}
    assert set(found) == {"data dir /mnt/nfs/imagenet", "checkpoint dir /scratch"}
    assert "nfs4 from 10.0.0.5:/export" in found["data dir /mnt/nfs/imagenet"].message
    assert "rotational disk (sda)" in found["checkpoint dir /scratch"].message


def test_page_cache_rule(tmp_path: Path) -> None:
    rig = _rig(tmp_path, ("/data", "data"))
    assert ("GA905", "info") not in codes(rig)  # 1.9e9 kB available > 2 x 640 GiB
    rig.storage.memory_available_bytes = 1000 * 10**9
    assert ("GA905", "info") in codes(rig)
    rig.storage.missing("memory_available_bytes", "no MemAvailable line")
    assert ("GA905", "not-checked") in codes(rig)


def _advice(params: int) -> dict:
    return {
        "task": "train",
        "workload": {
            "params": params,
            "trainable_params": params,
            "state_bytes": "16",
            "optimizer": "adamw",
            "nodes": 1,
            "seq_len": 4096,
            "architecture": {"vocab": 32000},
        },
        "pick_detail": {
            "framework": "DeepSpeed ZeRO stage 3",
            "zero_stage": 3,
            "step_seconds": 10.0,
            "tokens_per_second": 2e6,
        },
    }


def test_checkpoint_space_read_rate_and_stall() -> None:
    rig = Rig(gpus=[Gpu(index=0, memory_total_bytes=80 * GiB)])
    ck = StoragePath(
        path="/ckpt",
        role="checkpoint",
        free_bytes=1500 * GiB,
        bench=StorageBench(seq_write_gbps=1.0, seq_read_gbps=3.0, method="fio-3.33"),
    )
    data = StoragePath(path="/data", role="data", bench=StorageBench(seq_read_gbps=0.002, method="fio-3.33"))
    rig.storage.paths = [ck, data]
    rig.advice = _advice(70_000_000_000)
    rig.advice["checkpoint"] = plan_checkpoint(rig, rig.advice, "1h").to_dict()  # 980e9 B at 1 GB/s: 980 s
    got = codes(rig)
    assert ("GA904", "warn") in got  # 1500 GiB free < 2 x 913 GiB
    assert ("GA906", "warn") in got  # 980 / (3600 + 980) = 21 %
    assert ("GA903", "warn") in got  # needs 2e6 tokens/s x 2 B = 4 MB/s, reads 2 MB/s
    stall = next(f for f in evaluate(rig) if f.code == "GA906")
    assert stall.observed == {"stall_fraction": pytest.approx(980 / 4580, abs=1e-4)}
    ck.free_bytes = 2000 * GiB
    data.bench = StorageBench(seq_read_gbps=0.5, method="fio-3.33")
    rig.advice["checkpoint"] = plan_checkpoint(rig, rig.advice, "1h").to_dict()
    got = codes(rig)
    assert ("GA904", "warn") not in got and ("GA903", "warn") not in got


def test_no_storage_facts_no_storage_findings() -> None:
    rig = Rig(gpus=[Gpu(index=0, memory_total_bytes=80 * GiB)])
    assert codes(rig) == []
