"""The generic environment-report reader, validated by construction: the seven report forms that each needed their
own reader (the corpus files themselves, read here by the generic reader alone), real reports of tools the project
has no reader for (their URLs below), and texts that name a GPU without being a report (not read as one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.facts import Rig
from gpuadvisor.importers import env_generic, parse_text
from gpuadvisor.importers.section import clean_lines
from gpuadvisor.importers.sections import split_sections

CORPUS = Path(__file__).parent / "corpus"


def _generic(text: str) -> Rig | None:
    """The generic reader alone (no specific reader tried): its first start in ``text``, and what it reads from
    there; None when it finds no report."""
    lines = clean_lines(text)
    start = next((i for i in range(len(lines)) if env_generic.starts(lines, i, None)), None)
    if start is None:
        return None
    body = "\n".join(lines[start:]) + ("\n" if text.endswith("\n") else "")
    return env_generic.parse(body, "t", start + 1)


def _names(rig: Rig) -> list[str | None]:
    return [g.name for g in sorted(rig.gpus, key=lambda g: g.index)]


MIB = 2**20
# (file, GPU names, memory of each in bytes or None, driver, torch, torch's CUDA, Python), the values as the file
# prints them (each file's source is in its folder's INDEX.toml)
FORMS = [
    ("s29-collect-env/vllm-collect-env-sectioned-torch-2-7-cu126-2x-l4-565-cut_nihalucube.txt",
     ["NVIDIA L4"] * 2, None, "565.57.01", "2.7.0+cu126", "12.6", "3.11.11"),
    ("s29-collect-env/collect-env-torch-2-3-cu121-4x-l40-driver-could-not-collect-cut_fengyang95.txt",
     ["NVIDIA L40"] * 4, None, None, "2.3.0+cu121", "12.1", "3.9.2"),  # "Nvidia driver version: Could not collect"
    ("s31-collect-env/detectron2-collect-env-inline-code-4x-rtx3090-c-ext-failed-cut_yuandhu.txt",
     ["NVIDIA GeForce RTX 3090"] * 4, None, None, "1.9.0+cu111", "11.1", "3.6.13"),
    ("s31-collect-env/comfyui-system-info-rtx5090-vram-total-bytes-logs-cut_Wapwray.txt",
     ["NVIDIA GeForce RTX 5090"], None, None, "2.8.0+cu129", "12.9", "3.12.9"),  # VRAM a bare number: not read
    ("s32-collect-env/paddleseg-env-info-8x-a100-pcie-40gb-nvcc-11-7-fenced_shiyutang.txt",
     ["NVIDIA A100-PCIE-40GB"] * 8, None, None, None, None, "3.8.16"),
    ("s32-collect-env/lightning-collect-env-4x-rtx-pro-6000-blackwell-max-q-torch-2-10-cu130-cut_niemiaszek.txt",
     ["NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"] * 4, None, None, "2.10.0+cu130", "13.0", None),
    ("s30-smi/club3090-report-md-2x-rtx3090-lxc-350w-default-610-driver-cut-in-ecc_steamengineer.txt",
     ["NVIDIA GeForce RTX 3090"] * 2, 24576 * MIB, "610.43.02", None, None, None),
    # the third GPU's line is cut inside its name ("NVIDIA GeForce RT"): a name without its model is not read
    ("s30-smi/club3090-report-md-3x-rtx3090-275w-capped-below-default-cut-in-gpu2_3dluvr.txt",
     ["NVIDIA GeForce RTX 3090"] * 2, 24576 * MIB, "590.48.01", None, None, None),
]  # fmt: skip


@pytest.mark.parametrize(("path", "names", "memory", "driver", "torch", "cuda", "python"), FORMS)
def test_each_form_that_needed_its_own_reader_is_read_by_the_generic_one(
    path: str, names: list[str], memory: int | None, driver: str | None, torch: str | None, cuda: str | None,
    python: str | None,
) -> None:  # fmt: skip
    rig = _generic((CORPUS / path).read_text(encoding="utf-8"))
    assert rig is not None
    sw = rig.software
    assert _names(rig) == names
    assert [g.memory_total_bytes for g in rig.gpus] == [memory] * len(names)
    assert (sw.driver_version, sw.torch_version, sw.torch_cuda_version, sw.python_version) == (
        driver, torch, cuda, python
    )  # fmt: skip
    assert any("generic environment report" in p and "keys taken" in p for p in rig.problems)
    assert all(rig.origins[f"gpus[{k}]"].startswith("t:") for k in range(len(rig.gpus)))


def test_fastdeploy_tail_without_its_gpu_part_is_no_report() -> None:
    """FastDeploy's collect_env cut before its GPU lines: pip's nvidia-* wheels name CUDA in package names only."""
    path = "s30-collect-env/fastdeploy-collect-env-tail-cpu-flags-pip-nvidia-wheels-cu11-cu12-no-gpu-section-cut_"
    path += "qwes5s5.txt"
    assert _generic((CORPUS / path).read_text(encoding="utf-8")) is None


# https://github.com/neuml/annotateai/issues/5 (a comment: the user's environment, typed as key: value lines)
ANNOTATEAI_5 = """I share my environment.

