"""Outputs as people paste them: elisions, fragments, several machines, shifted columns, "nothing active",
SYS on one NUMA node, and CUDA samples / NCCL version evidence. Each test reads a real sample (copied from
../shared/samples) or a variant of one made by a stated edit, and asserts facts, the reasons of unknowns
and the rule codes that fire."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor import facts, rules
from gpuadvisor.errors import InputError
from gpuadvisor.importers import (
    ImportParseError,
    import_files,
    import_machines,
    import_texts,
    parse_lspci,
    parse_nvlink_status,
    parse_smi_q,
    parse_smi_xml,
    parse_topo_matrix,
)

HERE = Path(__file__).parent / "fixtures" / "import"
SAMPLES = HERE / "samples"
OWN = HERE / "own"


def text(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def body(name: str) -> str:
    """The sample without its leading '# source' lines (nvidia-smi never prints them)."""
    lines = text(name).splitlines()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def codes(rig: facts.Rig, severity: str | None = None) -> dict[str, list[facts.Finding]]:
    out: dict[str, list[facts.Finding]] = {}
    for f in rules.evaluate(rig):
        if severity is None or f.severity == severity:
            out.setdefault(f.code, []).append(f)
    return out


def judged(rig: facts.Rig) -> set[tuple[str, str]]:
    """(code, severity) of every finding more than 'not known'."""
    return {(f.code, f.severity) for f in rules.evaluate(rig) if f.severity != "not-checked"}


# -- 1. elisions --------------------------------------------------------------------------------------------

GB200 = "nvlink-s_gb200-elided.txt"


def test_gb200_elided_links_are_not_shown_not_down() -> None:
    rig = import_files([SAMPLES / GB200])
    g0, g1 = rig.gpus
    assert (len(g0.nvlinks), len(g0.active_nvlinks()), g0.nvlinks_incomplete()) == (18, 18, None)
    assert all(n.version == 5 for n in g0.nvlinks)  # 53.125 GB/s per link: NVLink 5
    assert [n.link for n in g1.nvlinks] == [0, 1] and all(n.active for n in g1.nvlinks)
    assert g1.nvlinks_incomplete() == "elided in the paste (line 25): links after link 1 not shown"
    assert g1.unavailable["nvlinks"].startswith(facts.ELIDED)
    assert any("line 25: '...'" in p and "any GPU after GPU 1" in p for p in rig.problems)
    found = codes(rig)
    (ga204,) = found["GA204"]
    assert ga204.severity == "not-checked" and "links after link 1 not shown" in ga204.message and ga204.gpus == [1]
    assert judged(rig) == set()  # nothing more severe than "not known"


def test_gb200_cut_after_two_links_is_not_shown_but_short_list_inside_fails() -> None:
    """The same paste ending without '...' after GPU 1's second link: nvidia-smi lists every link, so the last GPU
    showing 2 of the 18 links GPU 0 lists is a paste cut inside its list (not shown, no FAIL: a finding never rests
    on a cut). The same short list followed by another GPU is what nvidia-smi printed: a link-down FAIL."""
    cut = body(GB200).replace("...\n", "")
    rig = import_texts([("x.txt", cut)])
    assert rig.gpus[1].nvlinks_incomplete() == (
        "elided in the paste (the output ends at line 22, inside GPU 1's list): links after link 1 not shown"
    )
    assert ("GA204", "fail") not in judged(rig)
    gpu0 = cut[: cut.index("GPU 1:")]
    shown = cut + gpu0.replace("GPU 0:", "GPU 2:").replace("GPU-d1b93026", "GPU-e1b93026")
    rig = import_texts([("x.txt", shown)])
    assert rig.gpus[1].nvlinks_incomplete() is None
    assert ("GA204", "fail") in judged(rig)


@pytest.mark.parametrize(
    "mark", ["....", "[...]", "<snip>", "[snip]", "-- snip --", "… (16 more lines)", "[output truncated]"]
)
def test_every_elision_mark_reads_the_same(mark: str) -> None:
    rig = parse_nvlink_status(body(GB200).replace("...\n", f"         {mark}\n"), "x.txt")
    assert rig.gpus[1].unavailable["nvlinks"] == "elided in the paste (line 23): links after link 1 not shown"


def test_elision_between_links_and_uuid_elided() -> None:
    t = body(GB200).replace("GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5", "...")
    t = t.replace(
        "         Link 1: 53.125 GB/s\n...\n", "         Link 1: 53.125 GB/s\n...\n         Link 17: 53.125 GB/s\n"
    )
    rig = parse_nvlink_status(t, "x.txt")
    g1 = rig.gpus[1]
    assert g1.uuid is None and g1.unavailable["uuid"] == "elided in the paste (line 20)"
    assert [n.link for n in g1.nvlinks] == [0, 1, 17] and g1.unavailable["nvlinks"].startswith(
        "elided in the paste (line 23)"
    )


def test_nvlink_file_cut_mid_line() -> None:
    t = body(GB200).replace("         Link 1: 53.125 GB/s\n...\n", "         Link 1: 53.1")
    rig = parse_nvlink_status(t, "x.txt")  # no newline after '53.1': the line is cut, not malformed
    g1 = rig.gpus[1]
    assert [n.link for n in g1.nvlinks] == [0]
    assert g1.unavailable["nvlinks"] == "elided in the paste (line 22 is cut mid-line): links after link 0 not shown"
    with pytest.raises(ImportParseError, match="neither a speed"):
        parse_nvlink_status(t + "\n", "x.txt")  # the same line, ended: a malformed line stays an error


# -- 2. fragments: lspci without a device line, -q without a banner -------------------------------------------


def test_lspci_fragment_rtx_a4000_at_2_5_gts() -> None:
    rig = import_files([SAMPLES / "lspci-fragment_rtx-a4000-2.5gts.txt"])
    (g,) = rig.gpus
    p = g.pcie
    assert (p.current_gen, p.current_width, p.gpu_max_gen, p.max_width) == (1, 16, 4, 16)
    assert g.bus_id is None and g.name is None
    assert g.unavailable["bus_id"].startswith("the lspci lines pasted have no device line: which device (and slot)")
    assert p.path == [] and p.unavailable["path"] == g.unavailable["bus_id"]
    assert any("line 3:" in x and "no device line" in x for x in rig.problems)
    assert not any("PCI bus order" in x for x in rig.problems)  # no order to speak of
    assert ("GA102", "info") in judged(rig)  # the 2.5 GT/s link is judged without the device line


def test_lspci_fragment_beside_another_output_is_not_attached() -> None:
    rig = import_texts(
        [("q.txt", body("smi-q_l4_thamada.txt")), ("frag.txt", body("lspci-fragment_rtx-a4000-2.5gts.txt"))]
    )
    (g,) = rig.gpus
    assert g.name == "NVIDIA L4" and g.pcie.current_width == 8  # the L4's own link, not the fragment's x16
    assert any("frag.txt" in x and "not attached to any GPU" in x for x in rig.problems)


def test_lspci_cut_inside_the_width() -> None:
    t = body("lspci-fragment_rtx-a4000-2.5gts.txt")
    cut = t[
        : t.index("LnkSta: Speed 2.5GT/s (downgraded), Width x16") + len("LnkSta: Speed 2.5GT/s (downgraded), Width x1")
    ]
    rig = parse_lspci(cut, "cut.txt")
    (g,) = rig.gpus
    assert g.pcie.current_gen == 1 and g.pcie.current_width is None  # "x1" may be the start of "x16"
    assert g.pcie.unavailable["current_width"] == "elided in the paste (line 14 is cut mid-line)"


A100_Q = "smi-q_a100-no-banner-elided.txt"


def test_smi_q_without_banner_and_elided() -> None:
    rig = import_files([SAMPLES / A100_Q])
    g, *rest = rig.gpus  # 'Attached GPUs : 8': the seven not shown are counted, none of their facts known
    assert [x.index for x in rest] == list(range(1, 8)) and all(x.name is None and x.bus_id is None for x in rest)
    assert (g.name, g.bus_id) == ("NVIDIA A100-SXM4-80GB", "0000:10:1c.0")
    assert (g.ecc_errors_corrected_volatile, g.ecc_errors_corrected_aggregate, g.ecc_errors_uncorrected_volatile) == (
        177,
        177,
        0,
    )
    assert (g.ecc_errors_corrected_sram_volatile, g.remapped_rows_correctable, g.remapped_rows_pending) == (0, 1, True)
    assert (
        g.retired_pages_single_bit is None and g.unavailable["retired_pages_single_bit"] == "nvidia-smi printed 'N/A'"
    )
    # what the [...] on line 10 hides is not known, never "not in the output"
    for f in ("uuid", "power_limit_w", "temperature_c", "clocks_event_reasons", "persistence_mode"):
        assert g.unavailable[f] == "elided in the paste (line 10): not shown", f
    assert g.pcie.unavailable["current_width"] == "elided in the paste (line 10): not shown"
    assert rig.software.driver_version == "510.73.08" and rig.software.cuda_driver_version == "11.6"
    assert any(
        "8 attached GPUs but the output holds 1 (the rest is not shown: elided in the paste (line 37))" in p
        for p in rig.problems
    )
    found = judged(rig)
    assert ("GA306", "warn") in found  # the remapped row pending that the paste does show
    assert not any(sev == "fail" for _, sev in found)
    nc = codes(rig, "not-checked")
    assert any("elided in the paste (line 10)" in f.message for f in nc["GA101"] + nc.get("GA312", []))


def test_smi_q_elision_inside_a_block_hides_its_counts() -> None:
    t = body(A100_Q).replace("            DRAM Correctable              : 177\n", "            <snip>\n", 1)
    (g,) = parse_smi_q(t, "x.txt").gpus
    assert g.ecc_errors_corrected_volatile is None
    assert (
        g.unavailable["ecc_errors_corrected_volatile"] == "elided in the paste (line 13): the counts are shown in part"
    )
    assert g.ecc_errors_corrected_aggregate == 177  # the Aggregate block is whole


def test_smi_q_value_cut_at_the_end_of_the_file() -> None:
    t = body("smi-q_l4_thamada.txt")
    at = t.index(": 8x", t.index("Link Width"))
    cut = t[: at + len(": 8")]  # the file ends inside "8x"
    (g,) = parse_smi_q(cut, "cut.txt").gpus
    assert g.pcie.current_width is None and "is cut mid-line" in g.pcie.unavailable["current_width"]
    assert g.pcie.max_width == 16
    assert g.power_limit_w is None and g.unavailable["power_limit_w"].endswith("is cut mid-line): not shown")


def test_xml_cut_inside_a_value() -> None:
    t = body("smi-q-x_rtx4090-gen3-host.txt")
    at = t.index("<current_link_width>") + len("<current_link_width>1")
    (g,) = parse_smi_xml(t[:at], "cut.xml").gpus
    assert g.pcie.current_width is None and g.pcie.unavailable["current_width"].startswith(
        "elided in the paste (the XML stops at line"
    )
    assert g.power_limit_w is None and g.unavailable["power_limit_w"].startswith("elided in the paste (the XML stops")


# -- 3. several machines ----------------------------------------------------------------------------------


def test_two_topologies_of_different_sizes_are_refused() -> None:
    with pytest.raises(InputError) as e:
        import_files(
            [SAMPLES / "topo-m_della-2xa100-mlx5_jdh4.txt", SAMPLES / "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt"]
        )
    msg = str(e.value)
    assert (
        "\n" not in msg
        and "outputs of different machines" in msg
        and "shows 2 GPUs" in msg
        and "8" in msg
        and "--split" in msg
    )


@pytest.mark.parametrize(
    ("names", "what"),
    [
        (("smi-q_a100-no-banner-elided.txt", "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt"), "driver 510.73.08"),
        (
            ("nccl-allreduce_2x8xh200-slurm-log.txt", "nccl-allreduce_gcp-a3mega-2x8xh100_lessizzmore.txt"),
            "ran on GPU-3841, GPU-6550",
        ),
        (
            ("topo-m_8x4090-pcie-2socket_lukolszewski.txt", "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt"),
            "different GPU topologies",
        ),
        (("smi-q_a100-no-banner-elided.txt", "smi-q_h100sxmx8_thamada.txt"), "driver"),
    ],
)
def test_disagreeing_outputs_are_refused(names: tuple[str, str], what: str) -> None:
    with pytest.raises(InputError, match="outputs of different machines") as e:
        import_files([SAMPLES / n for n in names])
    assert what in str(e.value)


def test_index_with_two_bus_ids_is_refused() -> None:
    a = body("session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt").split(
        "root@autodl-container-xxxxx:~# nvidia-smi topo -m"
    )[0]
    b = a.replace("00000000:B4:00.0", "00000000:3B:00.0")
    with pytest.raises(InputError, match="GPU 0 is 0000:b4:00.0 in a.txt:.* but 0000:3b:00.0"):
        import_texts([("a.txt", a), ("b.txt", b)])


def test_outputs_of_one_machine_lacking_fields_are_not_a_conflict() -> None:
    # -q filtered to one GPU (Attached GPUs 8) + the full topo -m + nvlink -s of the same 8x V100
    q = body("smi-q_h100sxmx8_thamada.txt")
    one = q[: q.index("GPU 00000000:", q.index("GPU 00000000:") + 1)]
    rig = import_texts([("q.txt", one), ("topo.txt", body("topo-m_8x4090-pcie-2socket_lukolszewski.txt"))])
    assert len(rig.gpus) == 8
    # the whole session of one machine: table, topo, p2p, CUDA samples, six nccl-tests runs (one on 1 GPU)
    rig = import_files([SAMPLES / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt"])
    assert len(rig.gpus) == 2


def test_split_imports_each_machine() -> None:
    rigs = import_machines(
        [
            SAMPLES / "topo-m_della-2xa100-mlx5_jdh4.txt",
            SAMPLES / "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt",
            SAMPLES / "nvlink-s_8xv100-sxm2_lukolszewski.txt",
        ]
    )
    assert [len(r.gpus) for r in rigs] == [2, 8]
    assert [Path(f).name for f in rigs[1].source.files] == [
        "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt",
        "nvlink-s_8xv100-sxm2_lukolszewski.txt",
    ]
    assert all(len(g.nvlinks) == 6 for g in rigs[1].gpus)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120)


def test_cli_split_names_one_file_per_machine(tmp_path: Path) -> None:
    files = [
        str(SAMPLES / "topo-m_della-2xa100-mlx5_jdh4.txt"),
        str(SAMPLES / "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt"),
    ]
    p = run("import", *files)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "outputs of different machines" in p.stderr
    out = tmp_path / "scan.json"
    p = run("import", *files, "--split", "--json", str(out))
    assert p.returncode == 0, p.stderr
    one, two = (json.loads((tmp_path / f"scan-{k}.json").read_text()) for k in (1, 2))
    assert (len(one["gpus"]), len(two["gpus"])) == (2, 8) and not out.exists()
    assert f"machine 2: {files[1]} -> {tmp_path / 'scan-2.json'} (8 GPUs" in p.stderr
    p = run("import", *files, "--split", "--json", "-")
    assert [len(r["gpus"]) for r in json.loads(p.stdout)] == [2, 8]


# -- 4. shifted columns -----------------------------------------------------------------------------------

B200 = "topo-m_8xb200-merged-header.txt"


def test_topo_glued_header_names_and_cut_rows() -> None:
    rig = import_files([SAMPLES / B200])
    assert rig.topology.nics == [f"NIC{k}" for k in range(13)]  # NIC11NIC12 read as two columns
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus[:4]] == [("0-15", 0)] * 4  # not 'NODE' / '0-15'
    for g in rig.gpus[4:]:
        assert (
            g.numa_node is None
            and g.unavailable["numa_node"]
            == f"no row for GPU{g.index} in this nvidia-smi topo -m (the paste ends before it)"
        )
    # the pairs rows GPU0-GPU3 show are kept (22 of 28); the 6 among GPU4-GPU7 are "?" (not shown)
    m = rig.topology.matrix
    assert m[0] == ["X"] + ["NV18"] * 7 and m[5][4] == m[4][5] == "?" and m[7][0] == "NV18"
    assert sum(c == "?" for row in m for c in row) == 12
    assert rig.topology.unavailable["matrix"] == (
        "rows GPU4-GPU7 not shown (the output ends before them): 6 of 28 GPU pairs not shown (?); the others kept"
    )
    assert any("header 'NIC11NIC12' read as NIC11, NIC12" in p for p in rig.problems)
    assert judged(rig) == set()


def _b200_rows() -> str:
    return body(B200).replace("NIC11NIC12", "NIC11   NIC12")


def test_topo_glued_cells_read_apart() -> None:
    t = _b200_rows().replace("0-15    0               N/A", "0-15    0N/A", 1)  # as some env dumps print it
    rig = parse_topo_matrix(t, "x.txt")
    assert (rig.gpus[0].cpu_affinity, rig.gpus[0].numa_node) == ("0-15", 0)
    assert any("cells glued together read apart ('0N/A')" in p for p in rig.problems)


def test_topo_row_wider_than_its_header_reads_affinity_from_the_right() -> None:
    t = body(B200)  # header still glued; make the header one column short in another way: drop the split
    t = t.replace("NIC11NIC12", "NIC11")  # 12 NIC names over 13 NIC cells: every row is one cell wider
    rig = parse_topo_matrix(t, "x.txt")
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus[:4]] == [("0-15", 0)] * 4
    assert rig.topology.nic_matrix == [] and "not readable" in rig.topology.unavailable["nic_matrix"]
    assert any("row GPU0 (line 2) has 24 cells under a header of 23 columns" in p for p in rig.problems)


def test_topo_shifted_row_with_unreadable_affinity_leaves_it_unknown() -> None:
    t = _b200_rows().replace("PIX  NODE     0-15    0               N/A", "PIX  NODE     0-15    0 N/A N/A")
    rig = parse_topo_matrix(t, "x.txt")
    g = rig.gpus[0]
    assert (g.cpu_affinity, g.numa_node) == (None, None)
    assert (
        g.unavailable["numa_node"]
        == "row GPU0 (line 2) has 25 cells under a header of 24 columns (columns shifted: names or cells glued "
        "together)"
    )
    assert rig.gpus[1].numa_node == 0


# -- 5. nothing active is a fact --------------------------------------------------------------------------


def test_xml_all_not_active_is_an_empty_list() -> None:
    rig = import_files([SAMPLES / "smi-q-x_a100-mig-enabled.txt"])
    (g,) = rig.gpus
    assert g.clocks_event_reasons == [] and "clocks_event_reasons" not in g.unavailable
    assert rig.origins["gpus[0].clocks_event_reasons"].endswith("smi-q-x_a100-mig-enabled.txt:145 (nvidia-smi -q -x)")
    nc = codes(rig, "not-checked")
    assert not any(c in nc for c in ("GA308", "GA309", "GA310", "GA311"))  # the clock rules ran on it


def test_text_all_not_active_is_an_empty_list() -> None:
    t = body("smi-q_l4_thamada.txt").replace(
        "Idle                              : Active", "Idle                              : Not Active"
    )
    rig = import_texts([("q.txt", t)])
    assert rig.gpus[0].clocks_event_reasons == [] and "clocks_event_reasons" not in rig.gpus[0].unavailable


# -- 8. SYS on one NUMA node -----------------------------------------------------------------------------


def test_sys_pairs_on_one_numa_node_are_not_called_cross_socket() -> None:
    # a VM's topo -m: every pair SYS, both GPUs on NUMA node 0 (the session's 2x 2080 Ti matrix, PIX -> SYS, node 0)
    t = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tSYS\t0-15\t0\t\tN/A\nGPU1\tSYS\t X "
        "\t0-15\t0\t\tN/A\n"
    )
    rig = import_texts([("vm.txt", t)])
    (f,) = codes(rig)["GA201"]
    assert f.severity == "info" and "same NUMA node (0)" in f.message and "not shown to cross CPU sockets" in f.message
    assert f.observed == {"SYS, same NUMA node": ["0-1"]}


def test_sys_pairs_on_two_numa_nodes_still_warn() -> None:
    rig = import_files([SAMPLES / "topo-m_8x4090-pcie-2socket_lukolszewski.txt"])
    (f,) = codes(rig)["GA201"]
    assert f.severity == "warn" and "the GPUs are on different NUMA nodes" in f.message


# -- 9. CUDA samples and the NCCL version ---------------------------------------------------------------------

SESSION = "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt"


def test_session_cuda_samples_become_evidence() -> None:
    rig = import_files([SAMPLES / SESSION])
    assert rig.topology.p2p_read == [["X", "NS"], ["NS", "X"]] == rig.topology.p2p_write
    assert rig.origins["topology.p2p_read"].endswith(f"{SESSION}:92 (CUDA samples p2pBandwidthLatencyTest)")
    p2p = {(m.kind, tuple(m.gpus), m.method.split(": ")[1]): m for m in rig.measurements if m.kind.startswith("p2p")}
    assert len(p2p) == 12
    m = p2p[("p2p_unidir", (0, 1), "Unidirectional P2P=Enabled Bandwidth (P2P Writes)")]
    assert (m.value_gbps, m.p2p_enabled, m.provenance) == (5.72, False, "imported")
    assert "cannot access GPU 1" in m.notes[0]
    assert p2p[("p2p_bidir", (1, 0), "Bidirectional P2P=Disabled Bandwidth")].value_gbps == 6.10
    assert p2p[("p2p_latency", (0, 1), "P2P=Disabled Latency")].latency_us == 14.76
    copies = {m.kind: m for m in rig.measurements if m.kind in ("h2d", "d2h", "d2d")}
    assert (copies["h2d"].value_gbps, copies["d2h"].value_gbps, copies["d2d"].value_gbps) == (12.2, 13.2, 259.45)
    assert copies["h2d"].memory == "pinned" and copies["h2d"].rows[0].size_bytes == 32000000
    assert "518.9 GB/s" in copies["d2d"].notes[0]
    k = rig.measurements.index(m)
    assert rig.origins[f"measurements[{k}]"].endswith(f"{SESSION}:108 (CUDA samples p2pBandwidthLatencyTest)")
    assert {mm.kind for mm in rig.measurements if mm.backend == "nccl"} == {
        "all_reduce",
        "all_gather",
        "broadcast",
        "reduce",
        "alltoall",
    }
    found = codes(rig)
    assert [f.severity for f in found["GA206"]] == ["warn"] and "NS (not supported) 0-1" in found["GA206"][0].message


def test_old_cuda_samples_headers_and_mb_per_s() -> None:
    rig = import_files([OWN / "p2pBandwidthLatencyTest_2xv100-nvlink-old-headers.txt"])
    assert [g.bus_id for g in rig.gpus] == ["0000:06:00.0", "0000:07:00.0"] and rig.topology.p2p_read == [
        ["X", "OK"],
        ["OK", "X"],
    ]
    on = [m for m in rig.measurements if m.kind == "p2p_unidir" and m.p2p_enabled]
    assert [m.value_gbps for m in on] == [48.34, 48.34]
    rig = import_files([OWN / "bandwidthtest_2xv100-mbps-all-devices.txt"])
    h2d = next(m for m in rig.measurements if m.kind == "h2d")
    assert h2d.value_gbps == round(23704.5 * 2**20 / 1e9, 4) and h2d.gpus == [0, 1] and h2d.concurrent is False
    assert h2d.expected_gbps is None and h2d.expected_source.startswith("a sum of per-device figures")


def test_nccl_version_line_of_a_slurm_log() -> None:
    rig = import_files([SAMPLES / "nccl-allreduce_2x8xh200-slurm-log.txt"])
    assert rig.software.nccl_version == "2.27.5"
    assert rig.origins["software.nccl_version"].endswith("nccl-allreduce_2x8xh200-slurm-log.txt:50 (nccl-tests)")
    assert rig.host.hostname == "GPU-6550" and len(rig.gpus) == 8


@pytest.mark.parametrize(
    "line", ["# NCCL version 2.21.5+cuda12.4", "node1:123:123 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"]
)
def test_nccl_version_line_forms(line: str) -> None:
    t = body("nccl-allreduce_2x8xh200-slurm-log.txt").replace("NCCL version 2.27.5+cuda12.8", line)
    assert import_texts([("all_reduce_perf.txt", t)]).software.nccl_version == "2.21.5"


def test_topo_last_row_with_glued_cells_is_read_not_refused() -> None:
    # written from nvidia-smi topo -m's layout (tab-separated, as some terminals copy it): the paste ends at a row
    # two of whose cells run together ('NODENODE'), as in a real H100 paste cut after that row
    t = (
        "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\tPXB\tNODE\t0-55\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tNODENODE\t0-55\t0\t\tN/A\n"
    )
    rig = parse_topo_matrix(t, "x.txt")
    assert rig.topology.matrix == [["X", "NV18"], ["NV18", "X"]]
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus] == [("0-55", 0), ("0-55", 0)]
    assert any("cells glued together read apart ('NODENODE')" in p for p in rig.problems)
