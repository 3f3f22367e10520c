"""Held-out set 19's reading classes, each on its s19 paste and another real public sample of the same format.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts

TESTS = Path(__file__).parent
CUDA_S19 = TESTS / "corpus" / "s19-cuda-samples"


def _read(path: Path):
    return import_texts([(path.name, path.read_text(encoding="utf-8"))])


def test_devicequery_cut_after_three_detected_reads_the_one_shown():
    # https://github.com/torch/cutorch/issues/273: 'Detected 3 CUDA Capable device(s)', only Device 0 shown
    rig = _read(CUDA_S19 / "devicequery-unfenced-3-detected-titan-x-12288mb-cut_cominger.txt")
    assert [(g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        ("GeForce GTX TITAN X", 12884705280, "5.2")
    ]
    assert rig.software.cuda_driver_version == "7.5"
    assert rig.gpus[0].bus_id is None and "bus_id" in rig.gpus[0].unavailable
    assert any("Detected 3" in p for p in rig.problems)


def test_devicequery_with_a_translation_after_each_row():
    # https://chiemon.github.io/2024/12/25/...: curly quotes, Chinese notes after each row, indentation lost
    rig = _read(CUDA_S19 / "devicequery-tesla-t4-chinese-annotations-per-line-cut_chiemon.txt")
    assert [(g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        ("Tesla T4", 15843721216, "7.5")
    ]
    assert rig.software.cuda_driver_version == "11.0"


def test_devicequery_whole_a100_with_pci_row():
    # https://github.com/router-gao/cuda-demo/blob/0e81cdd/cuda-samples/01-cuda-deviceQuery.md (A100 block):
    # 'Device PCI Domain ID / Bus ID / location ID:   0 / 0 / 4' -> 0000:00:04.0
    rig = _read(TESTS / "fixtures" / "import" / "found" / "devicequery_a100-sxm4-40gb_router-gao.txt")
    assert [(g.name, g.memory_total_bytes, g.compute_capability, g.bus_id) for g in rig.gpus] == [
        ("NVIDIA A100-SXM4-40GB", 42481811456, "8.0", "0000:00:04.0")
    ]
    assert rig.software.cuda_driver_version == "12.2"
    assert not any("Detected" in p for p in rig.problems)


SMI_S19 = TESTS / "corpus" / "s19-smi"
SMI_L_4X3090 = TESTS / "corpus" / "smi" / "smi-L_4x3090-prompt_alexanderjacuna.txt"


def test_smi_l_of_two_srun_tasks_each_gpu_0_is_two_gpus_by_uuid():
    # https://github.com/NVIDIA/deepops/issues/1102: 'srun --ntasks=2 --gpus-per-task=1 nvidia-smi -L', each task's
    # cgroup shows its GPU as 'GPU 0'; the UUIDs differ: two GPUs
    rig = _read(SMI_S19 / "srun-two-tasks-smi-L-both-gpu-0-p100-distinct-uuids_ajdecon.txt")
    assert sorted((g.name, g.uuid) for g in rig.gpus) == [
        ("Tesla P100-SXM2-16GB", "GPU-6fb6d3db-aafb-f8da-a089-89b8077580fe"),
        ("Tesla P100-SXM2-16GB", "GPU-b668a901-6b19-5c0c-554c-cce49d58af0a"),
    ]


def test_smi_l_printed_twice_is_still_its_gpus_once():
    # https://github.com/psalias2006/gpu-hot/issues/64 (4x RTX 3090): the same -L pasted twice is the same 4 GPUs
    text = SMI_L_4X3090.read_text(encoding="utf-8")
    rig = import_texts([("twice.txt", text + "\n" + text)])
    assert [g.uuid for g in rig.gpus] == [
        "GPU-e1924eea-b9bb-d537-39f2-b345087fa145",
        "GPU-899c71bf-27be-b6a0-ae8f-d8afe5ba0f85",
        "GPU-acd314e9-4c7a-4824-eb0f-b6e38b1ec38c",
        "GPU-2639988f-1756-0583-db8f-faee38effce2",
    ]
    assert [g.index for g in rig.gpus] == [0, 1, 2, 3]
