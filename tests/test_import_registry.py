"""The importers' registry: one row per format, the lists made from it, storage outputs recognised by content."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpuadvisor.cli import cli
from gpuadvisor.importers import detect, import_files, import_storage
from gpuadvisor.importers.registry import BY_KIND, FORMATS, README_END, README_START, readme_table, recognised

ROOT = Path(__file__).resolve().parent.parent
STORAGE = ROOT / "tests" / "fixtures" / "storage"


def test_readme_lists_the_registry() -> None:
    """README's list of import formats is the registry's (paste ``python -m gpuadvisor.importers.registry``)."""
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(README_START), readme.index(README_END) + len(README_END)
    assert readme[start:end] == readme_table(), "README's import formats differ: paste the registry's list"


def test_one_row_per_kind_with_a_way_in() -> None:
    assert len(BY_KIND) == len(FORMATS)
    settled = {"topo-p2p": "topo-m", "smi-list": "nvlink"}  # reached through their sibling's settle
    for f in FORMATS:
        assert f.starts is not None or BY_KIND[settled[f.kind]].settle is not None, f.kind
        assert f.name and f.starts_with and f.group


def test_not_recognised_names_the_gpu_outputs_and_the_other_groups() -> None:
    assert recognised() == (
        "nvidia-smi (-q, -q -x, topo -m, topo -p2p, nvlink -s, -L, mig -lgi, vgpu, plain, --query-gpu, dmon, or "
        "--version), "
        "NCCL (NCCL_TOPO_DUMP_FILE), PyTorch collect_env, detectron2 collect_env, "
        "PyTorch Lightning collect_env_details, PaddleSeg environment info, torch.__config__.show(), "
        "ML environment reports (Hugging Face env, ds_report, jax, pip or conda list, or cupy show_config), "
        "lspci -vv, sysfs (PCI attributes), nccl-tests, UCC (ucc_perftest), "
        "CUDA samples (bandwidthTest, busGrind, p2pBandwidthLatencyTest, latency table, simpleP2P, "
        "deviceQuery, or matrix rows), "
        "DIGITS (device_query.py), cuda_memtest, GPGPU course libgpu, "
        "nvbandwidth, dcgmproftester, "
        "DCGM, /proc/driver/nvidia/gpus/*/information, /proc/driver/nvidia/gpus/*/power, "
        "nvidia-container-cli (info), incus (info --resources), club-3090 (report.sh), "
        "Akash provider-services (tools psutil list gpu), detect-gpu (NVML JSON), "
        "numba cuda.detect(), "
        "ML framework logs (llama.cpp, ollama, TensorFlow, PyTorch, PaddlePaddle, or ComfyUI), nvitop, gpustat, "
        "Folding@home (FAHClient --lspci), stress tests (gpu_burn), "
        "/proc/driver/nvidia/version, CUDA toolkit, driver packages, or other environment reports output, "
        "nor as a kernel or service log, RDMA, "
        "fabric manager or storage output (import --help)"
    )


def test_storage_outputs_detected_by_content() -> None:
    kinds = {p.name: detect(p.read_text()) for p in sorted(STORAGE.glob("*")) if p.name != "SOURCES.md"}
    assert kinds == {
        "fio-randread-vm.txt": ["fio"],
        "fio-seqread-vm.json": ["fio-json"],
        "lsblk-vm.json": ["lsblk-json"],
        "lsblk-vm.txt": ["lsblk"],
        "nvme-list-1x.txt": ["nvme-list"],
        "nvme-list-2x.txt": ["nvme-list"],
    }
    ctrl = next((ROOT / "tests" / "corpus" / "s20-storage").glob("nvme-id-ctrl-*.txt"))
    assert detect(ctrl.read_text()) == ["nvme-id-ctrl"]  # nvme id-ctrl: one drive's model and capacity
    df = next((ROOT / "tests" / "corpus" / "s15-storage").glob("df-h-*.txt"))
    assert detect(df.read_text()) == ["df"]  # df -h: the mounts


def test_storage_as_file_merged_as_with_storage_option() -> None:
    files = [STORAGE / "lsblk-vm.json", STORAGE / "nvme-list-1x.txt", STORAGE / "fio-seqread-vm.json"]
    rig = import_files(files)
    option = import_storage([str(f) for f in files])
    assert rig.storage == option
    (sp,) = rig.storage.paths
    assert sp.bench is not None and sp.bench.seq_read_gbps == 1.678
    assert [d.name for d in sp.devices] == ["zram0", "vda", "nvme0n1", "nvme11n12"]
    assert rig.provenance["storage"] == "imported"
    assert "lsblk-vm.json: lsblk -J" in rig.source.detail


def test_import_command_reads_a_fio_json_as_file() -> None:
    r = CliRunner().invoke(cli, ["import", str(STORAGE / "fio-seqread-vm.json"), "--format", "json"])
    assert r.exit_code == 0, r.output
    saved = json.loads(r.output)
    assert saved["storage"]["paths"][0]["bench"]["seq_read_gbps"] == 1.678


def test_help_lists_every_format() -> None:
    r = CliRunner().invoke(cli, ["import", "--help"])
    flat = " ".join(r.output.split())
    for f in FORMATS:
        assert f.family in flat, f.kind