OS: linux
GPU: A100
Ubuntu ver: 22.04.2
CUDA version: 11.8
NVIDIA driver version: 520.61.05
"""

# https://github.com/invoke-ai/InvokeAI/issues/6106 (InvokeAI 4's bug form: its "Python dependencies" JSON)
INVOKEAI_6106 = """{
  "accelerate": "0.28.0",
  "compel": "2.0.2",
  "cuda": "12.1",
  "diffusers": "0.27.2",
  "numpy": "1.26.4",
  "opencv": "4.9.0.80",
  "onnx": "1.15.0",
  "pillow": "10.2.0",
  "python": "3.10.9",
  "torch": "2.2.1+cu121",
  "torchvision": "0.17.1+cu121",
  "transformers": "4.39.1",
  "xformers": "0.0.25"
}
"""

# https://github.com/edenaion/EZ-CorridorKey/issues/25: EZ-CorridorKey's "System Info" block, as its issue form holds it
CORRIDORKEY_25 = """## System Info
- **App Version:** 1.1.2
- **OS:** Windows-11-10.0.26200-SP0
- **Python:** 3.12.12
- **PyTorch:** 2.10.0+cu128
- **CUDA:** 12.8
- **GPU:** NVIDIA GeForce RTX 4070 Laptop GPU
- **VRAM:** 8.0 GB total, 0.2 GB used
- **Display:** 1707x960
"""

# https://github.com/dreamnettech/dreamtime/issues/208: typed by its user; "x3" before the name is three GPUs
DREAMTIME_208 = """OS : Archlinux
Nvidia Driver Version: 460.56
CUDA Version: 11.2

