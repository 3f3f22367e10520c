"""The variants the samples do not cover: older drivers, switches and a downgraded card, inactive links,
ANSI escapes, modes of -p2p, nccl-tests versions and damage, encodings, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.errors import InputError
from gpuadvisor.importers import (
    ImportParseError,
    detect,
    import_files,
    import_texts,
    parse_lspci,
    parse_nccl_tests,
    parse_nvlink_status,
    parse_smi_q,
    parse_smi_summary,
    parse_smi_xml,
    parse_topo_matrix,
    parse_topo_p2p,
)
from gpuadvisor.importers.smi_query import CLOCKS_REASON_NAMES
from gpuadvisor.physics import links

HERE = Path(__file__).parent / "fixtures" / "import"
OWN = HERE / "own"
SAMPLES = HERE / "samples"


def own(name: str) -> str:
    return (OWN / name).read_text(encoding="utf-8")


def strip_header(text: str) -> str:
    lines = text.splitlines()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines) + "\n"


# -- nvidia-smi -q of an R470 driver ----------------------------------------------------------------------


def test_old_driver_q_text_throttle_reasons_ecc_retired_pages_power() -> None:
    rig = parse_smi_q(own("smi-q_2xv100-r470-throttle-lost-gpu.txt"), "q.txt")
    a, b, lost = rig.gpus
    assert (a.bus_id, b.bus_id, lost.bus_id) == ("0000:06:00.0", "0000:07:00.0", "0000:3b:00.0")
    assert (a.pcie.current_gen, a.pcie.max_gen, a.pcie.current_width, a.pcie.max_width) == (3, 3, 16, 16)
    assert a.pcie.gpu_max_gen is None and a.pcie.unavailable["gpu_max_gen"].startswith(
        "not in this nvidia-smi -q output"
    )
    assert (b.pcie.current_width, b.pcie.max_width, b.pcie.replay_counter) == (8, 16, 311)
    # "Ecc Mode" (old capitalisation) and the Single/Double Bit "Total" lines
    assert a.ecc_enabled is True
    assert (a.ecc_errors_corrected_volatile, a.ecc_errors_uncorrected_volatile) == (0, 0)
    assert (a.ecc_errors_corrected_aggregate, a.ecc_errors_uncorrected_aggregate) == (12, 1)
    assert (b.ecc_errors_corrected_volatile, b.ecc_errors_corrected_aggregate) == (3, 3)
    assert a.ecc_errors_corrected_sram_aggregate is None  # R470 prints per-unit counts, no SRAM/DRAM split
    assert (
        a.unavailable["ecc_errors_corrected_sram_aggregate"] == "this nvidia-smi does not split SRAM from DRAM errors"
    )
    assert (a.retired_pages_single_bit, a.retired_pages_double_bit, a.retired_pages_pending) == (2, 1, True)
    assert (b.retired_pages_single_bit, b.retired_pages_pending) == (0, False)
    assert a.remapped_rows_pending is None and a.unavailable["remapped_rows_pending"].startswith(
        "not in this nvidia-smi -q output"
    )
    # "Clocks Throttle Reasons", nested HW Power Brake under HW Slowdown
    assert a.clocks_event_reasons == ["gpu_idle"]
    assert b.clocks_event_reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    # old "Power Readings": Power Limit / Default Power Limit / Power Draw
    assert (a.power_limit_w, a.power_default_limit_w, a.power_draw_w) == (300.0, 300.0, 42.47)
    assert (b.power_limit_w, b.power_default_limit_w, b.power_draw_w) == (250.0, 300.0, 248.10)
    assert (a.persistence_mode, b.persistence_mode) == (True, False)
    assert a.memory_total_bytes == 16160 * 2**20 and a.sm_clock_max_mhz == 1530 and b.temperature_c == 71.0
    assert a.mig_mode is None and a.architecture is None
    # the GPU nvidia-smi could not reach: its bus id, the reason on every field, and a problem naming the line
    assert lost.name is None and facts.GPU_LOST in lost.unavailable["name"]
    assert "Unknown Error" in lost.unavailable["power_limit_w"]
    assert any("q.txt: line 364:" in p and "Unable to determine the device handle" in p for p in rig.problems)
    assert rig.software.driver_version == "470.82.01" and rig.software.cuda_driver_version == "11.4"


def test_old_driver_xml() -> None:
    rig = parse_smi_xml(own("smi-q-x_v100-r470.xml"), "x.xml")
    (g,) = rig.gpus
    assert (g.name, g.bus_id, g.uuid) == (
        "Tesla V100-SXM2-16GB",
        "0000:07:00.0",
        "GPU-8e2d4b6a-1c3f-5e7a-9b0d-2f4a6c8e0a13",
    )
    assert (g.pcie.current_gen, g.pcie.max_gen, g.pcie.gpu_max_gen) == (3, 3, None)
    assert (g.pcie.current_width, g.pcie.max_width, g.pcie.replay_counter) == (8, 16, 311)
    assert g.clocks_event_reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert (g.power_limit_w, g.power_default_limit_w, g.power_draw_w) == (250.0, 300.0, 248.10)
    assert (g.ecc_errors_corrected_volatile, g.ecc_errors_uncorrected_volatile) == (3, 0)
    assert (g.retired_pages_single_bit, g.retired_pages_double_bit, g.retired_pages_pending) == (2, 0, True)
    assert g.remapped_rows_correctable is None and g.persistence_mode is False
    assert rig.origins["gpus[0].pcie.current_width"] == "x.xml:67"


def test_clock_reason_names_match_the_probe() -> None:
    from gpuadvisor.probes import nvml

    assert set(CLOCKS_REASON_NAMES.values()) == set(nvml.CLOCKS_EVENT_REASONS.values())


def test_q_text_cut_short_keeps_the_gpus_read() -> None:
    text = (SAMPLES / "smi-q_h100sxmx8_thamada.txt").read_text()
    full = strip_header(text)
    cut = full[: full.index("GPU 00000000:3A:00.0") - 300]  # inside the second GPU block
    rig = parse_smi_q(cut, "cut.txt")
    assert len(rig.gpus) == 2
    assert rig.gpus[0].pcie.current_width == 16 and rig.gpus[0].power_limit_w == 700.0
    assert any("8 attached GPUs but the output holds 2" in p for p in rig.problems)


def test_xml_cut_short_keeps_what_came_before() -> None:
    text = (Path(__file__).parent / "fixtures" / "h100-vm" / "smi-q.xml").read_text()
    rig = parse_smi_xml(text[: text.index("<ecc_mode>")], "cut.xml")
    (g,) = rig.gpus
    assert g.pcie.current_width == 16 and g.memory_total_bytes == 81559 * 2**20
    assert g.ecc_enabled is None
    assert any("XML ends early" in p for p in rig.problems)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("<foo><bar/></foo>", "not <nvidia_smi_log>"),
        ('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "aaaa">]>\n<nvidia_smi_log>&a;</nvidia_smi_log>', "entity"),
        ("<nvidia_smi_log", "not readable as XML"),
    ],
)
def test_xml_errors(text: str, why: str) -> None:
    with pytest.raises(ImportParseError, match=why) as e:
        parse_smi_xml(text, "bad.xml")
    assert str(e.value).startswith("bad.xml: line ") and "\n" not in str(e.value)


def test_plain_nvidia_smi_table_old_layout() -> None:
    rig = import_files([OWN / "smi_2xv100-r470-table.txt"])
    a, b, lost = rig.gpus
    # the GPU nvidia-smi names only in the "Unable to determine the device handle" line above the table
    assert (lost.index, lost.bus_id, lost.name) == (2, "0000:3b:00.0", None)
    assert (
        lost.unavailable["name"]
        == f"{facts.GPU_LOST} (nvidia-smi: Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error)"
    )
    assert rig.problems == [
        f"{OWN / 'smi_2xv100-r470-table.txt'}: line 1: GPU 0000:3b:00.0: Unable to determine the device handle for GPU "
        "0000:3B:00.0: Unknown Error"
    ]
    assert rig.origins["gpus[2].bus_id"].endswith("smi_2xv100-r470-table.txt:1 (nvidia-smi)")
    assert (a.performance_state, b.performance_state) == (0, 0)  # the Perf column: P0
    assert (a.bus_id, b.bus_id) == ("0000:06:00.0", "0000:07:00.0")
    assert a.name is None and "cut the name short" in a.unavailable["name"]  # "Tesla V100-SXM2..."
    assert (a.persistence_mode, b.persistence_mode) == (True, False)
    assert (a.power_draw_w, a.power_limit_w, b.power_draw_w, b.power_limit_w) == (42.0, 300.0, 248.0, 250.0)
    assert (a.temperature_c, b.temperature_c) == (34.0, 71.0)
    assert a.memory_total_bytes == 16160 * 2**20 and a.memory_used_bytes == 0
    assert a.ecc_errors_uncorrected_volatile == 0
    assert rig.software.driver_version == "470.82.01" and rig.software.cuda_driver_version == "11.4"


def test_plain_nvidia_smi_lost_gpu_takes_the_first_index_the_table_skips() -> None:
    text = own("smi_2xv100-r470-table.txt").replace("|   1  Tesla V100-SXM2...  Off", "|   5  Tesla V100-SXM2...  Off")
    rig = parse_smi_summary(text.split("\n", 1)[1], "t.txt", 2, context=text.split("\n")[:1])
    assert [(g.index, g.bus_id) for g in rig.gpus] == [(0, "0000:06:00.0"), (1, "0000:3b:00.0"), (5, "0000:07:00.0")]
    assert rig.origins["gpus[1]"] == "t.txt:1" and rig.origins["gpus[2]"].startswith("t.txt:")


# -- lspci -vv: a switch, a card at x8, a GPU that stopped answering --------------------------------------


def test_lspci_path_through_a_switch_and_a_downgraded_card() -> None:
    rig = parse_lspci(own("lspci-vv_dgx1-plx-switch-x8.txt"), "lspci.txt")
    a, b, dead = rig.gpus
    assert [(h.bdf, h.port_type) for h in a.pcie.path] == [
        ("0000:06:00.0", "endpoint"),
        ("0000:05:08.0", "downstream-port"),
        ("0000:04:00.0", "upstream-port"),
        ("0000:00:02.0", "root-port"),
    ]
    assert [h.bdf for h in b.pcie.path] == ["0000:07:00.0", "0000:05:10.0", "0000:04:00.0", "0000:00:02.0"]
    assert [(h.current_width, h.max_width) for h in b.pcie.path] == [(8, 16), (8, 16), (16, 16), (16, 16)]
    assert [(h.current_gen, h.max_gen) for h in b.pcie.path] == [(3, 3)] * 4
    assert (b.pcie.current_width, b.pcie.max_width, b.pcie.current_gen, b.pcie.max_gen) == (8, 16, 3, 3)
    assert links.hop_is_downgraded(b.pcie.path[0]) == (True, False)
    assert links.hop_is_downgraded(a.pcie.path[0]) == (False, False)
    assert b.name == "NVIDIA Tesla V100 SXM2 16GB"
    assert dead.bus_id == "0000:3b:00.0" and dead.name is None and dead.pcie.path[0].current_width is None
    assert "does not answer" in dead.pcie.path[0].unavailable["current_width"]
    assert any("lspci.txt: line 114: GPU 0000:3b:00.0" in p for p in rig.problems)


def test_q_table_and_lspci_of_one_machine_merge_by_bus_id() -> None:
    rig = import_files(
        [
            OWN / "smi-q_2xv100-r470-throttle-lost-gpu.txt",
            OWN / "smi_2xv100-r470-table.txt",
            OWN / "lspci-vv_dgx1-plx-switch-x8.txt",
        ]
    )
    a, b, lost = rig.gpus
    assert (a.name, len(a.pcie.path), len(b.pcie.path), len(lost.pcie.path)) == ("Tesla V100-SXM2-16GB", 4, 4, 1)
    lim = links.path_limit(b)
    assert lim is not None and (lim.gen, lim.width) == (3, 8)
    assert links.path_limit(a, at_max=True).width == 16  # type: ignore[union-attr]
    assert rig.origins["gpus[1].pcie.path"].endswith("lspci-vv_dgx1-plx-switch-x8.txt:92 (lspci -vv)")
    assert rig.origins["gpus[1].pcie.current_width"].endswith(
        "smi-q_2xv100-r470-throttle-lost-gpu.txt:235 (nvidia-smi -q)"
    )
    assert rig.origins["gpus[1].persistence_mode"].endswith(
        "smi-q_2xv100-r470-throttle-lost-gpu.txt:191 (nvidia-smi -q)"
    )
    assert lost.name is None  # neither nvidia-smi nor lspci could name it
    assert rig.source.files == [
        str(OWN / n)
        for n in (
            "smi-q_2xv100-r470-throttle-lost-gpu.txt",
            "smi_2xv100-r470-table.txt",
            "lspci-vv_dgx1-plx-switch-x8.txt",
        )
    ]


def test_lspci_of_another_machine_is_refused() -> None:
    with pytest.raises(ImportParseError, match="different machines"):
        import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt", OWN / "lspci-vv_dgx1-plx-switch-x8.txt"])


def test_lspci_matched_to_matrix_gpus_by_pci_order() -> None:
    topo = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tPIX\t0-7\nGPU1\tPIX\t X \t0-7\n"
    lspci = own("lspci-vv_dgx1-plx-switch-x8.txt")
    lspci = lspci[: lspci.index("3b:00.0")]  # the two V100s behind the switch
    rig = import_texts([("topo.txt", topo), ("lspci.txt", lspci)])
    assert [g.bus_id for g in rig.gpus] == ["0000:06:00.0", "0000:07:00.0"]
    assert rig.gpus[1].pcie.current_width == 8
    assert any("by PCI bus order" in p for p in rig.problems)


def test_lspci_without_root_says_so() -> None:
    text = (
        "01:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1)\n\tCapabilities: "
        "<access denied>\n"
    )
    (g,) = parse_lspci(text).gpus
    assert g.name == "NVIDIA GeForce RTX 4090"
    assert "sudo lspci -vv" in g.pcie.unavailable["current_width"]


def test_lspci_nn_ids_and_class_code() -> None:
    text = (
        "0000:41:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
        "\tCapabilities: [68] Express (v2) Endpoint, MSI 00\n"
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16\n"
    )
    (g,) = parse_lspci(text).gpus
    hop = g.pcie.path[0]
    assert (hop.vendor_id, hop.device_id, hop.class_code) == ("0x10de", "0x2330", "0x0302")
    assert (g.name, hop.current_gen, hop.max_gen) == ("NVIDIA H100 SXM5 80GB", 4, 5)


# -- nvlink -s: inactive links, error counters, -L --------------------------------------------------------


def test_nvlink_inactive_links_and_merge_with_q_by_uuid() -> None:
    rig = import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt", OWN / "nvlink-status_4xa100-two-inactive.txt"])
    assert [len(g.nvlinks) for g in rig.gpus] == [12, 12, 12, 12]
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [12, 12, 10, 12]
    assert [n.link for n in rig.gpus[2].nvlinks if n.active is False] == [10, 11]
    assert {n.version for g in rig.gpus for n in g.active_nvlinks()} == {3}  # 25 GB/s: NVLink 3
    assert rig.gpus[2].bus_id == "0000:c2:00.0"
    assert rig.origins["gpus[2].nvlinks"].endswith("nvlink-status_4xa100-two-inactive.txt:28 (nvidia-smi nvlink -s)")


def test_nvlink_uuid_wins_over_index() -> None:
    q = strip_header((SAMPLES / "smi-q_a100sxmx4_thamada.txt").read_text())
    nv = (
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-011b2cfe-2b8e-1cb0-19e1-1b764e854dfc)\n\t Link 0: 25 GB/s\n"
        "GPU 3: NVIDIA A100-SXM4-80GB (UUID: GPU-31515c3d-1414-7c2c-004a-f86a898946ac)\n\t Link 0: <inactive>\n"
    )
    rig = import_texts([("q.txt", q), ("nv.txt", nv)])
    assert rig.gpus[3].nvlinks[0].active is True  # UUID ...4dfc is the -q's GPU 3 (0000:d4:00.0)
    assert rig.gpus[0].nvlinks[0].active is False


def test_nvlink_error_counters_and_unknown_speed() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: 13.0 GB/s\n"
        "\t Link 0: Replay Errors: 3\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 7\n"
    )
    (g,) = parse_nvlink_status(text).gpus
    l0, l1 = g.nvlinks
    assert (l0.active, l0.version, l0.errors) == (True, 4, {"replay": 3, "recovery": 0, "crc_flit": 7})
    assert l1.version is None and "13.0 GB/s" in l1.unavailable["version"]


def test_nvlink_bad_link_line_names_the_line() -> None:
    with pytest.raises(ImportParseError, match=r"^nv.txt: line 3: link 1: 'fast'"):
        parse_nvlink_status("GPU 0: X (UUID: GPU-1)\n\t Link 0: 25 GB/s\n\t Link 1: fast\n", "nv.txt")


def test_smi_list() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aa)\n  MIG 3g.40gb     Device  0: (UUID: MIG-bb)\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-cc)\n"
    )
    assert detect(text) == ["smi-list"]
    rig = import_texts([("l.txt", text)])
    assert [(g.index, g.uuid) for g in rig.gpus] == [(0, "GPU-aa"), (1, "GPU-cc")]
    assert all(g.nvlinks == [] for g in rig.gpus)


# -- topo -m / -p2p variants ------------------------------------------------------------------------------


def test_ansi_topo_then_p2p_w_mode_from_the_prompt() -> None:
    rig = import_files([OWN / "topo-m-and-p2p-w_4x4090-ansi.txt"])
    assert rig.topology.matrix == [["X" if i == j else "NODE" for j in range(4)] for i in range(4)]
    assert rig.topology.p2p_read is None
    assert rig.topology.p2p_write == [["X" if i == j else "NS" for j in range(4)] for i in range(4)]
    assert [g.cpu_affinity for g in rig.gpus] == ["0-63"] * 4
    assert rig.problems == []


def test_2017_topo_soc_is_sys() -> None:
    rig = parse_topo_matrix(own("topo-m_4xp100-pcie-2017-soc.txt"))
    assert rig.topology.matrix == [
        ["X", "PIX", "SYS", "SYS"],
        ["PIX", "X", "SYS", "SYS"],
        ["SYS", "SYS", "X", "PIX"],
        ["SYS", "SYS", "PIX", "X"],
    ]
    assert rig.topology.nic_matrix == [["SYS"], ["SYS"], ["PHB"], ["PHB"]]
    assert rig.gpus[2].cpu_affinity == "12-23,36-47" and rig.gpus[2].numa_node is None


def test_topo_with_tabs_squeezed_to_single_spaces() -> None:
    text = strip_header((SAMPLES / "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt").read_text())
    a = parse_topo_matrix(text)
    b = parse_topo_matrix(text.replace("\t", " "))
    assert b.topology.matrix == a.topology.matrix and b.topology.nics == ["mlx5_2"]
    assert [g.numa_node for g in b.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_topo_nv18_and_mixed_gpus() -> None:
    hdr = "\t" + "\t".join(f"GPU{i}" for i in range(4)) + "\tCPU Affinity\tNUMA Affinity\n"
    rows = "".join(
        f"GPU{i}\t" + "\t".join(" X " if i == j else "NV18" for j in range(4)) + "\t0-55\t0\n" for i in range(4)
    )
    rig = parse_topo_matrix(hdr + rows)
    assert rig.topology.matrix[0] == ["X", "NV18", "NV18", "NV18"]


def test_topo_cut_short_fills_from_the_mirror() -> None:
    text = strip_header((SAMPLES / "topo-m_8x4090-pcie-2socket_lukolszewski.txt").read_text())
    full = parse_topo_matrix(text).topology.matrix
    cut = "\n".join(text.splitlines()[:8])  # header + GPU0..GPU6 rows; GPU7 row lost
    rig = parse_topo_matrix(cut, "cut.txt")
    assert rig.topology.matrix == full
    assert rig.gpus[7].cpu_affinity is None
    assert any("no row for GPU7" in p for p in rig.problems) and any("mirror" in p for p in rig.problems)


def test_topo_unknown_code_names_line_and_column() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tFOO\t0-7\nGPU1\tPHB\t X \t0-7\n"
    with pytest.raises(ImportParseError, match=r"^t.txt: line 2: row GPU0, column GPU1: 'FOO' is not a link code"):
        parse_topo_matrix(text, "t.txt")


def test_p2p_modes() -> None:
    text = " \tGPU0\tGPU1\t\n GPU0\tX\tCNS\t\n GPU1\tCNS\tX\t\n"
    assert import_texts([("a.txt", text)]).problems == [
        "a.txt: nvidia-smi topo -p2p matrix without its mode (r/w/n/a/p); read as -p2p r"
    ]
    assert parse_topo_p2p(text, mode="w").topology.p2p_write == [["X", "CNS"], ["CNS", "X"]]
    rig = import_texts([("p2p-n.txt", text)])  # mode from the file name
    assert rig.topology.p2p_read is None and rig.topology.p2p_write is None
    assert any("-p2p n (nvlink) matrix read but not kept" in p for p in rig.problems)
    with pytest.raises(ImportParseError, match="'OKK' is not a link code"):
        parse_topo_p2p(" \tGPU0\tGPU1\n GPU0\tX\tOKK\n")


# -- nccl-tests ------------------------------------------------------------------------------------------


def test_nccl_new_header_all_gather() -> None:
    rig = parse_nccl_tests(own("nccl-allgather_8xh100-new-header.txt"), "ag.txt")
    (ms,) = rig.measurements
    assert (ms.kind, ms.world_size, ms.value_gbps, ms.status) == ("all_gather", 8, 209.1, "ok")
    assert [r.size_bytes for r in ms.rows] == [1048576, 4194304, 16777216, 67108864, 268435456, 1073741824]
    assert ms.rows[0].count == 32768 and ms.rows[-1].algbw_gbps == 238.98 and ms.rows[-1].time_us == 4493.1
    assert (ms.warmup_iters, ms.iters) == (1, 20)
    assert rig.software.nccl_version == "2.26.3"  # nccl-library=22603
    assert rig.host.hostname == "dgx-h100-07"
    assert [g.bus_id for g in rig.gpus][:2] == ["0000:18:00.0", "0000:2a:00.0"]
    assert "in-place busbw at 1073741824 B: 209.36 GB/s" in ms.notes
    assert rig.origins["measurements[0]"] == "ag.txt:3"


def test_nccl_cut_short_with_wrong_results_merged_with_topo() -> None:
    rig = import_files([OWN / "topo-m-and-p2p-w_4x4090-ansi.txt", OWN / "nccl-allreduce_4x4090-cut-short-wrong.txt"])
    (ms,) = rig.measurements
    assert (ms.kind, ms.status, ms.world_size, ms.gpus) == ("all_reduce", "partial", 4, [0, 1, 2, 3])
    assert len(ms.rows) == 7 and ms.value_gbps == 13.09
    bad = [r for r in ms.rows if r.correct is False]
    assert [(r.size_bytes, r.errors) for r in bad] == [(16777216, 5)]
    assert "last row (line 23) cut short; left out" in ms.notes
    assert "stopped at 67108864 B of the 134217728 B asked for" in ms.notes
    assert rig.software.nccl_version == "2.18.3" and rig.host.hostname == "rig4090"
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 4090"] * 4
    assert rig.topology.p2p_write is not None


def test_nccl_bus_numbers_match_q_gpus() -> None:
    q = own("smi-q_2xv100-r470-throttle-lost-gpu.txt")
    nccl = (
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
        "1 graph: 0\n"
        "#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] Tesla V100-SXM2-16GB\n"
        "#  Rank  1 Group  0 Pid 1 on h device  1 [0x06] Tesla V100-SXM2-16GB\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong\n"
        "           8             2     float     sum      -1    20.1    0.00    0.00      0    20.0    0.00    0.00   "
        " "
        "  0\n"
    )
    rig = import_texts([("q.txt", q), ("all_reduce_perf.log", nccl)])
    assert rig.measurements[0].gpus == [1, 0]  # CUDA device 0 is the GPU on bus 07, nvidia-smi's GPU 1
    assert len(rig.gpus) == 3


@pytest.mark.parametrize(
    ("redop", "root", "count", "kind"),
    [
        ("sum", "-1", 8388608, "all_reduce"),
        ("sum", "-1", 2097152, "reduce_scatter"),
        ("none", "0", 8388608, "broadcast"),
        ("sum", "0", 8388608, "reduce"),
        ("none", "-1", 8388608, "sendrecv"),
    ],
)
def test_nccl_collective_told_from_the_columns(redop: str, root: str, count: int, kind: str) -> None:
    text = (
        "#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] G\n#  Rank  1 Group  0 Pid 1 on h device  1 [0x02] G\n"
        "#  Rank  2 Group  0 Pid 1 on h device  2 [0x03] G\n#  Rank  3 Group  0 Pid 1 on h device  3 [0x04] G\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong\n"
        f"    33554432  {count:12d}     float  {redop:>6}  {root:>6}   2275.1   14.75   24.58      0   2282.5   14.70  "
        " "
        "24.50      0\n"
    )
    assert parse_nccl_tests(text).measurements[0].kind == kind


def test_nccl_all_gather_without_its_name_reads_the_rows_collective_unknown() -> None:
    """all_gather and alltoall print alike: without the binary's name the rows are read as a collective not named
    (said so), with the rank lines (a file with something recognisable in it is never refused)."""
    text = own("nccl-allgather_8xh100-new-header.txt").replace("# Collective test starting: all_gather_perf\n", "")
    text = text.replace("# Collective test concluded: all_gather_perf", "")
    rig = parse_nccl_tests(text, "x.txt")
    assert (len(rig.gpus), [m.kind for m in rig.measurements]) == (8, ["collective"])
    (p,) = rig.problems
    assert "cannot tell which nccl-tests binary" in p
    rows_only = "\n".join(x for x in text.splitlines() if x.strip()[:1].isdigit())
    (m,) = parse_nccl_tests(rows_only, "x.txt").measurements  # nothing but rows it cannot name: read, not named
    assert m.kind == "collective" and any("collective not known" in n for n in m.notes)
    assert parse_nccl_tests(text, hint="./build/all_gather_perf -g 8").measurements[0].kind == "all_gather"


def test_nccl_old_error_column_and_na_in_place() -> None:
    text = (
        "# nThread 1 nGpus 2 minBytes 1024 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
        "#   Rank  0 Pid  12 on node1 device  0 [0x1a] Tesla V100-SXM2-16GB\n"
        "#   Rank  1 Pid  12 on node1 device  1 [0x1b] Tesla V100-SXM2-16GB\n"
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "        1024           256   float     sum    12.05    0.08    0.08  0e+00      N/A     N/A     N/A    N/A\n"
    )
    (ms,) = parse_nccl_tests(text, hint="all_reduce_perf").measurements
    (row,) = ms.rows
    assert (row.time_us, row.busbw_gbps, row.correct, row.errors) == (12.05, 0.08, None, None)
    assert not any("in-place" in n for n in ms.notes)


def test_nccl_bad_number_names_the_line() -> None:
    text = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong\n"
        "           8             2     float     sum      -1    abc    0.00    0.00      0    20.0    0.00    0.00    "
        " "
        " 0\n"
        "          16             4     float     sum      -1    20.1    0.00    0.00      0    20.0    0.00    0.00   "
        " "
        "  0\n"
    )
    with pytest.raises(ImportParseError, match=r"^n.txt: line 2: time is 'abc', not a number"):
        parse_nccl_tests(text, "n.txt", hint="all_reduce_perf")


# -- files: encodings, directories, errors --------------------------------------------------------------


def test_utf16_powershell_and_crlf(tmp_path: Path) -> None:
    text = strip_header((SAMPLES / "topo-m_asus-esc8000a-4x6000ada-nic_stelline.txt").read_text())
    (tmp_path / "u16.txt").write_bytes(text.replace("\n", "\r\n").encode("utf-16"))
    (tmp_path / "crlf.txt").write_bytes(text.replace("\n", "\r\n").encode())
    a = import_files([tmp_path / "u16.txt"])
    b = import_files([tmp_path / "crlf.txt"])
    assert a.topology.matrix == b.topology.matrix == parse_topo_matrix(text).topology.matrix
    assert a.topology.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]


def test_directory_skips_what_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "topo.txt").write_text(
        strip_header((SAMPLES / "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt").read_text())
    )
    (tmp_path / "nvlink.txt").write_text(
        strip_header((SAMPLES / "nvlink-s_3xa6000-one-unbridged_siboehm.txt").read_text())
    )
    (tmp_path / "README").write_text("outputs of workstation 3 as sent by the vendor\n")
    (tmp_path / ".hidden").write_text("x")
    from gpuadvisor.importers import import_dir

    rig = import_dir(tmp_path)
    assert rig.source.files == [str(tmp_path / "nvlink.txt"), str(tmp_path / "topo.txt")]
    assert any(p.startswith(f"{tmp_path / 'README'}: skipped (not recognised") for p in rig.problems)
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [4, 4, 0]
    assert rig.topology.matrix[0] == ["X", "NV4", "NODE"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty: no command output in it"),
        (b"hello world\nsecond line\n", "line 1: not recognised as nvidia-smi"),
        (b"\n\nGPU0 is fine\n", "line 3: not recognised"),
        (b"abc\x00def", "line 1: binary data"),
    ],
)
def test_unreadable_files(tmp_path: Path, content: bytes, message: str) -> None:
    p = tmp_path / "f.txt"
    p.write_bytes(content)
    with pytest.raises(ImportParseError) as e:
        import_files([p])
    assert message in str(e.value) and str(e.value).startswith(str(p)) and "\n" not in str(e.value)
    assert isinstance(e.value, InputError)


def test_missing_file_and_no_files(tmp_path: Path) -> None:
    with pytest.raises(ImportParseError, match="no such file"):
        import_files([tmp_path / "nope.txt"])
    with pytest.raises(InputError, match="no files to import"):
        import_files([])
    (tmp_path / "d").mkdir()
    with pytest.raises(ImportParseError, match="directory has no files"):
        import_files([tmp_path / "d"])


def test_imported_scan_round_trips_through_json(tmp_path: Path) -> None:
    rig = import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt", OWN / "nvlink-status_4xa100-two-inactive.txt"])
    rig.save(tmp_path / "scan.json")
    back = facts.load(tmp_path / "scan.json")
    assert back.to_dict() == rig.to_dict()
    assert back.source.kind == "imported" and back.provenance["gpus"] == "imported"
    assert back.origins["gpus[0].name"].endswith("smi-q_a100sxmx4_thamada.txt:12 (nvidia-smi -q)")


def test_every_null_has_a_reason() -> None:
    rig = import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt", OWN / "nvlink-status_4xa100-two-inactive.txt"])
    for obj in [rig.host, rig.software, rig.topology, *rig.gpus, *(g.pcie for g in rig.gpus)]:
        for name, value in vars(obj).items():
            if value is None:
                assert obj.unavailable.get(name), f"{type(obj).__name__}.{name} is null without a reason"


def test_nccl_table_pasted_without_its_header() -> None:
    text = own("nccl-allgather_8xh100-new-header.txt")
    table = "\n".join(
        x for x in text.splitlines() if not x.startswith(("# nccl-tests", "# nThread", "#  Rank", "# Using"))
    )
    assert detect(table) == ["nccl-tests"]
    (ms,) = import_texts([("all_gather_perf.out", table)]).measurements
    assert ms.kind == "all_gather" and ms.value_gbps == 209.1 and ms.world_size is None
    not_shown = "the paste starts below nccl-tests' header: its nThread/nGpus line and rank lines are not shown"
    assert ms.unavailable == {
        "expected_gbps": "no link facts for GPUs [] in this scan",
        "world_size": not_shown,
        "gpus": not_shown,
    }


def test_the_same_file_twice_counts_once(tmp_path: Path) -> None:
    f = tmp_path / "all_gather_perf.txt"
    f.write_text(own("nccl-allgather_8xh100-new-header.txt"))
    rig = import_files([f, f, tmp_path])
    assert len(rig.measurements) == 1 and rig.source.files == [str(f)]


@pytest.mark.parametrize(
    ("name", "field"), [("p2p_read.txt", "p2p_read"), ("topo-p2p-write.log", "p2p_write"), ("p2p-w", "p2p_write")]
)
def test_p2p_mode_from_file_name(name: str, field: str) -> None:
    rig = import_texts([(name, " \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n GPU1\tOK\tX\t\n")])
    assert getattr(rig.topology, field) == [["X", "OK"], ["OK", "X"]] and rig.problems == []


def test_fixture_copies_match_the_shared_samples() -> None:
    shared = Path("/work/shared/samples")
    if not shared.is_dir():
        pytest.skip("no ../shared/samples on this machine (CI): the copies in tests/fixtures/import/samples are used")
    for p in shared.glob("*.txt"):
        assert (SAMPLES / p.name).read_bytes() == p.read_bytes(), p.name
