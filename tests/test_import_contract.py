"""The reading contract of ``gpuadvisor import`` (README, "What import reads"), each clause on real pastes.

A file is refused only when nothing in it is read; what a paste does not show is "not shown", never a value or a
finding; an output without its header or title is read when its rows are unambiguous (and says what it assumed);
``import -`` reads standard input; another vendor's output is refused in one line that says so.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from gpuadvisor import rules
from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_texts
from gpuadvisor.importers.sections import split_sections

FIX = Path(__file__).parent / "fixtures" / "import"


def body(path: Path) -> str:
    """A fixture without its leading '# source' lines (the tools never print them)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines) + "\n"


DELLA = body(FIX / "samples" / "topo-m_della-2xa100-mlx5_jdh4.txt")  # starts with two "$ " prompt lines
# rocm-smi as pasted in https://github.com/ROCm/ROCm/issues/1482 (4x MI100, ROCm 4.2)
ROCM_SMI = """rocm-user@d96d5240c68e:~$ rocm-smi


======================= ROCm System Management Interface =======================
================================= Concise Info =================================
GPU  Temp   AvgPwr  SCLK    MCLK     Fan   Perf  PwrCap  VRAM%  GPU%
0    34.0c  37.0W   300Mhz  1200Mhz  0.0%  auto  290.0W    0%   0%
1    33.0c  39.0W   300Mhz  1200Mhz  0.0%  auto  290.0W    0%   0%
================================================================================
============================= End of ROCm SMI Log ==============================
"""


def problems_about(rig, what: str) -> list[str]:
    return [p for p in rig.problems if what in p]


def test_prose_around_an_output_is_listed_with_its_line_numbers_and_the_output_read() -> None:
    text = "Here is the topology of node 3,\nas asked:\n" + DELLA
    rig = import_texts([("t.txt", text)])
    assert len(rig.gpus) == 2 and rig.topology.nics == ["mlx5_0", "mlx5_1"]
    notes = problems_about(rig, "not recognised, not read")
    assert notes == ["t.txt: lines 1-2: not recognised, not read (it starts 'Here is the topology of node 3,')"]
    assert not problems_about(import_texts([("t.txt", DELLA)]), "not recognised")  # prompts are no note


def test_an_output_that_cannot_be_read_does_not_refuse_the_others() -> None:
    """A topo -m whose cell is not a link code (its own error) beside a readable nvlink -s: the nvlink output is
    read, the topo -m listed as not read with its line and why."""
    nvlink = body(FIX / "samples" / "nvlink-s_3xa6000-one-unbridged_siboehm.txt")
    bad = DELLA.replace("GPU0\t X \tSYS", "GPU0\t X \tFOO")
    rig = import_texts([("x.txt", nvlink + bad)])
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [4, 4, 0]
    (note,) = problems_about(rig, "that output was not read")
    assert "'FOO' is not a link code" in note and note.startswith("x.txt: line ")
    with pytest.raises(InputError, match="'FOO' is not a link code"):
        import_texts([("x.txt", bad)])  # nothing else in the file: one clear refusal


def test_another_vendors_output_is_refused_in_one_line_that_says_so() -> None:
    with pytest.raises(InputError) as e:
        import_texts([("amd.txt", ROCM_SMI)])
    msg = str(e.value)
    assert "rocm-smi output (an AMD GPU tool)" in msg and "NVIDIA" in msg and "\n" not in msg


@pytest.mark.parametrize("prefix", ["> ", "% ", ">"])
def test_a_quoted_paste_reads_as_the_paste(prefix: str) -> None:
    quoted = "".join(prefix + line if line.strip() else ">\n" if prefix.startswith(">") else line
                     for line in DELLA.splitlines(keepends=True))  # fmt: skip
    a, b = import_texts([("q.txt", quoted)]), import_texts([("t.txt", DELLA)])
    assert a.topology.matrix == b.topology.matrix and a.topology.nics == b.topology.nics


