"""Real pastes, third round: each class of miss read as a careful engineer reads the paste by eye. Every test
reads a real output (tests/fixtures/import/round3, with its source URL; the shared samples) or a variant of one
made by a stated edit, and asserts facts, the reasons of unknowns and the findings (codes and severities)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor import facts, rules
from gpuadvisor.importers import import_files, import_texts
from gpuadvisor.importers.sanity import TOO_LARGE

HERE = Path(__file__).parent / "fixtures" / "import"
ROUND3 = HERE / "round3"
SAMPLES = HERE / "samples"
OWN = HERE / "own"


def body(path: Path) -> str:
    """The file without its leading '# source' lines (the tools never print them)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def found(rig: facts.Rig) -> dict[str, list[facts.Finding]]:
    out: dict[str, list[facts.Finding]] = {}
    for f in rules.evaluate(rig):
        if f.severity != "not-checked":
            out.setdefault(f.code, []).append(f)
    return out


def severities(rig: facts.Rig) -> set[tuple[str, str]]:
    return {(f.code, f.severity) for fs in found(rig).values() for f in fs}


# -- 1. topo -m with blank trailing affinity cells (a container) ---------------------------------------------

VLLM = ROUND3 / "topo-m_2xnv12-container-blank-affinity_vllm19607.txt"


def test_blank_affinity_cells_keep_the_nv12_matrix() -> None:
    rig = import_texts([("topo.txt", body(VLLM))])
    t = rig.topology
    assert t.matrix == [["X", "NV12"], ["NV12", "X"]]
    assert t.nics == [f"NIC{i}" for i in range(8)]
    assert t.nic_matrix == [["SYS"] * 6 + ["PXB", "PXB"]] * 2
    g0 = rig.gpus[0]
    assert g0.numa_node is None and g0.cpu_affinity is None
    assert "shows 1 value(s) (N/A) under 3 affinity columns" in g0.unavailable["numa_node"]
    assert "which ones is not shown" in g0.unavailable["cpu_affinity"]
    assert not any(sev == "fail" for _, sev in severities(rig))


# -- 2/3/4/5. lspci: pairs without device lines, (downgraded), slot evidence, prefixed device lines ---------

DGX1 = OWN / "lspci-vv_dgx1-plx-switch-x8.txt"


def _lnk_lines(text: str, bdf: str) -> list[str]:
    """The LnkCap/LnkSta lines of one device's block (what `lspci -vv -s BDF | grep Lnk` prints)."""
    block = text.split(f"\n{bdf} ", 1)[1].split("\n\n", 1)[0]
    return [x for x in block.splitlines() if re.match(r"\s*Lnk(Cap|Sta):", x)]


def test_gpu_and_its_port_grepped_together_stay_two_links() -> None:
    """Stated edit of a real DGX-1 lspci -vv: only the LnkCap/LnkSta lines of GPU 07:00.0 and then of the switch
    port above it (05:10.0), as `grep Lnk` leaves them. Before: the port's pair overwrote the card's."""
    text = DGX1.read_text(encoding="utf-8")
    grep = "\n".join(_lnk_lines(text, "07:00.0") + _lnk_lines(text, "05:10.0")) + "\n"
    rig = import_texts([("grep.txt", grep)])
    (g,) = rig.gpus
    assert (g.pcie.current_width, g.pcie.max_width) == (8, 16)
    assert [(h.port_type, h.max_width, h.current_width) for h in g.pcie.path] == [
        ("endpoint", 16, 8),
        ("root-port", 16, 8),
    ]
    assert g.pcie.downgraded == ["width"]
    assert any("read as the port above it" in p for p in rig.problems)
    (ga101,) = found(rig)["GA101"]
    assert ga101.severity == "fail" and "x8 where its slot and card support x16" in ga101.message


