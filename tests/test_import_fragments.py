"""The regular-expression fragments (importers/fragments.py) against strings the tools print, cited where each
was pasted: each fragment takes its own form whole and not the forms it is not for."""

from __future__ import annotations

import re

import pytest

from gpuadvisor.importers import fragments as f

# (fragment, a string it must take whole, where that string was printed)
TAKES = [
    # nvidia-smi -q's GPU line: github.com/thamada/nvidia-smi gls/L4_smi.py (tests/fixtures/import/samples/smi-q_l4_*)
    (f.PCI_BUS_ID, "00000000:01:00.0"),
    # the kernel's nouveau line: "nouveau 0000:01:00.0: gsp ctor failed: -2" (tests/corpus/s23-lost-gpu)
    (f.PCI_BUS_ID, "0000:01:00.0"),
    (f.PCI_BUS_ID_ANY_DOMAIN, "0000:01:00.0"),
    # lspci without -D: "01:00.0 VGA compatible controller: NVIDIA Corporation AD102GL" (github.com/luigifcruz/stelline
    # docs/quickstart/validated-hardware/server/asus-esc8000a-e12.md)
    (f.PCI_BUS_ID_ANY_DOMAIN, "01:00.0"),
    # nccl-tests' device line: "Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB
    # HBM3" (github.com/lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result)
    (f.PCI_BUS_ID_NO_FUNCTION, "0000:04:00"),
    # nvbandwidth's device line: "Device 0: NVIDIA H200 (00000000:8f:00)" (github.com/NVIDIA/nvbandwidth)
    (f.PCI_BUS_ID_NO_FUNCTION, "00000000:8f:00"),
    (f.PCI_DOMAIN + f.PCI_BUS_DEVICE + f.PCI_FUNCTION, "00000000:8F:00.7"),
    # nvidia-smi -q's GPU UUID line: "GPU UUID : GPU-453f8851-d1a3-e72d-4d85-3ef04418205b" (thamada/nvidia-smi)
    (f.UUID_BODY, "453f8851-d1a3-e72d-4d85-3ef04418205b"),
    (f.HEX, "F"),
    # TensorFlow's "Created TensorFlow device (...) -> physical GPU (device: 0, name: NAME, pci bus id: 0000:01:00.0,
    # compute capability: 8.6)" (tensorflow core/common_runtime/gpu/gpu_device.cc)
    (f.PCI_BUS_ID_LOOSE, "0000:01:00.0"),
]

# (fragment, a string it must not take whole, why not)
REFUSES = [
    (f.PCI_BUS_ID, "01:00.0"),  # no domain: lspci without -D
    (f.PCI_BUS_ID, "0000:04:00"),  # no function
    (f.PCI_BUS_ID, "0000:01:00.8"),  # a PCI function is 0 to 7
    (f.PCI_BUS_ID, "000:01:00.0"),  # a domain has 4 to 8 digits
    (f.PCI_BUS_ID_NO_FUNCTION, "0000:04:00.0"),
    (f.PCI_BUS_ID_ANY_DOMAIN, "0000:1:00.0"),  # a bus has two digits
    (f.UUID_BODY, "GPU-453f8851-d1a3-e72d-4d85-3ef04418205b"),  # the body alone, its prefix is the pattern's
    (f.UUID_BODY, "xxxxx851-d1a3-e72d-4d85-3ef04418205b"),  # masked in a paste: not a UUID
    (f.HEX, "g"),
    (f.PCI_BUS_ID_LOOSE, "0000:01:00.0,"),  # the comma after it is the log's
]


@pytest.mark.parametrize(("fragment", "text"), TAKES)
def test_a_fragment_takes_its_form_whole(fragment: str, text: str) -> None:
    assert re.fullmatch(fragment, text)


@pytest.mark.parametrize(("fragment", "text"), REFUSES)
def test_a_fragment_refuses_other_forms(fragment: str, text: str) -> None:
    assert not re.fullmatch(fragment, text)


def test_no_fragment_holds_a_capturing_group() -> None:
    """A pattern composed of them keeps its own group numbers."""
    for name in (
        "HEX",
        "PCI_DOMAIN",
        "PCI_BUS_DEVICE",
        "PCI_FUNCTION",
        "PCI_BUS_ID",
        "PCI_BUS_ID_ANY_DOMAIN",
        "PCI_BUS_ID_NO_FUNCTION",
        "PCI_BUS_ID_LOOSE",
        "UUID_BODY",
    ):
        assert re.compile(getattr(f, name)).groups == 0, name


def test_stripped_rows_mark_the_row_a_paste_cut_short() -> None:
    """deviceQuery's rows (NVIDIA cuda-samples deviceQuery.cpp), the paste ending inside the last: only it is cut."""
    from gpuadvisor.importers.rows import stripped_rows

    text = 'Device 0: "NVIDIA A100-SXM4-40GB"\n  CUDA Capability Major/Minor version number:    8.0\n  Total amou'
    rows = stripped_rows(text, 10)
    assert [(r.lineno, r.cut) for r in rows] == [(10, False), (11, False), (12, True)]
    assert rows[1].text == "CUDA Capability Major/Minor version number:    8.0"
    assert not any(r.cut for r in stripped_rows(text + "nt of global memory:\n", 10))