def test_topo_m_rows_without_their_header_are_read_and_say_what_was_assumed() -> None:
    rows = "\n".join(x for x in DELLA.splitlines() if not x.startswith(("$", "\tGPU0")))
    rig = import_texts([("r.txt", rows + "\n")])
    full = import_texts([("t.txt", DELLA)])
    assert rig.topology.matrix == full.topology.matrix and rig.topology.nics == ["mlx5_0", "mlx5_1"]
    assert [g.cpu_affinity for g in rig.gpus] == ["0-63", "64-127"]
    (note,) = problems_about(rig, "no header line above the matrix")
    assert "(GPU0 GPU1 mlx5_0 mlx5_1 CPU Affinity NUMA Affinity)" in note


def test_p2p_latency_matrix_without_title_or_device_lines_is_read() -> None:
    text = body(FIX / "own" / "p2pBandwidthLatencyTest_2xv100-nvlink-old-headers.txt")
    matrix = text[text.index("Unidirectional P2P=Disabled") :]
    rig = import_texts([("m.txt", matrix)])
    assert [g.index for g in rig.gpus] == [0, 1] and all(g.name is None for g in rig.gpus)
    assert rig.measurements and problems_about(rig, "no 'Device: N, NAME, pciBusID' lines in the paste")
    untitled = text[text.index("\n") + 1 :]
    assert len(import_texts([("u.txt", untitled)]).measurements) == len(import_texts([("f.txt", text)]).measurements)


def test_bandwidth_test_without_its_title_is_read() -> None:
    text = body(FIX / "own" / "bandwidthtest_2xv100-mbps-all-devices.txt")
    untitled = text[text.index("\n") + 1 :]
    assert split_sections(untitled)[0].kind == "cuda-bw"
    full = import_texts([("f.txt", text)])
    assert [m.value_gbps for m in import_texts([("u.txt", untitled)]).measurements] == [
        m.value_gbps for m in full.measurements
    ]


def test_nccl_tests_copied_down_to_the_header_is_not_a_failed_run() -> None:
    rig = import_texts([("n.txt", body(FIX / "round3" / "nccl-allreduce_8xa100-hashless-header_nccl583.txt"))])
    (m,) = rig.measurements
    assert m.status == "skipped" and "not shown" in (m.error or "")
    assert not [f for f in rules.evaluate(rig) if f.severity in ("warn", "fail")]