def test_x16_card_in_an_x8_slot_from_two_grepped_pairs() -> None:
    """The same, with the port's LnkCap edited to x8: an x16 card in an x8 slot is a slot limit (GA103), not a
    downgraded link."""
    text = DGX1.read_text(encoding="utf-8")
    port = [x.replace("Width x16", "Width x8") for x in _lnk_lines(text, "05:10.0")]
    rig = import_texts([("grep.txt", "\n".join(_lnk_lines(text, "07:00.0") + port) + "\n")])
    got = found(rig)
    assert "GA101" not in got
    (ga103,) = got["GA103"]
    assert ga103.severity == "warn" and "supports x16 but its slot allows only x8" in ga103.message


def test_fragment_without_slot_evidence_is_never_a_fail() -> None:
    """One GPU's pair alone (no port above shown): x8 of x16 is a warn that says the slot is not shown, never a
    fail; `check` then exits 0 at its default fail-on."""
    text = DGX1.read_text(encoding="utf-8")
    rig = import_texts([("grep.txt", "\n".join(_lnk_lines(text, "07:00.0")) + "\n")])
    (ga101,) = found(rig)["GA101"]
    assert ga101.severity == "warn"
    assert "x8 where the card supports x16 (its slot's maximum is not in this scan" in ga101.message


def test_downgraded_marker_is_evidence_without_lnkcap() -> None:
    """Stated edit of a real lspci -vvv (a non-GPU at x1 (downgraded) on the ASUS ESC8000A): its LnkSta line
    alone, the LnkCap cut off. lspci's own marker says the link trained below the card's capability."""
    src = (SAMPLES / "lspci-vvv_asus-esc8000a-nonGPU-width-x1-downgraded_stelline.txt").read_text(encoding="utf-8")
    (sta,) = [x for x in src.splitlines() if "LnkSta:" in x]
    assert "Width x1 (downgraded)" in sta
    rig = import_texts([("sta.txt", sta + "\n")])
    (g,) = rig.gpus
    assert (g.pcie.current_width, g.pcie.max_width, g.pcie.downgraded) == (1, None, ["width"])
    (ga101,) = found(rig)["GA101"]
    assert ga101.severity == "warn" and "x1 is marked (downgraded) by lspci" in ga101.message
    assert "the maximum (LnkCap) and the slot are not shown" in ga101.message


def test_speed_downgraded_marker_is_info() -> None:
    src = body(SAMPLES / "lspci-vvv_rtx6000ada-downgraded-2.5gts_stelline-asus.txt")
    (sta,) = [x for x in src.splitlines() if "LnkSta:" in x]
    rig = import_texts([("sta.txt", sta + "\n")])
    assert rig.gpus[0].pcie.downgraded == ["speed"]
    (ga102,) = found(rig)["GA102"]
    assert ga102.severity == "info" and "speed Gen1 is marked (downgraded)" in ga102.message


@pytest.mark.parametrize("prefix", ["Card: ", "GPU0: ", "user@box:~$ ", "(base) user@box:~$ "])
def test_device_lines_after_a_prefix(prefix: str) -> None:
    """Stated edit of a real lspci -vvv (RTX 6000 Ada): the device line after a label or a prompt, and a second
    copy of the block at 02:00.0: two GPUs, both named."""
    src = body(SAMPLES / "lspci-vvv_rtx6000ada-downgraded-2.5gts_stelline-asus.txt")
    block = src[src.index("01:00.0 VGA") :]
    text = prefix + block + "\n" + prefix.replace("0", "1") + block.replace("01:00.0 VGA", "02:00.0 VGA", 1)
    rig = import_texts([("p.txt", text)])
    assert [(g.bus_id, g.name) for g in rig.gpus] == [
        ("0000:01:00.0", "NVIDIA RTX 6000 Ada Generation"),
        ("0000:02:00.0", "NVIDIA RTX 6000 Ada Generation"),
    ]


def test_no_lspci_only_fail_without_slot_evidence_on_any_real_paste() -> None:
    """Across every real lspci paste here: GA101 fails only where the port above the GPU is in the paste."""
    for path in sorted(SAMPLES.glob("lspci*")) + sorted(OWN.glob("lspci*")):
        rig = import_texts([(path.name, body(path))])
        for f in found(rig).get("GA101", []):
            if f.severity == "fail":
                pos = next(i for i, g in enumerate(rig.gpus) if g.index in f.gpus)
                path_ = rig.gpus[pos].pcie.path
                assert len(path_) > 1 and path_[1].port_type in ("root-port", "downstream-port"), (path.name, f.message)


