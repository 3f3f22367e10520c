"""Advice from partial facts: what the GPU name tells comes from the catalog, said as such; a measured busbw
beats an assumption; MIG instances are sized as what they are; a scan that names no GPU is refused with what to add."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.advisor import Workload, advise, rigview
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Measurement, SweepRow
from gpuadvisor.importers import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
SAMPLES = FIX / "samples"


def test_topology_only_scan_is_refused_with_what_to_add() -> None:
    rig = import_files([SAMPLES / "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt"])
    assert len(rig.gpus) == 3
    with pytest.raises(InputError) as e:
        advise(rig, Workload.from_options(model="gpt2"))
    msg = str(e.value)
    assert msg.startswith("the scan has 3 GPUs but neither their model nor their memory")
    assert "shows none" not in msg and "add nvidia-smi or nvidia-smi -q output of the same machine" in msg


def _a100_nccl_only(busbw: float) -> facts.Rig:
    """What an nccl-tests log of 8x A100-SXM4-80GB gives: names from the rank lines, a measured sweep, no topology,
    no memory. The sweep's plateau is ``busbw`` from 1 GiB to 8 GiB (as the 8x A100 run of nccl-tests issue 175,
    232.5 GB/s)."""
    rig = facts.Rig()
    rig.gpus = [facts.Gpu(index=i, name="NVIDIA A100-SXM4-80GB") for i in range(8)]
    for g in rig.gpus:
        g.unavailable["memory_total_bytes"] = facts.NOT_IN_SOURCE
    rig.topology.unavailable["matrix"] = facts.NOT_IN_SOURCE
    rows = [SweepRow(size_bytes=s << 20, busbw_gbps=b) for s, b in ((256, 190.0), (512, 215.0))]
    rows += [SweepRow(size_bytes=s << 30, busbw_gbps=busbw) for s in (1, 2, 4, 8)]
    rig.measurements = [
        Measurement(
            kind="all_reduce",
            backend="nccl",
            provenance="imported",
            world_size=8,
            gpus=list(range(8)),
            rows=rows,
            value_gbps=busbw,
        )
    ]
    return rig


def test_nccl_only_a100_node_is_advised_with_nvlink_and_the_measured_busbw() -> None:
    view = rigview.from_rig(_a100_nccl_only(235.0))
    assert view.nvlink_domain() == 8  # not "no NVLink"
    assert view.memory_bytes == 81920 * 2**20
    assert view.memory_source.startswith("from the catalog: NVIDIA A100 SXM4 80GB")
    bw = view.intra_busbw(8, nvlink=True)
    assert (bw.gbps, bw.measured) == (235.0, True)
    assert bw.source == "measured all_reduce busbw 235.0 GB/s (nccl; its plateau, 1 GiB to 8 GiB)"
    assert any(
        n.startswith(
            "NVLink established by measurement: all-reduce busbw 235 GB/s over 8 ranks is more than PCIe Gen4 x16"
        )
        for n in view.notes
    )
    assert any(
        n.startswith(
            "assumed: GPU memory is not in the scan; 81920 MiB per GPU from the catalog's NVIDIA A100 SXM4 80GB"
        )
        for n in view.notes
    )
    a = advise(_a100_nccl_only(235.0), Workload.from_options(model="llama-3-70b")).to_dict()
    assert a["rig"]["nvlink_domain"] == 8 and a["rig"]["busbw_measured"] is True
    names = [c["name"] for c in a["candidates"]]
    assert "TP=8 + act. ckpt" in names and not any(
        "PP=8" in n for n in names
    )  # tensor parallel over NVLink, no pipeline "over PCIe"


def test_sxm_without_topology_or_measurement_takes_nvlink_from_the_catalog() -> None:
    rig = _a100_nccl_only(235.0)
    rig.measurements = []
    view = rigview.from_rig(rig)
    assert view.nvlink_domain() == 8
    (n,) = [n for n in view.notes if "catalog: the" in n]
    assert n.startswith(
        "assumed from the catalog: the NVIDIA A100 SXM4 80GB is an SXM part wired to NVLink (12 links; NVIDIA A100 "
        "Tensor Core"
    )


def test_bridged_pcie_cards_without_topology_get_no_nvlink_assumed() -> None:
    rig = facts.Rig(
        gpus=[facts.Gpu(index=i, name="NVIDIA RTX A6000", memory_total_bytes=49140 * 2**20) for i in range(2)]
    )
    view = rigview.from_rig(rig)
    assert view.nvlink_domain() == 1
    assert "the scan has no GPU topology matrix: no NVLink assumed, so no tensor parallelism is proposed" in view.notes


def test_mig_gpu_is_sized_per_instance() -> None:
    rig = import_files([SAMPLES / "smi-q-x_a100-mig-enabled.txt"])
    (g,) = rig.gpus
    assert (g.mig_mode, g.memory_total_bytes, g.mig_instances_memory_bytes) == (
        True,
        40960 * 2**20,
        [19968 * 2**20] * 2,
    )
    view = rigview.from_rig(rig)
    assert (view.memory_bytes, view.gpus_per_node, view.nvlink_domain(), view.p2p_ok) == (19968 * 2**20, 2, 1, False)
    assert view.notes[0].startswith(
        "MIG is enabled on GPU 0: sized per MIG instance (2 instances, the smallest 19.5 GiB"
    )
    a = advise(rig, Workload.from_options(model="llama-3-70b")).to_dict()
    assert a["fits"] is False and a["rig"]["memory_per_gpu_bytes"] == 19968 * 2**20


def test_mig_gpu_without_instance_memory_is_not_sized_as_a_whole_gpu() -> None:
    rig = import_files([SAMPLES / "smi-q-x_a100-mig-enabled.txt"])
    rig.gpus[0].mig_instances_memory_bytes = None
    rig.gpus[0].unavailable["mig_instances_memory_bytes"] = facts.NOT_IN_SOURCE
    with pytest.raises(InputError) as e:
        advise(rig, Workload.from_options(model="gpt2"))
    assert str(e.value).startswith(
        "GPU 0 has MIG enabled: a process gets one MIG instance, not the whole GPU, and this scan "
        f"does not give the instances' memory ({facts.NOT_IN_SOURCE})"
    )