def test_import_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.corpus_cases import run_import

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(DELLA.encode())))
    rc, scan = run_import([Path("-")])
    assert rc == 0 and scan is not None and len(scan["gpus"]) == 2
    assert scan["source"]["files"] == ["<stdin>"]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty: no command output in it"),
        (b"abc\x00def", "binary data"),
        (b"hello\n", "not recognised"),
        (ROCM_SMI.encode(), "rocm-smi output"),
    ],
)
def test_import_dash_refuses_bad_input_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: bytes, why: str
) -> None:
    from gpuadvisor.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(SystemExit) as e:
        main(["import", "-"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and err.count("\n") == 1 and err.startswith("gpuadvisor: error: <stdin>")
    assert why in err


V100 = body(FIX / "samples" / "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt")


@pytest.mark.parametrize("end", ["", "\n"])
def test_topo_m_cut_inside_a_cell_is_not_shown_never_a_refusal_or_a_stub(end: str) -> None:
    """The paste ends inside GPU2's row (an editor may add the newline): 'N' of NODE is no link code to refuse,
    and '0-19,' is no CPU affinity to store; the rows above are read whole."""
    lines = V100.splitlines(keepends=True)
    row = lines[3]
    for cut in (row.index("NODE") + 1, row.index("0-19,") + 5):
        rig = import_texts([("x.txt", "".join(lines[:3]) + row[:cut] + end)])
        assert [g.cpu_affinity for g in rig.gpus[:3]] == ["0-19,40-59", "0-19,40-59", None]
        assert rig.gpus[2].unavailable["cpu_affinity"].startswith("elided in the paste")
        assert rig.topology.matrix[0][:3] == ["X", "NV1", "NV1"]


def test_nccl_rank_line_cut_mid_name_keeps_the_device_not_the_stub() -> None:
    text = body(FIX / "round3" / "nccl-allreduce_8xa100-hashless-header_nccl583.txt")
    cut = text[: text.index("A100-SXM4-40GB", text.index("Rank  7")) + len("A100-SXM4-4")]
    rig = import_texts([("n.txt", cut)])
    assert len(rig.gpus) == 8 and rig.gpus[7].name is None
    assert {g.name for g in rig.gpus[:7]} == {"NVIDIA A100-SXM4-40GB"}
    assert not [f for f in rules.evaluate(rig) if f.code == "GA301" and f.severity == "warn"]


def test_a_paste_twice_in_one_file_is_read_once() -> None:
    text = body(FIX / "own" / "lspci-vv_dgx1-plx-switch-x8.txt")
    rig = import_texts([("x.txt", text + "\n" + text)])
    assert len(rig.gpus) == len(import_texts([("x.txt", text)]).gpus) == 3
    assert problems_about(rig, "pasted twice); read once")


DGX1 = (FIX / "own" / "lspci-vv_dgx1-plx-switch-x8.txt").read_text(encoding="utf-8")


def _lnk(bdf: str) -> list[str]:
    """The LnkCap/LnkSta lines of one device's block of the real DGX-1 lspci -vv (``-s BDF | grep Lnk``)."""
    block = DGX1.split(f"\n{bdf} ", 1)[1].split("\n\n", 1)[0]
    return [x for x in block.splitlines() if x.strip().startswith(("LnkCap:", "LnkSta:"))]


def test_a_grepped_root_or_switch_port_is_not_taken_for_a_gpu() -> None:
    """The PLX switch port 05:10.0's link lines alone ('Port #16'): a port's link, no GPU at it."""
    rig = import_texts([("p.txt", "\n".join(_lnk("05:10.0")) + "\n")])
    assert rig.gpus == []
    assert problems_about(rig, "the link shown is a PCIe port's (Port #16), not an endpoint's")


def test_lspci_numa_node_is_read() -> None:
    rig = import_texts([("l.txt", DGX1)])
    assert [g.numa_node for g in rig.gpus] == [0, 0, None]  # 3b:00.0 (rev ff) prints no NUMA line


def test_lspci_s_on_the_prompt_line_names_the_grepped_device() -> None:
    """`$ sudo lspci -vv -s 07:00.0 | grep -E 'LnkCap|LnkSta'` then its two lines: device 07:00.0's link."""
    text = "$ sudo lspci -vv -s 07:00.0 | grep -E 'LnkCap|LnkSta'\n" + "\n".join(_lnk("07:00.0")) + "\n"
    rig = import_texts([("s.txt", text)])
    (g,) = rig.gpus
    assert g.bus_id == "0000:07:00.0" and (g.pcie.current_width, g.pcie.max_width) == (8, 16)
    assert problems_about(rig, "read as device 0000:07:00.0's")


@pytest.mark.parametrize("end", ["", "\n"])
def test_lspci_cut_mid_line_is_not_shown_not_a_false_reason(end: str) -> None:
    lines = _lnk("07:00.0")
    cap, sta = lines
    cut = sta[: sta.index("Width") + 5]  # "LnkSta: Speed 8GT/s, Width"
    rig = import_texts([("c.txt", cap + "\n" + cut + end)])
    (g,) = rig.gpus
    assert g.pcie.current_gen == 3 and g.pcie.current_width is None
    assert g.pcie.unavailable["current_width"].startswith("elided in the paste")
    assert "printed no LnkCap" not in g.pcie.unavailable["current_width"]


# `lspci -vvv | grep ACSCtl`, as NCCL's troubleshooting guide asks for it (PCI Access Control Services), written
# by hand from the line lspci prints (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)
ACS_GREP = "$ sudo lspci -vvv | grep ACSCtl\n" + (
    "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n" * 2
)


@pytest.mark.parametrize("indent", [True, False])
def test_acsctl_grep_output_is_recognised_without_a_device_line(indent: bool) -> None:
    text = ACS_GREP if indent else ACS_GREP.replace("\t\tACSCtl", "ACSCtl")
    rig = import_texts([("acs.txt", text)])
    assert rig.gpus == [] and rig.network.acs is not None and len(rig.network.acs) == 2
    assert all(a.control["ReqRedir"] for a in rig.network.acs)


@pytest.mark.parametrize(
    "mark", ["xxxx", "XXXXXXXX", "<redacted>", "[hidden]", "****", "[N/A]", "ERR!", "Unknown Error", "...", "<snip>"]
)
def test_a_placeholder_is_never_a_value(mark: str) -> None:
    """The real L4 nvidia-smi -q with its serial, UUID, driver version and product name replaced by what people
    type over a value they hide or leave out: each is not shown (null with its reason), never the mark."""
    import re

    text = body(FIX / "samples" / "smi-q_l4_thamada.txt")
    for key in ("Serial Number", "GPU UUID", "Driver Version", "Product Name"):
        text = re.sub(rf"({key}\s+:\s+).*", lambda m: m.group(1) + mark, text, count=1)
    rig = import_texts([("q.txt", text)])
    (g,) = rig.gpus
    assert (g.uuid, g.name, rig.software.driver_version) == (None, None, None)
    assert g.unavailable["name"] and g.unavailable["uuid"]


def test_pairs_not_shown_do_not_silence_the_pairs_shown() -> None:
    """The real 8x RTX 4090 two-socket topo -m cut after GPU4's row: pairs 5-6, 5-7 and 6-7 are shown in
    neither of their cells ('?'); the 10 cross-socket pairs it does show are still judged (GA201 WARN)."""
    text = body(FIX / "samples" / "topo-m_8x4090-pcie-2socket_lukolszewski.txt")
    rig = import_texts([("t.txt", "".join(text.splitlines(keepends=True)[:6]))])  # header + rows GPU0-GPU4
    assert sum(c == "?" for row in rig.topology.matrix for c in row) == 6
    (ga201,) = [f for f in rules.evaluate(rig) if f.code == "GA201"]
    assert ga201.severity == "warn" and ga201.message.startswith("10 GPU pair(s)")
    assert "pairs the paste does not show are not judged" in ga201.message


# rccl-tests as pasted in https://github.com/ROCm/ROCm/issues/5571 (2x Radeon AI PRO R9700, two hosts)
RCCL = """$ NCCL_DMABUF_ENABLE=1  mpirun -H 10.20.1.125,10.20.1.126 -np 2 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 \
validation: 1 graph: 0
#
rccl-tests: Version develop:33cc4df
# Using devices
#  Rank  0 Group  0 Pid   4791 on     corona device  0 [0000:07:00] AMD Radeon AI PRO R9700
#  Rank  1 Group  0 Pid   5418 on     bootes device  0 [0000:07:00] AMD Radeon AI PRO R9700
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    47.35    0.00    0.00      0    45.17    0.00    0.00      0
          16             4     float     sum      -1    42.05    0.00    0.00      0    42.05    0.00    0.00      0
"""


def test_rccl_tests_rows_are_read_and_an_amd_run_refused_in_one_line() -> None:
    """The rows' layout (graph/agg columns in the header, '#wrong' columns) reads as nccl-tests'; the devices are
    AMD GPUs: refused in one line that says so (with an NVIDIA GPU in their place, read)."""
    with pytest.raises(InputError, match=r"rccl-tests on AMD GPUs \(AMD Radeon AI PRO R9700\)"):
        import_texts([("r.txt", RCCL)])
    rig = import_texts([("r.txt", RCCL.replace("AMD Radeon AI PRO R9700", "NVIDIA GeForce RTX 4090"))])
    (m,) = rig.measurements
    assert (m.kind, m.world_size, [r.size_bytes for r in m.rows]) == ("all_reduce", 2, [8, 16])


def test_nvidia_smi_i_on_the_prompt_line_gives_the_gpu_its_index() -> None:
    """The real L4 nvidia-smi -q after '$ nvidia-smi -q -i 3': the GPU shown is nvidia-smi's GPU 3 (position 0
    of the output would tie it to topo -m's GPU0)."""
    q = body(FIX / "samples" / "smi-q_l4_thamada.txt")
    rig = import_texts([("q.txt", "$ nvidia-smi -q -i 3\n" + q)])
    assert [g.index for g in rig.gpus] == [3]
    assert problems_about(rig, "its one GPU is GPU 3")
    assert [g.index for g in import_texts([("q.txt", q)]).gpus] == [0]


def test_a_gpu_row_the_paste_ends_in_is_a_gpu_not_dropped() -> None:
    """The real 2x RTX 2080 Ti session's plain nvidia-smi, cut inside GPU 1's first row (after its persistence
    cell, and inside its name): GPU 1 is shown, its other facts not; GPU 0 is read whole."""
    text = body(FIX / "samples" / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt")
    row = next(x for x in text.splitlines(keepends=True) if x.startswith("|   1  NVIDIA"))
    head = text[: text.index(row)]
    for cut, name in ((row.index("On ") + 5, "NVIDIA GeForce RTX 2080 Ti"), (row.index("GeForce"), None)):
        rig = import_texts([("s.txt", head + row[:cut])])
        assert [g.index for g in rig.gpus] == [0, 1]
        assert rig.gpus[0].bus_id == "0000:b4:00.0" and rig.gpus[1].name == name and rig.gpus[1].bus_id is None
        assert rig.gpus[1].unavailable["bus_id"].startswith("elided in the paste")


def test_a_device_listed_twice_in_lspci_is_one_device() -> None:
    """The real DGX-1 lspci -vv, then `lspci -vv -s 07:00.0` of one of its GPUs pasted after it: 3 GPUs, not 4."""
    text = body(FIX / "own" / "lspci-vv_dgx1-plx-switch-x8.txt")
    block = text[text.index("07:00.0 3D") :].split("\n\n", 1)[0]
    rig = import_texts([("l.txt", text + "$ sudo lspci -vv -s 07:00.0\n" + block + "\n")])
    assert [g.bus_id for g in rig.gpus] == ["0000:06:00.0", "0000:07:00.0", "0000:3b:00.0"]


def test_nvidia_smi_that_prints_only_a_lost_gpu_is_read() -> None:
    """The first line of the real r470 table paste, alone (nvidia-smi printed nothing else): one lost GPU."""
    line = (FIX / "own" / "smi_2xv100-r470-table.txt").read_text(encoding="utf-8").splitlines()[0]
    assert line.startswith("Unable to determine the device handle")
    rig = import_texts([("s.txt", "$ nvidia-smi\n" + line + "\n")])
    (g,) = rig.gpus
    assert g.bus_id == "0000:3b:00.0" and g.unavailable["name"].startswith("GPU fell off the bus or was lost")


def test_nvidia_smi_610_version_names_and_cuda_not_found() -> None:
    """Stated edits of real pastes into the form nvidia-smi 610 prints: -q's 'Driver Version : X [Deprecated; ...
    Use KMD Version instead]', the table's 'KMD Version:'/'CUDA UMD Version:'; and -q's 'CUDA Version : Not
    Found' (no CUDA library): the versions, never the note or 'Not Found'."""
    import re

    q = body(FIX / "samples" / "smi-q_l4_thamada.txt")
    drv = re.search(r"Driver Version\s+:\s+(\S+)", q)
    assert drv is not None
    dep = q.replace(drv.group(0), drv.group(0) + " [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]")
    assert import_texts([("q.txt", dep)]).software.driver_version == drv.group(1)
    nf = re.sub(r"(CUDA Version\s+:\s+).*", lambda m: m.group(1) + "Not Found", q, count=1)
    assert import_texts([("q.txt", nf)]).software.cuda_driver_version is None
    table = body(FIX / "samples" / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt")
    table = table.replace("Driver Version:", "KMD Version:").replace("CUDA Version:", "CUDA UMD Version:")
    sw = import_texts([("t.txt", table)]).software
    assert sw.driver_version is not None and sw.cuda_driver_version is not None


def test_nvidia_smi_l_uuids_and_a_table_of_bus_ids_are_one_machine() -> None:
    """-L shows UUIDs only, the plain table bus ids only: no id in common is no disagreement (it refused the file
    as two machines). -L lines written by hand for the real 2x RTX 2080 Ti session's GPUs (UUIDs made up)."""
    table = body(FIX / "samples" / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt")
    listing = (
        "$ nvidia-smi -L\nGPU 0: NVIDIA GeForce RTX 2080 Ti (UUID: GPU-00000000-1111-2222-3333-444444444444)\n"
        "GPU 1: NVIDIA GeForce RTX 2080 Ti (UUID: GPU-55555555-6666-7777-8888-999999999999)\n\n"
    )
    rig = import_texts([("s.txt", listing + table)])
    assert [(g.index, g.bus_id, (g.uuid or "")[:12]) for g in rig.gpus] == [
        (0, "0000:b4:00.0", "GPU-00000000"),
        (1, "0000:b5:00.0", "GPU-55555555"),
    ]