# -- 6. the same GPU measured under two numactl bindings -----------------------------------------------------

GEARSHIFFT = ROUND3 / "bandwidthTest-numactl_p100-two-nodes_gearshifft82.txt"


def test_same_gpu_twice_is_remote_numa_not_a_straggler() -> None:
    rig = import_texts([("bw.txt", body(GEARSHIFFT))])
    h2d = [m for m in rig.measurements if m.kind == "h2d"]
    # 12150.7 and 3783.4 MB/s (2**20 bytes/s) -> GB/s
    assert [(m.gpus, round(m.value_gbps or 0, 2)) for m in h2d] == [([0], 12.74), ([0], 3.97)]
    assert [(m.method or "").split(", under ")[1] for m in h2d] == ["numactl -m0 -N0", "numactl -m1 -N1"]
    ga604 = found(rig)["GA604"]
    assert {f.severity for f in ga604} == {"warn"}
    assert not any("peers' median" in f.message for f in ga604)  # never a GPU against itself
    (h,) = [f for f in ga604 if "h2d" in f.message]
    assert "4.0 GB/s under numactl -m1 -N1 against 12.7 GB/s under numactl -m0 -N0 (31%)" in h.message
    assert "NUMA node remote from the GPU" in h.message and "numactl -m0 -N0" in (h.fix or "")


# -- 7. P2P evidence -------------------------------------------------------------------------------------

TINYGRAD = ROUND3 / "p2pBandwidthLatencyTest_2x4090-p2p-no-gain_tinygrad44.txt"
MIXED = ROUND3 / "p2pBandwidthLatencyTest_7gpu-mixed-access-cut_aikitoria5.txt"


def test_cut_access_list_keeps_the_pairs_shown() -> None:
    rig = import_texts([("p2p.txt", body(MIXED))])
    t = rig.topology
    assert len(rig.gpus) == 7
    assert t.p2p_read is not None
    assert t.p2p_read[0] == ["X", "OK", "NS", "NS", "NS", "NS", "NS"]
    assert t.p2p_read[2] == ["NS", "NS", "X", "OK", "NS", "NS", "NS"]
    assert t.p2p_read[3] == ["U", "U", "U", "X", "U", "U", "U"]  # 'Device=3 CANNOT' is cut: not shown
    assert t.unavailable["p2p_read"].startswith(
        "CUDA samples p2pBandwidthLatencyTest shows the peer access of 18 of 42"
    )
    (ga206,) = found(rig)["GA206"]
    assert (
        ga206.severity == "warn"
        and "13 GPU pair(s)" in ga206.message
        and "the others are U (not shown)" in ga206.message
    )


def test_p2p_enabled_that_does_not_help_is_judged() -> None:
    rig = import_texts([("p2p.txt", body(TINYGRAD))])
    on = [m for m in rig.measurements if m.kind == "p2p_unidir" and m.p2p_enabled]
    off = [m for m in rig.measurements if m.kind == "p2p_unidir" and m.p2p_enabled is False]
    assert [m.value_gbps for m in on] == [6.6, 6.6] and [m.value_gbps for m in off] == [6.34, 6.34]
    ga603 = [f for f in found(rig)["GA603"] if "does not help" in f.message]
    assert len(ga603) == 1 and ga603[0].severity == "warn"
    assert "0->1, 1->0: 6.6 GB/s enabled vs 6.3 GB/s disabled" in ga603[0].message


def test_advise_uses_the_p2p_copy_measured_in_the_same_scan() -> None:
    from gpuadvisor.advisor import rigview

    rig = import_texts([("p2p.txt", body(TINYGRAD))])
    view = rigview.from_rig(rig)
    assert view.pcie_gbps == 6.6 and view.pcie_source.startswith("measured: GPU 0 -> GPU 1 copy 6.6 GB/s")
    bw = view.intra_busbw(2, nvlink=False)
    assert bw.source.startswith("from a copy measured in this scan")


# -- 8. ERR! and its kin ---------------------------------------------------------------------------------

