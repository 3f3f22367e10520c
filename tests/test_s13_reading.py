"""Held-out set 13's misreads, as classes: DCGM's outputs, vLLM's sectioned collect_env, and a GPU whose name is not
shown silencing the mixed-model check (each case names its source thread; the files are in tests/corpus/s13-*)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.dcgm import parse_dcgm
from gpuadvisor.importers.merge import import_files
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"


def test_dcgmi_nvlink_states_and_exporter_labels() -> None:
    # https://github.com/NVIDIA/dcgm-exporter/issues/576: 8 GPUs x 18 links Up, then exporter lines (UUID masked)
    rig = import_files(
        [CORPUS / "s13-dcgm/dcgmi-nvlink-s-8-gpus-18-links-up-then-dcgm-exporter-p2p-status-h100-cut_craigjfirmus.txt"]
    )
    assert [len(g.nvlinks) for g in rig.gpus] == [18] * 8
    assert all(link.active for g in rig.gpus for link in g.nvlinks)
    assert rig.gpus[0].nvlinks[0].version is None and "speed" in rig.gpus[0].nvlinks[0].unavailable["version"]
    g0, g1 = rig.gpus[0], rig.gpus[1]
    assert (g0.name, g0.bus_id, g0.uuid) == ("NVIDIA H100 80GB HBM3", "0000:19:00.0", None)
    assert (g1.bus_id, rig.software.driver_version) == ("0000:3b:00.0", "570.124.06")


def test_dcgmi_discovery_counts_the_gpus_it_found_and_blanks_are_not_names() -> None:
    # https://github.com/NVIDIA/DCGM/issues/229: "4 GPUs found.", names "<<<NULL>>>", cut in GPU 2's first row
    rig = import_files(
        [CORPUS / "s13-dcgm/dcgmi-discovery-l-4-gpus-found-name-null-trailing-spaces-cut_bergentruckung.txt"]
    )
    assert [(g.index, g.name, g.bus_id) for g in rig.gpus] == [
        (0, None, "0000:4c:00.0"),
        (1, None, "0000:5d:00.0"),
        (2, None, None),
        (3, None, None),
    ]
    assert rig.gpus[0].unavailable["name"] == "DCGM printed '<<<NULL>>>'"


def test_a_dcgm_exporter_line_cut_inside_its_value_keeps_no_value() -> None:
    # the metric names and labels dcgm-exporter prints (its default counters: GPU_TEMP in C, FB_USED/FREE in MiB)
    line = 'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",pci_bus_id="00000000:19:00.0",modelName="NVIDIA H100"} 12'
    whole = parse_dcgm(line + "\n" + line.replace("FB_USED", "FB_FREE").replace("} 12", "} 81547") + "\n")
    assert whole.gpus[0].memory_total_bytes == (12 + 81547) * 2**20
    cut = parse_dcgm(line + "\n" + line.replace("FB_USED", "FB_FREE").replace("} 12", "} 815"))  # no newline: cut
    assert cut.gpus[0].memory_total_bytes is None and cut.gpus[0].memory_used_bytes == 12 * 2**20


def test_vllm_sectioned_collect_env_is_read_like_the_classic_one() -> None:
    # https://github.com/vllm-project/vllm/issues/21310: "PyTorch version              : 2.5.1+cu124"
    rig = import_files(
        [CORPUS / "s13-collect-env/vllm-collect-env-sectioned-rhel83-torch-251-cu124-cut-before-gpu_acsoupir.txt"]
    )
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.5.1+cu124", "12.4")


def test_a_gpu_without_a_name_does_not_silence_the_mix_of_the_others() -> None:
    # https://github.com/noonghunna/club-3090/issues/707: a 3080 and a 5090, a third GPU's name cut
    rig = Rig(gpus=[Gpu(index=0, name="NVIDIA GeForce RTX 3080"), Gpu(index=1, name="NVIDIA GeForce RTX 5090")])
    rig.gpus.append(Gpu(index=2))
    (f,) = [f for f in evaluate(rig) if f.code == "GA301"]
    assert f.severity == "warn" and "1 GPU(s) whose name is not shown" in f.message
    rig.gpus[1].name = "NVIDIA GeForce RTX 3080"
    (f,) = [f for f in evaluate(rig) if f.code == "GA301"]
    assert f.severity == "not-checked"


def test_a_link_down_on_gpus_whose_names_dcgmi_does_not_show_names_no_model() -> None:
    # dcgmi nvlink -s lists link states by gpuId only (NVIDIA DCGM User Guide): a down link is judged against the peers
    text = "GPUs:\n    gpuId 0:\n        U U D U\n    gpuId 1:\n        U U U U\n"
    rig = parse_dcgm(text)
    (f,) = [f for f in evaluate(rig) if f.code == "GA204"]
    assert f.severity == "fail"
    assert f.message == "GPU 0 has 3 active NVLinks where other GPUs (their names not shown) have 4 (inactive links: 2)"
