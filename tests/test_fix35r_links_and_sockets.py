"""Held-out set 35's two misjudgements, on the real pastes (each folder's INDEX.toml gives the source):

- an inactive NVLink is a fault only against what says it should be up (GPUs of the model with more links, error
  counts on the link, a board that wires every link); an HPC centre's two V100 SXM2 joined by two of their six links
  each (https://help.itc.rwth-aachen.de/service/rhr4fjjutttf/article/20919ea3f07f4c9da581532def08c35f) is the board's
  wiring as far as the paste tells: information, never a failure;
- NCCL channels between nodes over TCP sockets (``via NET/Socket/N``) are not GPUDirect RDMA disabled: GPUDirect RDMA
  is a path of NCCL's IB/RoCE transport (NCCL User Guide, NCCL_NET_GDR_LEVEL); they are said (GA504) as information,
  or as a warning where the same scan shows RDMA that NCCL left unused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.facts.beyond import KernelEvent, KernelLog
from gpuadvisor.importers import import_files, import_texts
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"
RWTH = CORPUS / "s35-smi/hpc-docs-nvlink-status-i0-i1-v100-sxm2-two-links-each-rest-inactive_rwth-itc.txt"
H100_PCIE = CORPUS / "fix35r-nvlink/nvlink-s-2x-h100-pcie-three-bridges-12-of-18-links-each-rest-inactive_hpe-japan.txt"
SOCKETS = [
    CORPUS / "s35-nccl-debug/nccl-tests-two-nodes-socket-header-init-complete-no-warn-cut_anoop-agzen.txt",
    *sorted((CORPUS / "fix35r-nccl-socket").glob("*.txt")),
]
IBSTAT_ACTIVE = CORPUS / "rdma/ibstat_2x100g-roce-log-header_muthuraman.txt"  # two RoCE ports, both Active


def _found(findings: list[Finding], code: str) -> list[tuple[str, list[int]]]:
    return [(f.severity, f.gpus) for f in findings if f.code == code and f.severity != "not-checked"]


def test_two_v100_sxm2_joined_by_two_links_each_are_information_not_a_failure() -> None:
    findings = evaluate(import_files([RWTH]))
    assert _found(findings, "GA204") == [("info", [0]), ("info", [1])]
    f = next(f for f in findings if f.code == "GA204")
    assert f.observed == {"active_links": 2, "inactive_links": [1, 3, 4, 5]}
    assert "4 of its 6 links unused" in f.message and "the board's wiring" in f.message


def test_a_peer_of_the_same_model_with_more_links_up_makes_the_fewer_a_fault() -> None:
    # variant of the same paste: GPU 1's link 0 up as well, so GPU 0 (two links) has fewer than its peer (three)
    text = RWTH.read_text(encoding="utf-8")
    gpu1 = text.index("GPU 1:")
    text = text[:gpu1] + text[gpu1:].replace("Link 0: <inactive>", "Link 0: 25.781 GB/s", 1)
    findings = evaluate(import_texts([("nvlink-s.txt", text)]))
    assert _found(findings, "GA204") == [("fail", [0]), ("info", [1])]


def _counted(rig: Rig) -> None:
    rig.gpus[0].nvlinks[1].errors = {"replay": 0, "recovery": 3, "crc_flit": 0, "crc_data": 0}


def _far_end_named(rig: Rig) -> None:
    rig.gpus[0].nvlinks[1].remote_bus_id = "0000:8a:00.0"


def _xid_74(rig: Rig) -> None:
    event = KernelEvent(kind="xid", code=74, gpu_index=0, text="NVLink: fatal error detected on link 1")
    rig.kernel = KernelLog(source="imported", lines_read=1, events=[event])


@pytest.mark.parametrize("evidence", [_counted, _far_end_named, _xid_74], ids=["counters", "far-end", "xid-74"])
def test_what_says_a_link_should_be_up_makes_its_being_down_a_fault(evidence) -> None:
    # variants of the same paste with one sign that GPU 0's link 1 is wired and was in use
    rig = import_files([RWTH])
    evidence(rig)
    assert _found(evaluate(rig), "GA204") == [("fail", [0]), ("info", [1])]


def test_h100_pcie_cards_listing_18_links_with_12_bridged_are_quiet() -> None:
    rig = import_files([H100_PCIE])
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [12, 12]
    assert _found(evaluate(rig), "GA204") == []


@pytest.mark.parametrize("path", SOCKETS, ids=[p.name[:60] for p in SOCKETS])
def test_nccl_over_sockets_between_nodes_is_no_gdr_finding_but_information(path: Path) -> None:
    findings = evaluate(import_files([path]))
    assert [f.code for f in findings if f.code == "GA825"] == []
    (f,) = [f for f in findings if f.code == "GA504"]
    assert f.severity == "info" and "went over TCP sockets (NET/Socket/" in f.message
    assert "GPUDirect RDMA does not apply to sockets" in f.message


def test_sockets_beside_active_rdma_ports_warn_that_rdma_is_unused() -> None:
    findings = evaluate(import_files([IBSTAT_ACTIVE, SOCKETS[1]]))
    (f,) = [f for f in findings if f.code == "GA504"]
    assert f.severity == "warn" and "RDMA is there (mlx5_0:1, mlx5_1:1) and not used" in f.message
    assert "NCCL_IB_DISABLE" in f.fix