GPU : x3 RTX 2070
"""

# https://github.com/invoke-ai/InvokeAI/issues/6301: the same form from a ROCm machine (no CUDA, no NVIDIA GPU)
INVOKEAI_6301_ROCM = """{
  "accelerate": "0.29.2",
  "compel": "2.0.2",
  "cuda": null,
  "diffusers": "0.27.2",
  "numpy": "1.26.4",
  "opencv": "4.9.0.80",
  "onnx": "1.15.0",
  "pillow": "10.3.0",
  "python": "3.11.9",
  "torch": "2.2.2+rocm5.6",
  "torchvision": "0.17.2+rocm5.6",
  "transformers": "4.39.3",
  "xformers": null
}
"""

# https://github.com/PKUliujl/GeoEvoBuilder/issues/3: a GPU and the template's placeholder for the driver, two keys
GEOEVO_3 = """Environment:
- GPU: NVIDIA RTX 4090
- System: [e.g., Ubuntu 22.04 / Windows 11]
- NVIDIA Driver Version: [Output of "nvidia-smi", e.g., 535.xx]
- Environment File: "py38env.yml" specifies "torch==1.12.0+cu113"
"""


def test_a_hand_typed_environment_is_read() -> None:
    rig = _generic(ANNOTATEAI_5)
    assert rig is not None
    assert _names(rig) == ["A100"]
    assert rig.software.driver_version == "520.61.05"
    assert rig.origins["software.driver_version"] == "t:7"
    assert any("cuda version 11.8" in p for p in rig.problems)  # which CUDA (runtime, toolkit): not a field


def test_invokeai_dependencies_json_is_read() -> None:
    rig = _generic(INVOKEAI_6106)
    assert rig is not None
    assert rig.gpus == []
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version, sw.python_version) == ("2.2.1+cu121", "12.1", "3.10.9")


def test_an_apps_markdown_system_info_is_read() -> None:
    rig = _generic(CORRIDORKEY_25)
    assert rig is not None
    assert _names(rig) == ["NVIDIA GeForce RTX 4070 Laptop GPU"]
    assert rig.gpus[0].memory_total_bytes == 8 * 2**30  # "8.0 GB total": GB read 1024-based, as torch's reports mean
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version, sw.python_version) == ("2.10.0+cu128", "12.8", "3.12.12")
    assert sw.driver_version is None
    assert rig.origins["gpus[0]"] == "t:7"


def test_a_counted_gpu_is_not_one_gpu() -> None:
    rig = _generic(DREAMTIME_208)
    assert rig is not None
    assert rig.gpus == []  # "x3 RTX 2070": three GPUs, not GPU 0
    assert rig.software.driver_version == "460.56"


def test_a_rocm_report_and_a_two_key_list_are_not_reports() -> None:
    assert _generic(INVOKEAI_6301_ROCM) is None  # "cuda": null names no CUDA, no NVIDIA GPU
    assert _generic(GEOEVO_3) is None  # GPU and a driver placeholder: two keys


def test_the_last_row_reads_a_report_no_specific_reader_knows() -> None:
    """Through the whole import: the generic row starts the paste, names its origin line, notes its keys."""
    parts = parse_text(ANNOTATEAI_5, "env.txt")
    assert [p.kind for p in parts] == ["env-generic"]
    assert parts[0].rig.gpus[0].name == "A100"


def test_specific_readers_win() -> None:
    """A collect_env report is still read by its own reader: the generic row is tried last."""
    text = (CORPUS / FORMS[0][0]).read_text(encoding="utf-8")
    assert "env-generic" not in {s.kind for s in split_sections(text)}


NEGATIVES = {
    # a training job's config: gpu/cuda/driver-like keys without an NVIDIA GPU or a CUDA version
    "yaml": "trainer:\n  gpu: 1\n  cuda: true\n  device: cuda\n  python: python3\n  torch: latest\n  nccl: true\n",
    "prose": (
        "This project needs a GPU. Install the NVIDIA driver and CUDA 12.1, then PyTorch.\n"
        "Python 3.10 or newer is required. An RTX 3090 or A100 works well.\n"
    ),
    "pip freeze": (
        "nvidia-cuda-runtime-cu12==12.1.105\nnvidia-nccl-cu12==2.20.5\ntorch==2.3.0+cu121\npython-dateutil==2.9\n"
    ),
    "k8s": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: cuda-vectoradd\nspec:\n  containers:\n  - name: cuda\n"
        "    image: nvidia/cuda:12.1.0-base-ubuntu22.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NEGATIVES))
def test_texts_that_are_no_report_are_not_read_as_one(name: str) -> None:
    rig = _generic(NEGATIVES[name])
    assert rig is None or rig.gpus == []


def test_memory_units() -> None:
    text = "- GPU: NVIDIA GeForce RTX 4090\n- VRAM: 24 GB\n- CUDA: 12.4\n"
    rig = _generic(text)
    assert rig is not None and rig.gpus[0].memory_total_bytes == 24 * 2**30
    rig = _generic("**GPU:** NVIDIA A10\n**GPU memory:** 23028 MiB\n**Driver:** 535.104.05\n")
    assert rig is not None and rig.gpus[0].memory_total_bytes == 23028 * 2**20
    assert rig.software.driver_version == "535.104.05"