WSL = ROUND3 / "smi_wsl-cuda-err_wsl11589.txt"


def test_cuda_version_err_is_not_a_version() -> None:
    rig = import_texts([("smi.txt", body(WSL))])
    sw = rig.software
    assert (sw.driver_version, sw.cuda_driver_version, sw.nvml_version) == ("546.80", None, "545.46")
    assert sw.unavailable["cuda_driver_version"].startswith("nvidia-smi printed 'ERR!': nvidia-smi could not read it")
    assert any("nvidia-smi 545.46 reports driver 546.80" in p and "WSL" in p for p in rig.problems)


def test_fan_and_power_err_are_kept_with_their_meaning() -> None:
    """Stated edit of the same real table: fan and power draw printed ERR! (as nvidia-smi does when the read
    fails; github.com/Azure/azhpc-diagnostics/issues/77 shows 'ERR! / 250W')."""
    text = body(WSL).replace(
        "| N/A   54C    P8              16W /  80W |", "| ERR!  54C    P8             ERR! /  80W |"
    )
    rig = import_texts([("smi.txt", text)])
    (g,) = rig.gpus
    assert g.power_draw_w is None and g.power_limit_w == 80.0 and g.temperature_c == 54.0
    assert g.unavailable["power_draw_w"].startswith("nvidia-smi printed 'ERR!'")
    assert any("GPU 0: fan speed: nvidia-smi printed 'ERR!'" in p for p in rig.problems)


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        ("ERR!", "could not read it"),
        ("[Unknown Error]", "unknown error"),
        ("[GPU requires reset]", "must be reset"),
    ],
)
def test_q_error_values_are_states_with_meaning(value: str, meaning: str) -> None:
    """Stated edit of a real nvidia-smi -q (L4): its power draw replaced by an error value."""
    text = body(SAMPLES / "smi-q_l4_thamada.txt")
    text, n = re.subn(r"(Power Draw\s+:\s+)[\d.]+ W", lambda m: m.group(1) + value, text, count=1)
    assert n == 1
    rig = import_texts([("q.txt", text)])
    why = rig.gpus[0].unavailable["power_draw_w"]
    assert rig.gpus[0].power_draw_w is None and why.startswith(f"nvidia-smi printed {value!r}") and meaning in why


# -- 9. topology judged from the matrix ------------------------------------------------------------------


def test_bridged_pair_beside_unbridged_pair_is_a_missing_bridge() -> None:
    """Stated edit of a real 4-GPU topo -m (Princeton Traverse, 0-1 and 2-3 each NV3): GPUs 2-3's NV3 replaced
    by NODE, as a pair whose bridge is missing shows."""
    text = body(SAMPLES / "topo-m_traverse-power9-4xv100-nv3_jdh4.txt")
    text = text.replace("GPU2\tSYS\tSYS\t X \tNV3", "GPU2\tSYS\tSYS\t X \tNODE").replace(
        "GPU3\tSYS\tSYS\tNV3\t X ", "GPU3\tSYS\tSYS\tNODE\t X "
    )
    rig = import_texts([("topo.txt", text)])
    assert rig.topology.matrix[2][3] == "NODE"
    ga204 = found(rig)["GA204"]
    assert sorted(f.gpus[0] for f in ga204) == [2, 3]
    assert all("while GPU pair(s) 0-1 (NV3) are joined by NVLink" in f.message for f in ga204)
    assert {f.severity for f in ga204} == {"warn"}  # no model named in a topo -m: a PCIe card is assumed


def test_the_unedited_pairs_raise_nothing() -> None:
    rig = import_files([SAMPLES / "topo-m_traverse-power9-4xv100-nv3_jdh4.txt"])
    # what was read (the paste's matrix as printed: 0-1 and 2-3 NV3, the rest SYS), so an empty read cannot pass
    assert rig.topology.matrix == [
        ["X", "NV3", "SYS", "SYS"],
        ["NV3", "X", "SYS", "SYS"],
        ["SYS", "SYS", "X", "NV3"],
        ["SYS", "SYS", "NV3", "X"],
    ]
    assert rig.topology.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert "GA204" not in found(rig)


