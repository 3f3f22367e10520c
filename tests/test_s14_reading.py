"""Held-out set 14's misreads, as classes (files in tests/corpus/s14-*, gathered and read by hand before the tool ran
on them; each case names its source thread)."""

from __future__ import annotations

from gpuadvisor.importers.merge import import_files
from gpuadvisor.importers.prefixed import strip_prefix
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def test_an_ibstat_fragment_from_its_port_line_is_a_port_of_an_adapter_not_shown() -> None:
    # https://github.com/Azure/azhpc-diagnostics/issues/76: "...", "Port 1:", State: Down, Physical state: Polling
    rig = import_files([_one("s14-rdma-logs/ibstat-fragment-*.txt")])
    assert [(p.device, p.port, p.state, p.phys_state) for p in rig.network.rdma_ports or []] == [
        ("? (CA not shown)", 1, "DOWN", "Polling")
    ]


def test_rays_worker_prefix_is_stripped_like_a_launchers_and_a_fence_has_none() -> None:
    # https://github.com/ray-project/ray_lightning/issues/24: every line "(pid=909608) ...", fenced
    text = "```\n(pid=9) a:9:9 [0] NCCL INFO x\n(pid=9) a:9:9 [0] NCCL INFO y\n(RayWorker pid=7, ip=10.0.0.2) z\n```\n"
    out, what = strip_prefix(text)
    assert what == "Ray's worker prefix"
    assert out == "```\na:9:9 [0] NCCL INFO x\na:9:9 [0] NCCL INFO y\nz\n```\n"
    assert import_files([_one("s14-nccl-debug/ray-pid-prefixed-*.txt")]).network.nccl_transports is not None


def test_torchs_too_old_driver_warning_gives_the_drivers_cuda_and_ga502_fails() -> None:
    # https://github.com/lhotse-speech/lhotse/issues/793: "found version 9010" is CUDA 9.1; torch 1.12.1+cu102
    path = _one("s14-collect-env/collect-env-driver-too-old-*.txt")
    rig = import_files([path])
    assert (rig.software.cuda_driver_version, rig.software.torch_cuda_version) == ("9.1", "10.2")
    assert ("GA502", "fail", "software") in _found(path)


def test_a_torch_version_with_a_suffix_is_read() -> None:
    # https://github.com/mindee/doctr/pull/345: docTR's report, "PyTorch version: 1.8.0 (torchvision: 0.9.0)"
    rig = import_files([_one("s14-collect-env/doctr-*.txt")])
    assert rig.software.torch_version == "1.8.0"


def test_mig_devices_listed_or_labelled_mean_mig_mode_on() -> None:
    # https://github.com/NVIDIA/nvidia-container-toolkit/issues/203: nvidia-smi -L with "MIG 3g.40gb Device 0:" lines
    assert [g.mig_mode for g in import_files([_one("s14-smi/smi-l-lxc-*.txt")]).gpus] == [True]
    # https://github.com/NVIDIA/dcgm-exporter/issues/317: dcgm-exporter series with GPU_I_PROFILE / GPU_I_ID labels
    assert [g.mig_mode for g in import_files([_one("s14-dcgm/*.txt")]).gpus] == [True, True]


def test_an_adapter_that_failed_to_load_and_one_short_of_slot_power_warn() -> None:
    # https://github.com/PeterSuh-Q3/tinycore-redpill/issues/9 and https://github.com/leptonai/gpud/issues/348
    assert _found(_one("s14-rdma-logs/dmesg-grep-mlx5-cx4lx-*.txt")) == [("GA826", "warn", "RDMA adapter 0000:03:00.0")]
    assert _found(_one("s14-rdma-logs/dmesg-T-host-mlx5-*.txt")) == [("GA826", "warn", "RDMA adapter 0000:5c:00.0")]
