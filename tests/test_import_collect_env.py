"""PyTorch's collect_env report: its GPU list and driver version (the corpus holds real ones; these are its
other layouts, written from torch/utils/collect_env.py's output format)."""

from __future__ import annotations

from gpuadvisor.importers import import_texts


def test_one_gpu_on_the_heading_line() -> None:
    text = (
        "Collecting environment information...\n"
        "Is CUDA available: True\n"
        "GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB\n"
        "Nvidia driver version: 550.54.15\n"
        "cuDNN version: Could not collect\n"
    )
    rig = import_texts([("env.txt", text)])
    assert [(g.index, g.name) for g in rig.gpus] == [(0, "NVIDIA A100-SXM4-80GB")]
    assert rig.software.driver_version == "550.54.15"


def test_no_cuda_lists_no_gpu_and_says_so() -> None:
    text = (
        "Collecting environment information...\n"
        "Is CUDA available: False\n"
        "GPU models and configuration: Could not collect\n"
        "Nvidia driver version: Could not collect\n"
    )
    rig = import_texts([("env.txt", text)])
    assert rig.software.driver_version is None
    assert [g.name for g in rig.gpus] == []


def test_a_listing_that_ends_the_paste_keeps_no_stub_name() -> None:
    # the report always goes on after its GPU lines (driver, cuDNN, ...): a paste ending inside them was cut there
    head = "Collecting environment information...\nGPU models and configuration: \n"
    full = "GPU 0: NVIDIA A100-SXM-64GB\nGPU 1: NVIDIA A100-SXM-64GB\n"
    for tail in ("GPU 2: NVI\n", "GPU 2: NVIDIA A100-SXM-6"):
        rig = import_texts([("env.txt", head + full + tail)])
        assert [g.name for g in rig.gpus] == ["NVIDIA A100-SXM-64GB", "NVIDIA A100-SXM-64GB", None]
        assert "name" in rig.gpus[2].unavailable
    rig = import_texts([("env.txt", head + full + "GPU 2: NVIDIA A100-SXM-64GB\n")])  # as whole as the lines above
    assert [g.name for g in rig.gpus] == ["NVIDIA A100-SXM-64GB"] * 3


def test_sglang_check_env_names_the_gpus_of_one_model_on_one_line() -> None:
    # written from sglang/check_env.py's output: GPUs grouped by name, their compute capability, the driver
    text = (
        "Python: 3.10.12 (main, Feb  4 2025, 14:57:36) [GCC 11.4.0]\n"
        "CUDA available: True\n"
        "GPU 0,1,2,3: NVIDIA H100 80GB HBM3\n"
        "GPU 0,1,2,3 Compute Capability: 9.0\n"
        "CUDA_HOME: /usr/local/cuda\n"
        "CUDA Driver Version: 550.54.15\n"
        "PyTorch: 2.5.1+cu124\n"
    )
    rig = import_texts([("env.txt", text)])
    assert [(g.index, g.name, g.compute_capability) for g in rig.gpus] == [
        (k, "NVIDIA H100 80GB HBM3", "9.0") for k in range(4)
    ]
    assert rig.software.driver_version == "550.54.15"
