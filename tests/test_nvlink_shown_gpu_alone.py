"""GA204 on a paste showing one GPU whose NVLinks are all inactive: the GPU's index tells whether the host has
others. The real paste (tests/corpus/s10-nvlink/INDEX.toml: leptonai/gpud#1085) shows GPU 2 of a B200 host; the
GPU 0 variant is the same nvidia-smi nvlink -s message written by hand for a host showing its first GPU."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

PASTE = Path(__file__).resolve().parent / "corpus" / "s10-nvlink"


def _ga204(path: Path):
    (f,) = [f for f in evaluate(import_files([path])) if f.code == "GA204"]
    return f


def test_an_sxm_gpu_2_with_every_link_inactive_fails_its_host_has_more_gpus():
    (path,) = PASTE.glob("nvlink-b200-all-links-inactive-*.txt")
    f = _ga204(path)
    assert (f.severity, f.gpus, f.observed["active_links"], f.expected) == ("fail", [2], 0, {"active_links": 18})
    assert "VM" not in f.message


def test_gpu_0_alone_with_every_link_inactive_may_be_a_vm_and_warns(tmp_path):
    path = tmp_path / "nvlink.txt"
    path.write_text(
        "GPU 0: NVIDIA B200 (UUID: GPU-1b2c3d4e-0000-1111-2222-333344445555)\n"
        "NVML: Unable to retrieve NVLink information as all links are inActive\n"
    )
    f = _ga204(path)
    assert (f.severity, f.gpus) == ("warn", [0])
    assert "or in a VM that does not pass NVLink through" in f.message
