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
