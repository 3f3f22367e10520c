"""Every real sample (../shared/samples, copied to tests/fixtures/import/samples) imports with its exact facts.

The expected matrices, widths and link counts below are typed from the sample files, not produced by the code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.importers import import_files, import_texts
from gpuadvisor.importers.topo import nv_count

SAMPLES = Path(__file__).parent / "fixtures" / "import" / "samples"
H100 = Path(__file__).parent / "fixtures" / "h100-vm"


def strip_header(text: str) -> str:
    """Drop the leading '# source/machine/note' lines the sample collection added (nvidia-smi never prints them)."""
    lines = text.splitlines()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def sample(name: str) -> facts.Rig:
    path = SAMPLES / name
    return import_texts([(path.name, strip_header(path.read_text(encoding="utf-8")))])


def m(*rows: str) -> list[list[str]]:
    return [r.split() for r in rows]


def test_every_sample_file_is_covered_here() -> None:
    assert {p.name for p in SAMPLES.glob("*.txt")} == COVERED


# -- nvidia-smi topo -m ----------------------------------------------------------------------------------


def test_topo_3xa6000_nv4_bridge() -> None:
    rig = sample("topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt")
    assert rig.topology.matrix == m("X NV4 NODE", "NV4 X NODE", "NODE NODE X")
    assert rig.topology.pcie_matrix == []
    assert "NVLink count" in rig.topology.unavailable["pcie_matrix"]
    assert [g.cpu_affinity for g in rig.gpus] == ["0-31,64-95"] * 3
    assert [g.numa_node for g in rig.gpus] == [0, 0, 0]
    assert rig.topology.nics == []
    assert [n.id for n in rig.host.numa_nodes] == [0]
    assert rig.host.numa_nodes[0].cpus == "0-31,64-95"


def test_topo_8x4090_two_sockets_tabs_and_gpu_numa_id_column() -> None:
    rig = sample("topo-m_8x4090-pcie-2socket_lukolszewski.txt")
    expected = m(
        "X PHB NODE NODE NODE NODE SYS SYS",
        "PHB X NODE NODE NODE NODE SYS SYS",
        "NODE NODE X PHB NODE NODE SYS SYS",
        "NODE NODE PHB X NODE NODE SYS SYS",
        "NODE NODE NODE NODE X PHB SYS SYS",
        "NODE NODE NODE NODE PHB X SYS SYS",
        "SYS SYS SYS SYS SYS SYS X PHB",
        "SYS SYS SYS SYS SYS SYS PHB X",
    )
    assert rig.topology.matrix == expected
    assert rig.topology.pcie_matrix == expected  # no NVLink: the matrix is the PCIe level
    assert [g.numa_node for g in rig.gpus] == [0, 0, 0, 0, 0, 0, 1, 1]
    assert [g.cpu_affinity for g in rig.gpus] == ["0-35,72-107"] * 6 + ["36-71,108-143"] * 2
    assert [(n.id, n.cpus) for n in rig.host.numa_nodes] == [(0, "0-35,72-107"), (1, "36-71,108-143")]
    assert rig.topology.nics == [] and rig.topology.nic_matrix == []


def test_topo_8xv100_nv1_nv2_with_nic_legend() -> None:
    rig = sample("topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt")
    assert rig.topology.matrix == m(
        "X NV1 NV1 NV2 NV2 SYS SYS SYS",
        "NV1 X NV2 NV1 SYS NV2 SYS SYS",
        "NV1 NV2 X NV2 SYS SYS NV1 SYS",
        "NV2 NV1 NV2 X SYS SYS SYS NV1",
        "NV2 SYS SYS SYS X NV1 NV1 NV2",
        "SYS NV2 SYS SYS NV1 X NV2 NV1",
        "SYS SYS NV1 SYS NV1 NV2 X NV2",
        "SYS SYS SYS NV1 NV2 NV1 NV2 X",
    )
    # Hybrid cube mesh: each V100 SXM2 spends its 6 NVLinks on four peers (two of them doubled).
    assert [sum(nv_count(c) for c in row) for row in rig.topology.matrix] == [6] * 8
    assert rig.topology.nics == ["mlx5_2"]  # NIC0 named through the NIC Legend
    assert rig.topology.nic_matrix == [["NODE"]] * 4 + [["SYS"]] * 4
    assert [g.numa_node for g in rig.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_topo_asus_space_aligned_four_nics() -> None:
    rig = sample("topo-m_asus-esc8000a-4x6000ada-nic_stelline.txt")
    assert rig.topology.matrix == m("X NODE SYS SYS", "NODE X SYS SYS", "SYS SYS X NODE", "SYS SYS NODE X")
    assert rig.topology.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert rig.topology.nic_matrix == m(
        "NODE NODE SYS SYS", "NODE NODE SYS SYS", "SYS SYS NODE NODE", "SYS SYS NODE NODE"
    )
    assert [g.cpu_affinity for g in rig.gpus] == ["0-31", "0-31", "32-63", "32-63"]
    assert [g.numa_node for g in rig.gpus] == [0, 0, 1, 1]


def test_topo_della_mlx5_columns_without_legend() -> None:
    rig = sample("topo-m_della-2xa100-mlx5_jdh4.txt")
    assert rig.topology.matrix == m("X SYS", "SYS X")
    assert rig.topology.nics == ["mlx5_0", "mlx5_1"]
    assert rig.topology.nic_matrix == m("NODE SYS", "SYS NODE")
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus] == [("0-63", 0), ("64-127", 1)]


def test_topo_dgx1_2020_format_without_numa_column() -> None:
    rig = sample("topo-m_dgx1-v100-16gb-mlx5_oneflow-dlperf.txt")
    assert rig.topology.matrix == m(
        "X NV1 NV1 NV2 NV2 SYS SYS SYS",
        "NV1 X NV2 NV1 SYS NV2 SYS SYS",
        "NV1 NV2 X NV2 SYS SYS NV1 SYS",
        "NV2 NV1 NV2 X SYS SYS SYS NV1",
        "NV2 SYS SYS SYS X NV1 NV1 NV2",
        "SYS NV2 SYS SYS NV1 X NV2 NV1",
        "SYS SYS NV1 SYS NV1 NV2 X NV2",
        "SYS SYS SYS NV1 NV2 NV1 NV2 X",
    )
    assert rig.topology.nics == ["mlx5_0"]
    assert rig.topology.nic_matrix == [["NODE"], ["NODE"], ["PIX"], ["PIX"], ["SYS"], ["SYS"], ["SYS"], ["SYS"]]
    assert [g.cpu_affinity for g in rig.gpus] == ["0-11,24-35"] * 4 + ["12-23,36-47"] * 4
    assert all(g.numa_node is None and "no such column" in g.unavailable["numa_node"] for g in rig.gpus)


def test_topo_puget_phb_pair() -> None:
    rig = sample("topo-m_puget-wrx90-2x6000ada-nic_stelline.txt")
    assert rig.topology.matrix == m("X PHB", "PHB X")
    assert rig.topology.nics == ["mlx5_0", "mlx5_1"]
    assert rig.topology.nic_matrix == m("NODE NODE", "NODE NODE")


def test_topo_power9_nv3_numa_node_8() -> None:
    rig = sample("topo-m_traverse-power9-4xv100-nv3_jdh4.txt")
    assert rig.topology.matrix == m("X NV3 SYS SYS", "NV3 X SYS SYS", "SYS SYS X NV3", "SYS SYS NV3 X")
    assert [g.numa_node for g in rig.gpus] == [0, 0, 8, 8]
    assert rig.topology.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert rig.topology.nic_matrix == m(
        "NODE NODE SYS SYS", "NODE NODE SYS SYS", "SYS SYS NODE NODE", "SYS SYS NODE NODE"
    )


# -- nvidia-smi topo -p2p r ------------------------------------------------------------------------------


def test_p2p_read_8gpu_all_ok() -> None:
    rig = sample("p2p-r_8gpu-vm-all-ok_cloud-hypervisor.txt")
    assert len(rig.gpus) == 8
    assert rig.topology.p2p_read == [["X" if i == j else "OK" for j in range(8)] for i in range(8)]
    assert rig.topology.p2p_write is None
    assert not any("without its mode" in p for p in rig.problems)  # "-p2p r" is on the command line above it


# -- nvidia-smi nvlink -s ----------------------------------------------------------------------------------


def test_nvlink_3xa6000_one_gpu_without_bridge() -> None:
    rig = sample("nvlink-s_3xa6000-one-unbridged_siboehm.txt")
    assert [g.name for g in rig.gpus] == ["NVIDIA RTX A6000"] * 3
    assert [g.uuid for g in rig.gpus] == [
        "GPU-5baec991-de63-c196-1766-04c38407e133",
        "GPU-39fc2446-cb50-2067-2867-d95efd470a2c",
        "GPU-02c05ee3-bdb5-aac7-f9e8-a4c8f3f725b3",
    ]
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [4, 4, 0]
    # 14.062 GB/s per link is GA102's NVLink 3 (4 x 28.125 Gb/s).
    assert {n.version for g in rig.gpus[:2] for n in g.nvlinks} == {3}
    assert rig.gpus[2].nvlinks == []
    assert (
        rig.gpus[2].unavailable["nvlinks"] == facts.NVLINKS_ALL_INACTIVE == "no active NVLink (all links are inactive)"
    )


def test_nvlink_8xv100_six_links_each() -> None:
    rig = sample("nvlink-s_8xv100-sxm2_lukolszewski.txt")
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [6] * 8
    assert [[n.link for n in g.nvlinks] for g in rig.gpus] == [list(range(6))] * 8
    assert {n.version for g in rig.gpus for n in g.nvlinks} == {2}  # 25.781 GB/s: NVLink 2
    assert rig.gpus[7].uuid == "GPU-b0d45f0b-6922-8af3-6b29-8826de10b235"


def test_nvlink_and_topo_of_one_machine_agree() -> None:
    texts = [
        (n, strip_header((SAMPLES / n).read_text()))
        for n in ("topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt", "nvlink-s_8xv100-sxm2_lukolszewski.txt")
    ]
    rig = import_texts(texts)
    assert len(rig.gpus) == 8
    for pos, g in enumerate(rig.gpus):
        assert sum(nv_count(c) for c in rig.topology.matrix[pos]) == len(g.active_nvlinks()) == 6
        assert g.name == "Tesla V100-SXM2-32GB"
    assert rig.problems == []


# -- nvidia-smi -q -----------------------------------------------------------------------------------------


def test_smi_q_a100_host_max_gen_and_pending_remap() -> None:
    rig = sample("smi-q_a100sxmx4_thamada.txt")
    assert [g.bus_id for g in rig.gpus] == ["0000:68:00.0", "0000:9e:00.0", "0000:c2:00.0", "0000:d4:00.0"]
    assert {g.name for g in rig.gpus} == {"NVIDIA A100-SXM4-80GB"}
    for g in rig.gpus:
        assert (g.pcie.current_gen, g.pcie.max_gen, g.pcie.gpu_max_gen) == (4, 4, 4)  # Host Max is 5
        assert (g.pcie.current_width, g.pcie.max_width) == (16, 16)
        assert g.memory_total_bytes == 81920 * 2**20
        assert g.power_limit_w == 500.0 and g.power_default_limit_w == 500.0
        assert g.ecc_enabled is True and g.mig_mode is False
        assert g.performance_state == 0  # "Performance State : P0"
    assert [g.remapped_rows_correctable for g in rig.gpus] == [0, 1, 1, 0]
    assert [g.remapped_rows_pending for g in rig.gpus] == [False, True, False, False]
    assert rig.software.driver_version == "555.42.02" and rig.software.cuda_driver_version == "12.5"


def test_smi_q_a40_idle_gen1_and_sw_power_cap() -> None:
    rig = sample("smi-q_a40x10_thamada.txt")
    assert len(rig.gpus) == 10
    g6 = rig.gpus[6]  # "DRAM Correctable : 10289" under Aggregate, every SRAM count 0
    assert (g6.ecc_errors_corrected_aggregate, g6.ecc_errors_corrected_sram_aggregate) == (10289, 0)
    assert (g6.ecc_errors_corrected_volatile, g6.ecc_errors_corrected_sram_volatile) == (0, 0)
    assert {(g.pcie.current_gen, g.pcie.max_gen, g.pcie.current_width, g.pcie.max_width) for g in rig.gpus} == {
        (1, 4, 16, 16)
    }
    capped = [g.index for g in rig.gpus if "sw_power_cap" in (g.clocks_event_reasons or [])]
    assert capped == [0, 3]
    assert rig.gpus[0].clocks_event_reasons == ["sw_power_cap"]
    assert rig.gpus[0].memory_total_bytes == 46068 * 2**20
    assert rig.gpus[0].power_draw_w == 29.70


def test_smi_q_h100_sxm_eight_gpus() -> None:
    rig = sample("smi-q_h100sxmx8_thamada.txt")
    assert len(rig.gpus) == 8
    assert rig.gpus[1].bus_id == "0000:2a:00.0"
    for g in rig.gpus:
        assert (g.pcie.current_gen, g.pcie.max_gen, g.pcie.current_width, g.pcie.max_width) == (5, 5, 16, 16)
        assert g.architecture == "Hopper" and g.power_limit_w == 700.0 and g.sm_clock_max_mhz == 1980
    assert rig.gpus[0].pcie.replay_counter == 7
    assert rig.gpus[0].uuid == "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1"
    assert rig.software.driver_version == "565.57.01"


def test_smi_q_l4_at_x8() -> None:
    rig = sample("smi-q_l4_thamada.txt")
    (g,) = rig.gpus
    assert (g.pcie.current_width, g.pcie.max_width, g.pcie.current_gen, g.pcie.max_gen) == (8, 16, 1, 4)
    assert g.power_limit_w == 72.0 and g.memory_total_bytes == 23034 * 2**20


def test_smi_q_rtx3090_no_ecc() -> None:
    rig = sample("smi-q_rtx3090_thamada.txt")
    assert [g.bus_id for g in rig.gpus] == ["0000:41:00.0", "0000:81:00.0"]
    for g in rig.gpus:
        assert g.ecc_enabled is None and g.unavailable["ecc_enabled"] == "nvidia-smi printed 'N/A'"
        assert g.ecc_errors_uncorrected_volatile is None
        assert (g.pcie.current_width, g.pcie.max_width) == (16, 16)


def test_smi_q_rtx4060ti_one_gpu_at_x4_of_x8() -> None:
    rig = sample("smi-q_rtx4060ti_thamada.txt")
    assert [(g.pcie.current_width, g.pcie.max_width) for g in rig.gpus] == [(4, 8), (8, 8)]
    assert rig.gpus[0].persistence_mode is False


# -- lspci -vvv ------------------------------------------------------------------------------------------


def test_lspci_rtx6000ada_trained_at_2_5_gts() -> None:
    rig = sample("lspci-vvv_rtx6000ada-downgraded-2.5gts_stelline-asus.txt")
    (g,) = rig.gpus
    assert g.bus_id == "0000:01:00.0" and g.name == "NVIDIA RTX 6000 Ada Generation"
    assert (g.pcie.current_gen, g.pcie.max_gen, g.pcie.current_width, g.pcie.max_width) == (1, 4, 16, 16)
    (hop,) = g.pcie.path
    assert (hop.bdf, hop.port_type, hop.current_speed_gts, hop.max_speed_gts) == ("0000:01:00.0", "endpoint", 2.5, 16.0)


def test_lspci_non_gpu_device_imports_with_a_problem() -> None:
    rig = sample("lspci-vvv_asus-esc8000a-nonGPU-width-x1-downgraded_stelline.txt")
    assert rig.gpus == []
    assert (
        len(rig.problems) == 1
        and "no NVIDIA GPU" in rig.problems[0]
        and "0000:71:00.0 RAID bus controller" in rig.problems[0]
    )


# -- nccl-tests ------------------------------------------------------------------------------------------


def test_nccl_gcp_two_nodes_sixteen_ranks() -> None:
    rig = sample("nccl-allreduce_gcp-a3mega-2x8xh100_lessizzmore.txt")
    (ms,) = rig.measurements
    assert (ms.kind, ms.backend, ms.provenance, ms.world_size) == ("all_reduce", "nccl", "imported", 16)
    assert len(ms.rows) == 31 and ms.rows[0].size_bytes == 8 and ms.rows[-1].size_bytes == 8589934592
    last = ms.rows[-1]
    assert (last.count, last.time_us, last.algbw_gbps, last.busbw_gbps, last.errors) == (
        2147483648,
        47535.0,
        180.71,
        338.82,
        0,
    )
    assert ms.value_gbps == 338.82 and ms.status == "ok"
    assert (ms.warmup_iters, ms.iters) == (5, 20)
    assert [g.bus_id for g in rig.gpus] == [
        "0000:04:00.0",
        "0000:05:00.0",
        "0000:0b:00.0",
        "0000:0c:00.0",
        "0000:84:00.0",
        "0000:85:00.0",
        "0000:8b:00.0",
        "0000:8c:00.0",
    ]
    assert ms.gpus == list(range(8))
    assert rig.host.hostname == "ztan-mig-235z"
    assert any("2 hosts" in n for n in ms.notes)
    assert ms.expected_gbps is None and "several hosts" in ms.unavailable["expected_gbps"]


def test_nccl_tinybox_single_size() -> None:
    rig = sample("nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt")
    (ms,) = rig.measurements
    assert ms.world_size == 6 and ms.gpus == [0, 1, 2, 3, 4, 5]
    (row,) = ms.rows
    assert (row.size_bytes, row.count, row.dtype, row.time_us, row.algbw_gbps, row.busbw_gbps, row.correct) == (
        33554432,
        8388608,
        "float32",
        2275.1,
        14.75,
        24.58,
        True,
    )
    assert ms.value_gbps == 24.58 and ms.status == "ok"
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 4090"] * 6
    assert all(g.bus_id is None and "0x" in g.unavailable["bus_id"] for g in rig.gpus)


COVERED = {
    "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt",
    "topo-m_8x4090-pcie-2socket_lukolszewski.txt",
    "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt",
    "topo-m_asus-esc8000a-4x6000ada-nic_stelline.txt",
    "topo-m_della-2xa100-mlx5_jdh4.txt",
    "topo-m_dgx1-v100-16gb-mlx5_oneflow-dlperf.txt",
    "topo-m_puget-wrx90-2x6000ada-nic_stelline.txt",
    "topo-m_traverse-power9-4xv100-nv3_jdh4.txt",
    "p2p-r_8gpu-vm-all-ok_cloud-hypervisor.txt",
    "nvlink-s_3xa6000-one-unbridged_siboehm.txt",
    "nvlink-s_8xv100-sxm2_lukolszewski.txt",
    "smi-q_a100sxmx4_thamada.txt",
    "smi-q_a40x10_thamada.txt",
    "smi-q_h100sxmx8_thamada.txt",
    "smi-q_l4_thamada.txt",
    "smi-q_rtx3090_thamada.txt",
    "smi-q_rtx4060ti_thamada.txt",
    "lspci-vvv_rtx6000ada-downgraded-2.5gts_stelline-asus.txt",
    "lspci-vvv_asus-esc8000a-nonGPU-width-x1-downgraded_stelline.txt",
    "nccl-allreduce_gcp-a3mega-2x8xh100_lessizzmore.txt",
    "nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt",
    # pastes as people make them (tests/test_import_pastes.py asserts their facts and findings)
    "nvlink-s_gb200-elided.txt",
    "lspci-fragment_rtx-a4000-2.5gts.txt",
    "smi-q_a100-no-banner-elided.txt",
    "topo-m_8xb200-merged-header.txt",
    "smi-q-x_a100-mig-enabled.txt",
    "smi-q-x_rtx4090-gen3-host.txt",
    "nccl-allreduce_2x8xh200-slurm-log.txt",
    "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt",
}
# copied for the rule and advice tests (tests/test_rules_evidence.py, tests/test_advise_partial.py)
COVERED |= {"nvlink-s_gb200-elided.txt", "smi-q-x_a100-mig-enabled.txt", "nccl-allreduce_2x8xh200-slurm-log.txt"}


@pytest.mark.parametrize("name", sorted(COVERED))
def test_sample_imports_with_and_without_the_provenance_lines(name: str) -> None:
    """Stripped as the brief says, and raw (the '# source' lines are ignored like any prompt)."""
    a = sample(name)
    b = import_files([SAMPLES / name])
    assert a.source.kind == b.source.kind == "imported"

    def same(x: object) -> str:  # reasons name lines ("elided in the paste (line 25)"), 2 apart in the two copies
        return re.sub(r"line \d+", "line N", json.dumps(facts.to_dict(x), sort_keys=True))

    assert same(a.topology) == same(b.topology)
    assert same(a.gpus) == same(b.gpus)
    assert same(a.measurements) == same(b.measurements)


# -- the real H100 of this project ------------------------------------------------------------------------


def test_h100_vm_concatenated_outputs() -> None:
    rig = import_files([H100 / "smi.txt"])
    (g,) = rig.gpus
    assert g.name == "NVIDIA H100 80GB HBM3" and g.bus_id == "0000:00:06.0"
    assert g.uuid == "GPU-7c7f6914-36e4-2e6c-6e87-ab3b15f161d7"
    assert (g.pcie.current_gen, g.pcie.max_gen, g.pcie.current_width, g.pcie.max_width) == (5, 5, 16, 16)
    assert g.memory_total_bytes == 81559 * 2**20 and g.power_limit_w == 700.0
    assert g.power_draw_w == 129.13  # "Average Power Draw" of the R580 -q text
    assert g.persistence_mode is True and g.ecc_enabled is True and g.mig_mode is False
    assert g.retired_pages_single_bit is None and g.remapped_rows_pending is False
    assert g.clocks_event_reasons == ["gpu_idle"]
    assert (g.numa_node, g.cpu_affinity) == (0, "0-15")  # from the ANSI-underlined topo -m
    assert rig.topology.matrix == [["X"]] and rig.topology.p2p_read == [["X"]]
    assert rig.software.driver_version == "580.159.04" and rig.software.cuda_driver_version == "13.0"
    kinds = rig.source.detail or ""
    for k in ("nvidia-smi;", "nvidia-smi -q;", "nvidia-smi topo -m;", "nvidia-smi topo -p2p"):
        assert k in kinds
    assert rig.origins["gpus[0].numa_node"].endswith("smi.txt:279 (nvidia-smi topo -m)")
    assert rig.origins["gpus[0].pcie.current_width"].endswith("smi.txt:102 (nvidia-smi -q)")


def test_h100_vm_xml() -> None:
    rig = import_files([H100 / "smi-q.xml"])
    (g,) = rig.gpus
    assert (g.name, g.bus_id, g.serial) == ("NVIDIA H100 80GB HBM3", "0000:00:06.0", "1753124022338")
    assert (g.pcie.current_gen, g.pcie.max_gen, g.pcie.gpu_max_gen, g.pcie.current_width, g.pcie.max_width) == (
        5,
        5,
        5,
        16,
        16,
    )
    assert g.power_draw_w == 126.93 and g.temperature_c == 42.0 and g.sm_clock_max_mhz == 1980
    assert g.ecc_errors_corrected_volatile == 0 and g.remapped_rows_correctable == 0
    assert g.clocks_event_reasons == ["gpu_idle"]
    assert rig.origins["gpus[0].pcie.current_width"].endswith("smi-q.xml:93 (nvidia-smi -q -x)")