# -- 11. numbers beyond 64 bits ----------------------------------------------------------------------------


def _huge_q() -> str:
    text = body(SAMPLES / "smi-q_l4_thamada.txt")
    text, n = re.subn(
        r"(FB Memory Usage\s*\n\s*Total\s*:\s*)\d+", lambda m: m.group(1) + "1" + "0" * 400, text, count=1
    )
    assert n == 1
    return text


def test_huge_number_is_null_with_its_reason() -> None:
    rig = import_texts([("q.txt", _huge_q())])
    g = rig.gpus[0]
    assert g.memory_total_bytes is None and g.unavailable["memory_total_bytes"] == TOO_LARGE
    assert g.name == "NVIDIA L4" and g.power_limit_w == 72.0  # the rest of the paste is read
    assert any("FB Memory Usage" not in p and TOO_LARGE in p for p in rig.problems)


@pytest.mark.parametrize(
    "command",
    [
        ["import", "{f}", "--json", "{out}"],
        ["scan", "--from-nvidia-smi", "{d}", "--json", "{out}"],
        ["plan", "--from-nvidia-smi", "{d}", "--model", "llama-3-8b"],
    ],
)
def test_huge_number_through_the_cli(command: list[str], tmp_path: Path) -> None:
    d = tmp_path / "seller"
    d.mkdir()
    f = d / "q.txt"
    f.write_text(_huge_q(), encoding="utf-8")
    out = tmp_path / "scan.json"
    args = [a.format(f=f, d=d, out=out) for a in command]
    r = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
    )
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert r.returncode in (0, 1), r.stderr
    if out.exists():
        g = json.loads(out.read_text())["gpus"][0]
        assert g["memory_total_bytes"] is None and g["unavailable"]["memory_total_bytes"] == TOO_LARGE


# -- 10. nccl-tests pastes ---------------------------------------------------------------------------------

SHEFFIELD = HERE / "found" / "nccl-allreduce_4xv100-pcie-e128m_sheffield-bessemer.txt"


def test_nccl_header_without_its_hashes() -> None:
    """Stated edit of a real all_reduce_perf output: every '#' removed, as GitHub renders those lines."""
    text = "".join(x[1:] if x.startswith("#") else x for x in body(SHEFFIELD).splitlines(keepends=True))
    rig = import_texts([("nccl.txt", text)])
    assert [g.name for g in rig.gpus] == ["Tesla V100-PCIE-32GB"] * 4
    (m,) = rig.measurements
    assert (m.kind, m.world_size, m.value_gbps, m.status) == ("all_reduce", 4, 9.4, "ok")


def test_nccl_paste_that_starts_at_the_first_row() -> None:
    """Stated edit: the paste starts at the first result row (header, rank lines and GPU names cut off)."""
    lines = body(SHEFFIELD).splitlines(keepends=True)
    text = "".join(lines[next(i for i, x in enumerate(lines) if x.split()[:1] == ["8"]) :])
    rig = import_texts([("nccl.txt", text)])
    assert rig.gpus == []
    (m,) = rig.measurements
    assert (m.kind, m.world_size, m.value_gbps, len(m.rows)) == ("all_reduce", None, 9.4, 25)
    assert m.unavailable["world_size"].startswith("the paste starts below nccl-tests' header")
    assert any("no column header in the paste" in n for n in m.notes)


def test_nccl_every_line_twice_every_process_rank_0_is_without_mpi() -> None:
    """Stated edit: the run as two processes of an nccl-tests built without MPI print it (nGpus 1, one Rank 0
    line each, every line twice): refused before; the finding is that no collective was measured."""
    out = []
    for x in body(SHEFFIELD).splitlines():
        if re.search(r"Rank\s+[123]\b", x):
            continue
        x = x.replace("nGpus 4", "nGpus 1")
        out += [x, x.replace("Pid 201685", "Pid 201686")]
    rig = import_texts([("nccl.txt", "\n".join(out) + "\n")])
    (m,) = rig.measurements
    assert (m.status, m.world_size) == ("failed", 1)
    assert m.error is not None and m.error.startswith("2 processes each report Rank 0 of a 1-GPU run")
    (ga606,) = found(rig)["GA606"]
    assert ga606.severity == "warn" and "built without MPI" in ga606.message
    assert "GA602" not in found(rig)  # a 1-GPU busbw is never judged as a slow collective


