"""GA810's "nvidia-smi lists only some of the GPUs" is a fact the readers set (Rig.partial_gpu_list, never in the
scan JSON), not words found in the problem texts: nvidia-smi -q -i N, an "Attached GPUs" count above the GPUs shown,
a paste cut inside its fence."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.importers.beyond_merge import _bus_without_driver
from gpuadvisor.rules import evaluate

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "corpus"
# lspci -nn's four L40S and nvidia-smi --query-gpu's three (tests/fixtures/beyond/SOURCES.md): a complete list
FOUR_THREE = TESTS / "fixtures" / "beyond" / "lspci-4-l40s-smi-csv-3.txt"


@pytest.mark.parametrize(
    "sample",
    [
        "smi/smi-q-i0-windows-wddm-cut_llamafilm.txt",  # anderskm/gputil#38: nvidia-smi -q -i 0
        "s13-smi-q/smi-q-wsl-4-attached-titan-rtx-wddm-cut-at-part-number_yes89929.txt",  # microsoft/WSL#7852: 4 of 1
        "s11-smi/smi-bash-fence-4xv100-sxm2-truncated-names-418-cut-in-gpu3_2sin18.txt",  # NVIDIA/nccl#326: cut
    ],
)
def test_each_reader_that_sees_a_partial_list_says_so_in_the_fact(sample):
    rig = import_files([CORPUS / sample])
    assert rig.partial_gpu_list is True
    assert "partial_gpu_list" not in rig.to_json()  # not a field: the scan JSON is what it was


def test_a_complete_list_is_not_partial_and_ga810_compares_it():
    rig = import_files([FOUR_THREE])
    assert rig.partial_gpu_list is False
    assert [(f.severity, f.subject) for f in evaluate(rig) if f.code == "GA810"] == [("fail", "PCI 0000:82:00.0")]


def test_ga810_reads_the_fact_not_the_words_of_a_problem():
    rig = import_files([FOUR_THREE])
    worded = copy.deepcopy(rig)
    worded.problems.append("notes.txt: a comment: its one GPU is GPU 0")  # the words, without the fact
    _bus_without_driver(worded)
    assert worded.node.nvidia_pci_functions == rig.node.nvidia_pci_functions
    flagged = copy.deepcopy(rig)
    flagged.partial_gpu_list = True
    _bus_without_driver(flagged)
    assert flagged.node.nvidia_pci_functions is None
    assert "only some of its GPUs" in flagged.node.unavailable["nvidia_pci_functions"]


def test_the_fact_survives_the_merge_of_separate_files(tmp_path):
    smi = tmp_path / "smi.txt"
    smi.write_text((CORPUS / "smi" / "smi-q-i0-windows-wddm-cut_llamafilm.txt").read_text())
    lspci = tmp_path / "lspci.txt"  # lspci's device lines as lspci(8) prints them
    lspci.write_text(
        "".join(f"{b}:00.0 VGA compatible controller: NVIDIA Corporation GA102 (rev a1)\n" for b in ("18", "3b"))
    )
    rig = import_files([smi, lspci])
    assert rig.partial_gpu_list is True
    assert [f.severity for f in evaluate(rig) if f.code == "GA810"] == ["not-checked"]