def test_topo_cut_inside_row_gpu6_keeps_the_27_pairs_shown() -> None:
    """Stated edit of a real DGX-1 topo -m (8x V100, NV1/NV2 hybrid cube mesh): the paste ends inside row GPU6
    (no newline after its fourth cell). Before, all 27 pairs shown were dropped with the one missing."""
    text = body(SAMPLES / "topo-m_dgx1-v100-16gb-mlx5_oneflow-dlperf.txt")
    row6 = next(x for x in text.splitlines() if x.startswith("GPU6"))
    cut = text[: text.index(row6)] + " ".join(row6.split()[:5])  # GPU6 SYS SYS NV1 SYS, file ends here
    rig = import_texts([("topo.txt", cut)])
    m = rig.topology.matrix
    assert m[0] == ["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"]
    assert m[6][:6] == ["SYS", "SYS", "NV1", "SYS", "NV1", "NV2"]  # GPU6's cells: its own, then the mirrors
    assert m[6][7] == m[7][6] == "?"
    assert sum(c == "?" for row in m for c in row) == 2
    assert rig.topology.unavailable["matrix"].endswith("1 of 28 GPU pairs not shown (?); the others kept")
    assert "GA204" not in found(rig)  # a pair not shown is never read as a missing NVLink


def test_check_does_not_fail_a_healthy_board_on_a_fragment(tmp_path: Path) -> None:
    """The x8/x8 fragment through the CLI: import, then check exits 0 (warn is below the default fail-on)."""
    text = DGX1.read_text(encoding="utf-8")
    frag = tmp_path / "lspci.txt"
    frag.write_text("\n".join(_lnk_lines(text, "07:00.0")) + "\n", encoding="utf-8")
    scan = tmp_path / "scan.json"
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "import", str(frag), "--json", str(scan)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "check", "--from", str(scan)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "GA101" in r.stdout


def test_q_fan_err_is_listed_not_dropped() -> None:
    """Stated edit of a real nvidia-smi -q (L4): Fan Speed printed ERR!. No fact holds a fan speed, so the failed
    read is listed among the import's problems with its meaning (never dropped silently)."""
    text = body(SAMPLES / "smi-q_l4_thamada.txt")
    text, n = re.subn(r"(Fan Speed\s+:\s+)N/A", lambda m: m.group(1) + "ERR!", text, count=1)
    assert n == 1
    rig = import_texts([("q.txt", text)])
    (p,) = [x for x in rig.problems if "Fan Speed" in x]
    assert p.startswith("q.txt: line 84: GPU 00000000:01:00.0: Fan Speed: nvidia-smi printed 'ERR!'")


def test_remote_numa_run_is_not_judged_as_a_slow_link() -> None:
    """The numactl paste with the P100's link as lspci shows a PCIe Gen3 x16 card (stated: the facts set in the
    test): GA601 judges the link on the run that shows what it gives (12.7 GB/s), not on the remote-NUMA one."""
    rig = import_texts([("bw.txt", body(GEARSHIFFT))])
    p = rig.gpus[0].pcie
    p.current_gen = p.max_gen = p.gpu_max_gen = 3
    p.current_width = p.max_width = 16
    ga601 = [f for f in rules.evaluate(rig) if f.code == "GA601" and f.severity != "not-checked"]
    assert not any(f.severity == "fail" for f in ga601), [f.message for f in ga601]
    assert {f.code for fs in found(rig).values() for f in fs if f.severity == "warn"} >= {"GA604"}


def test_real_hashless_nccl_header_is_read() -> None:
    """NVIDIA/nccl#583 as GitHub rendered it: no '#' on the header; 8 ranks under mpirun, names and devices."""
    rig = import_texts([("nccl.txt", body(ROUND3 / "nccl-allreduce_8xa100-hashless-header_nccl583.txt"))])
    assert [(g.index, g.name) for g in rig.gpus] == [(i, "NVIDIA A100-SXM4-40GB") for i in range(8)]
    assert rig.host.hostname == "AI-A100-Beethoven01"
    (m,) = rig.measurements
    # the paste was copied down to the column header: the rows are not shown, which is no failed run (no WARN)
    assert (m.kind, m.world_size, m.status) == ("all_reduce", 8, "skipped")
    assert m.error == "no result rows shown: the paste ends before the first size (not shown, not a failed run)"
    assert not [f for f in rules.evaluate(rig) if f.code == "GA606" and f.severity in ("warn", "fail")]
    failed = body(ROUND3 / "nccl-allreduce_8xa100-hashless-header_nccl583.txt") + (
        "AI-A100-Beethoven01: Test NCCL failure common.cu:958 'unhandled cuda error'\n"
    )
    (m,) = import_texts([("nccl.txt", failed)]).measurements
    assert m.status == "failed" and m.error is not None and "Test NCCL failure" in m.error


def test_huge_numbers_in_cuda_samples_are_left_out_not_a_crash() -> None:
    """Stated edits of the real bandwidthTest and p2pBandwidthLatencyTest pastes: one figure 400 digits long."""
    bw = body(GEARSHIFFT).replace("33554432                     12150.7", "3" + "0" * 400 + "    12150.7", 1)
    rig = import_texts([("bw.txt", bw)])
    assert any(TOO_LARGE in p and "the row is left out" in p for p in rig.problems)
    assert [round(m.value_gbps or 0, 2) for m in rig.measurements if m.kind == "h2d"] == [3.97]
    p2p = body(TINYGRAD).replace("1015.27   6.60", "1015.27   6" + "0" * 400 + ".60", 1)
    rig = import_texts([("p2p.txt", p2p)])
    (m,) = [m for m in rig.measurements if m.kind == "p2p_unidir" and m.p2p_enabled and m.gpus == [0, 1]]
    assert m.value_gbps is None and m.unavailable["value_gbps"] == TOO_LARGE


def test_real_downgraded_marker_without_lnkcap() -> None:
    """geerlingguy/raspberry-pi-pcie-devices#480: a Quadro RTX 8000's lspci copied from below its LnkCap line:
    lspci's own markers say the link trained below the card's capability; how far, and the slot, not shown."""
    rig = import_texts(
        [("lspci.txt", body(ROUND3 / "lspci-fragment_quadro-rtx8000-x1-downgraded-no-lnkcap_geerlingguy480.txt"))]
    )
    (g,) = rig.gpus
    p = g.pcie
    assert (p.current_gen, p.current_width, p.max_width, p.gpu_max_gen, p.downgraded) == (
        2,
        1,
        None,
        None,
        ["speed", "width"],
    )
    assert severities(rig) == {("GA101", "warn"), ("GA102", "info")}


def test_real_fragment_with_old_ok_markers() -> None:
    """janhq/jan#183: an RTX 4090 on a riser, two lines with the older '(ok)' markers: Gen1 of Gen4 at x16 is an
    idle-or-riser question (info), the width is fine, the slot is not shown."""
    rig = import_texts([("lspci.txt", body(ROUND3 / "lspci-fragment_rtx4090-riser-2.5gts_jan183.txt"))])
    (g,) = rig.gpus
    p = g.pcie
    assert (p.current_gen, p.gpu_max_gen, p.current_width, p.max_width, p.downgraded) == (1, 4, 16, 16, ["speed"])
    assert severities(rig) == {("GA102", "info")}


def test_all_affinity_cells_blank_is_not_a_missing_column() -> None:
    """Stated edit of the vLLM container dump: its N/A removed too, every affinity cell blank. The columns exist:
    the values are blank, not 'no such column'."""
    text = body(VLLM).replace(" N/A\n", "\n")
    rig = import_texts([("topo.txt", text)])
    assert rig.topology.matrix == [["X", "NV12"], ["NV12", "X"]]
    why = rig.gpus[1].unavailable["numa_node"]
    assert why.startswith("nvidia-smi topo -m printed nothing under NUMA Affinity for GPU1 (blank")
