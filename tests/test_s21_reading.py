"""Held-out set 21's reading classes (GPU outputs), each on its s21 paste and another real public sample of the same
form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts
from gpuadvisor.rules import evaluate

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"


def _read(path: Path | str, text: str | None = None):
    """The scan of a corpus file, or of ``text`` under the name ``path``."""
    name = Path(path).name
    return import_texts([(name, Path(path).read_text(encoding="utf-8") if text is None else text)])


def _unread(rig) -> list[str]:
    return [p for p in rig.problems if "not recognised" in p]


# --- class 1: a themed shell prompt, and a second table cut in its banner ---


def test_second_table_cut_in_driver_version_never_refuses_the_first():
    # https://github.com/bottlerocket-os/bottlerocket/pull/3718: 'nvidia-pr on Fedora ❯ k exec ... -- nvidia-smi',
    # one A10G table (driver 535.129.03, CUDA 12.2), then a second table cut at 'Driver Version: 535.129.'
    rig = _read(CORPUS / "s21-smi" / "kubectl-exec-smi-535-a10g-1e-then-second-table-cut-in-banner_arnaldo2792.txt")
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("535.129.03", "12.2")
    assert [(g.name, g.bus_id, g.power_limit_w) for g in rig.gpus] == [("NVIDIA A10G", "0000:00:1e.0", 300.0)]
    assert not any("❯" in p for p in _unread(rig))  # the prompt line is glue, not an unread output


_TRIPLE_PROMPT = """\
```shell
  Administrator@yuluo-laptop ~ ❯❯❯ nvidia-smi
Tue Mar 12 20:52:14 2024
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 527.37       Driver Version: 527.37       CUDA Version: 12.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ... WDDM  | 00000000:01:00.0 Off |                  N/A |
| N/A   54C    P0    N/A /  N/A |    109MiB /  3072MiB |      1%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def test_zsh_theme_prompt_with_repeated_glyph_is_glue():
    # a public CUDA setup guide on GitHub (a Windows laptop's zsh-themed prompt 'Administrator@yuluo-laptop ~ ❯❯❯'),
    # its table: driver 527.37, CUDA 12.0, one GPU at 00000000:01:00.0 with 3072MiB
    rig = _read("guide.md", _TRIPLE_PROMPT)
    assert rig.software.driver_version == "527.37"
    assert [(g.bus_id, g.memory_total_bytes) for g in rig.gpus] == [("0000:01:00.0", 3072 * 2**20)]
    assert _unread(rig) == []


def test_table_cut_inside_cuda_version_keeps_the_driver():
    # the same guide's banner, the file ending right after 'CUDA Version: 12.' (a cut, not a version)
    rig = _read("cut.txt", _TRIPLE_PROMPT.split("CUDA Version: 12.0")[0] + "CUDA Version: 12.")
    assert rig.software.driver_version == "527.37"
    assert rig.software.cuda_driver_version is None and "cut" in rig.software.unavailable["cuda_driver_version"]


# --- class 2: nvidia-smi topo -m's NICs judged without RDMA port state ---


def _ga805(rig) -> list[tuple[int, str, str]]:
    return sorted((f.gpus[0], str(f.severity), f.observed["level"]) for f in evaluate(rig) if f.code == "GA805")


def test_topo_without_nic_legend_or_ports_warns_no_near_nic():
    # https://github.com/NVIDIA/gds-nvidia-fs/issues/30: 'NIC0 SYS SYS' and 'NIC1 SYS SYS' to GPU0 and GPU1, no legend
    rig = _read(CORPUS / "s21-topo" / "topo-m-2gpu-nv4-2nic-pix-no-nic-legend-gds-vast_singhsaluja.txt")
    assert rig.network.rdma_ports is None
    assert _ga805(rig) == [(0, "warn", "SYS"), (1, "warn", "SYS")]


_BAOBAB = """\
(baobab)-[root@gpu048 ~]$ nvidia-smi topo -m
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV4     NODE    NODE    SYS     SYS     SYS     SYS     SYS     SYS     0-63    0               N/A
GPU1    NV4      X      NODE    NODE    SYS     SYS     SYS     SYS     SYS     SYS     0-63    0               N/A
GPU2    NODE    NODE     X      NV4     SYS     SYS     SYS     SYS     SYS     SYS     0-63    0               N/A
GPU3    NODE    NODE    NV4      X      SYS     SYS     SYS     SYS     SYS     SYS     0-63    0               N/A
GPU4    SYS     SYS     SYS     SYS      X      NV4     NODE    NODE    NODE    NODE    64-127  1               N/A
GPU5    SYS     SYS     SYS     SYS     NV4      X      NODE    NODE    NODE    NODE    64-127  1               N/A
GPU6    SYS     SYS     SYS     SYS     NODE    NODE     X      NV4     PHB     PHB     64-127  1               N/A
GPU7    SYS     SYS     SYS     SYS     NODE    NODE    NV4      X      NODE    NODE    64-127  1               N/A
NIC0    SYS     SYS     SYS     SYS     NODE    NODE    PHB     NODE     X      PIX
NIC1    SYS     SYS     SYS     SYS     NODE    NODE    PHB     NODE    PIX      X

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
"""  # noqa: E501


def test_topo_with_nic_legend_no_ports_judges_each_gpu_nearest():
    # https://hpc-community.unige.ch/t/3741 (UNIGE Baobab gpu048, 8 RTX A6000): GPUs 0-3 reach mlx5_0/1 only across
    # sockets (SYS), GPUs 4, 5, 7 across host bridges (NODE), GPU 6 through its CPU's host bridge (PHB: info)
    got = _ga805(_read("topo.txt", _BAOBAB))
    assert got == [
        *[(i, "warn", "SYS") for i in range(4)],
        (4, "warn", "NODE"),
        (5, "warn", "NODE"),
        (6, "info", "PHB"),
        (7, "warn", "NODE"),
    ]


# --- class 5: MSCCL++'s nccl-tests-like table (in-place first, no type column, no collective named) ---


def test_mscclpp_in_place_rows_read_collective_unknown():
    # https://github.com/microsoft/mscclpp/pull/117: '6291456  1572864  76.21  82.55  144.46  0' ... '25165824 ...
    # 271.5  92.70  162.23  0' under 'in-place ... out-of-place', only the in-place half printed
    rig = _read(CORPUS / "s21-nccl-tests" / "mscclpp-tests-1n8p-in-place-first-no-type-column-fenced_binyang2014.txt")
    (m,) = rig.measurements
    assert (m.kind, m.value_gbps, [r.busbw_gbps for r in m.rows]) == ("collective", 162.23, [144.46, 159.12, 162.23])
    assert "in-place" in m.method and any("collective not known" in n for n in m.notes)
    assert rig.gpus == []


_MSCCLPP_ALLTOALL = """\
[1,0]<stdout>:# Initializing MSCCL++
[1,0]<stdout>:# Setting up the connection in MSCCL++
[1,0]<stdout>:#
[1,0]<stdout>:#                                    in-place                       out-of-place          
[1,0]<stdout>:#       size         count     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
[1,0]<stdout>:#        (B)    (elements)     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
[1,0]<stdout>:  1073741824      16777216                                     23275   46.13   43.25      0
[1,0]<stdout>:
[1,0]<stdout>:# Out of bounds values : 0 OK
"""  # noqa: W291


def test_mscclpp_out_of_place_only_row_is_placed_by_its_column():
    # https://github.com/microsoft/mscclpp/pull/87 (2n-8p, mpirun's tags): the in-place half blank, the row's
    # values under the out-of-place columns: 23275 us, 46.13 algbw, 43.25 busbw
    (m,) = _read("alltoall.txt", _MSCCLPP_ALLTOALL).measurements
    assert (m.kind, m.value_gbps, m.rows[0].time_us, m.rows[0].size_bytes) == ("collective", 43.25, 23275.0, 1073741824)
    assert "out-of-place" in m.method


# --- class 4: perftest's bandwidth results as a measurement of the RDMA link ---


def test_perftest_post_list_gbits_row_read_as_rdma_bandwidth():
    # https://github.com/linux-rdma/perftest/issues/273: 'Device : ib0', 'Link type : Ethernet', one row
    # '8  224958464  0.00  0.48  7.498617' under 'BW average[Gb/sec]': 0.48 Gb/s = 0.06 GB/s (1e9 bits / 8)
    rig = _read(CORPUS / "s21-rdma" / "ib-write-bw-post-list-8-bytes-0.48gbps-7.5mpps-roce-ib0_shenweihai1.txt")
    (m,) = rig.measurements
    assert (m.kind, m.value_gbps, m.iters) == ("rdma_bw", 0.06, 224958464)
    assert "RDMA_Write Post List BW Test on ib0" in m.method and "Link type Ethernet" in m.method
    assert rig.gpus == [] and _unread(rig) == []


def test_perftest_use_cuda_header_cut_before_rows_is_read_not_refused():
    # https://github.com/linux-rdma/perftest/issues/241: --use_cuda's device list (four GPUs by PCIe address),
    # 'RDMA_Write BW Test' on mlx5_0, cut in its header: no result row, no GPU (addresses without domain/function)
    rig = _read(CORPUS / "s21-rdma" / "ib-write-bw-use-cuda-4-devices-a30-server-side-cut-in-header_yiltan.txt")
    assert (rig.gpus, rig.measurements, _unread(rig)) == ([], [], [])
    assert any("RDMA_Write BW Test on mlx5_0: no result row" in p for p in rig.problems)


_PIB_ATOMIC = """\
$ ib_atomic_bw -d pib_1 -A CMP_AND_SWAP localhost
---------------------------------------------------------------------------------------
                    Atomic CMP_AND_SWAP BW Test
 Dual-port       : OFF          Device         : pib_1
 Number of qps   : 1            Transport type : IB
 Connection type : RC
 TX depth        : 128
 CQ Moderation   : 100
 Mtu             : 4096[B]
 Link type       : IB
 Outstand reads  : 16
 rdma_cm QPs     : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 8          1000           1.70               1.67                 0.219031
---------------------------------------------------------------------------------------
"""


def test_perftest_mb_per_sec_is_mebibytes():
    # https://github.com/nminoru/pib/issues/4 (pib, a software IB driver): 'BW average[MB/sec]' 1.67; perftest's
    # format_factor for MB/sec is 0x100000 bytes: 1.67 * 2**20 / 1e9 GB/s
    (m,) = _read("atomic.txt", _PIB_ATOMIC).measurements
    assert (m.kind, m.iters) == ("rdma_bw", 1000)
    assert m.value_gbps == round(1.67 * 2**20 / 1e9, 6) and "on pib_1 (Transport type IB" in m.method


# --- class 7: a -q fragment of clocks only, no GPU line: one GPU of unknown identity ---


def test_q_clocks_fragment_is_one_gpu_of_unknown_identity():
    # https://github.com/wookayin/gpustat/issues/135: '    Clocks' (SM 2025 MHz) and '    Max Clocks' (SM 2100 MHz),
    # indented, no 'GPU 0000:..' line: -q prints both inside one GPU's record only
    rig = _read(CORPUS / "s21-smi-q" / "q-clocks-and-max-clocks-fragment-no-gpu-header_johncoates.txt")
    (g,) = rig.gpus
    assert (g.name, g.bus_id, g.uuid, g.sm_clock_max_mhz) == (None, None, None, 2100)
    assert _unread(rig) == []  # the Clocks block is read with Max Clocks, not left over


_MAX_CLOCKS = """\
    Max Clocks
        Graphics                    : 1987 MHz
        SM                          : 1987 MHz
        Memory                      : 5505 MHz
        Video                       : 1620 MHz
    Max Customer Boost Clocks
        Graphics                    : N/A
    Clock Policy
        Auto Boost                  : N/A
        Auto Boost Default          : N/A
    Processes                       : None
"""


def test_q_tail_from_max_clocks_is_one_gpu():
    # https://github.com/NVIDIA/nvidia-docker/issues/1049: the end of one GPU's -q record from 'Max Clocks'
    # (SM 1987 MHz) to 'Processes : None', the GPU line far above it
    (g,) = _read("q.txt", _MAX_CLOCKS).gpus
    assert (g.name, g.bus_id, g.sm_clock_max_mhz) == (None, None, 1987)


# --- class 6: nvme-cli 2.x's namespace table (nvme list -v) ---


def _namespaces(rig) -> list[tuple[str, int | None, str | None]]:
    return [(d.name, d.size_bytes, d.model) for p in rig.storage.paths for d in p.devices]


def test_nvme_list_v_namespace_table_cut_in_its_last_row():
    # https://github.com/linux-nvme/nvme-cli/pull/3633: 'Device Generic NSID Usage Format Controllers', nine
    # namespaces, '1.91 TB /   1.91 TB' ... '7.69 TB /   7.69 TB', the last row cut before its Controllers cell
    rig = _read(CORPUS / "s21-storage" / "nvme-list-namespace-table-device-generic-nsid-cut_adhipashelly.txt")
    got = _namespaces(rig)
    assert [n for n, _, _ in got] == [f"nvme{c}n{k}" for c in (10, 11, 12, 13) for k in (1, 2)] + ["nvme14n1"]
    assert [s for _, s, _ in got][6:] == [7_680_000_000_000, 7_690_000_000_000, 1_910_000_000_000]
    assert {m for _, _, m in got} == {None} and rig.gpus == []


_QEMU_NVME = """\
  # nvme list -v
  Device   SN                   MN                                       FR       TxPort Address        Subsystem    Namespaces      
  -------- -------------------- ---------------------------------------- -------- ------ -------------- ------------ ----------------
  nvme1    nvme-1               QEMU NVMe Ctrl                           8.0.0    pcie   0000:0f:00.0   nvme-subsys1 nvme1n1
  nvme0    nvme-0               QEMU NVMe Ctrl                           8.0.0    pcie   0000:00:05.0   nvme-subsys0 nvme0n1
  
  Device       Generic      NSID       Usage                      Format           Controllers     
  ------------ ------------ ---------- -------------------------- ---------------- ----------------
  /dev/nvme1n1 /dev/ng1n1   0x1          1.07  GB /   1.07  GB    512   B +  0 B   nvme1
  /dev/nvme0n1 /dev/ng0n1   0x1          1.07  GB /   1.07  GB    512   B +  0 B   nvme0
"""  # noqa: E501, W291, W293


def test_nvme_list_v_namespaces_under_its_controller_table():
    # https://lore.kernel.org/qemu-devel/20230505121216.30740-1-dwagner@suse.de/ (QEMU's emulated NVMe, nvme-cli
    # 2.x): two namespaces of 1.07 GB each, below the controller table (not read: no namespace size in it)
    assert _namespaces(_read("nvme.txt", _QEMU_NVME)) == [
        ("nvme1n1", 1_070_000_000, None),
        ("nvme0n1", 1_070_000_000, None),
    ]


# --- class 3: a bandwidth matrix's rows only (title and column header cut) ---


def _pairs(rig) -> dict[str, float | None]:
    return {m.method.rsplit(": ", 1)[1]: m.value_gbps for m in rig.measurements if m.kind == "gpu_pair_bw"}


def test_matrix_rows_cut_at_both_ends_read_as_gpu_pairs():
    # https://github.com/NVIDIA/gpu-driver-container/pull/149: rows 1-7 of an 8x8 matrix ('1 376.61 0.00 376.70
    # ...', diagonal 0.00), then the 'memcpyKernel Write 128b stride 512 threads/SM' matrix whole (row 0: '0.00
    # 376.80 376.81 ...'), then the next heading cut: 7x7 + 8x7 pairs, no GPU
    rig = _read(
        CORPUS / "s21-cuda-samples" / "nvlink-bw-memcpykernel-8x8-376gbs-matrices-cut-both-ends_guptanswati.txt"
    )
    assert len(rig.measurements) == 7 * 7 + 8 * 7 and rig.gpus == []
    first, second = rig.measurements[0], rig.measurements[49]
    assert (first.method.endswith("title not shown: GPU 1 -> GPU 0"), first.value_gbps) == (True, 376.61)
    assert "memcpyKernel Write 128b stride 512 threads/SM" in second.method and second.value_gbps == 376.80
    assert _unread(rig) == []


_P2P_ROWS = """\
     0 1604.16  56.95  56.78  57.30  57.30  56.43  56.55  56.77  56.35
     1  56.87 1641.20  57.28  57.00  57.36  57.03  57.04  56.93  56.81
     2  56.64  57.83 1642.95  57.18  57.23  56.91  56.79  56.95  56.69
"""


def test_p2p_rows_without_title_diagonal_own_copy():
    # https://github.com/ikawrakow/ik_llama.cpp/pull/1022 (9 GPUs' p2pBandwidthLatencyTest, rows pasted without
    # their title): the diagonal (1604.16: GPU 0's copy within its own memory) is not a pair; GPU 0 -> 1 is 56.95
    pairs = _pairs(_read("p2p.txt", _P2P_ROWS))
    assert len(pairs) == 3 * 8 and pairs["GPU 0 -> GPU 1"] == 56.95 and pairs["GPU 2 -> GPU 1"] == 57.83
    assert "GPU 0 -> GPU 0" not in pairs


def test_gdscheck_p_peer_direct_enabled_and_what_is_supported():
    # https://github.com/NVIDIA/gds-nvidia-fs/issues/74: GDS 1.13.0.11, 'NVMe : Supported', 'NFS : Supported',
    # '--Mellanox PeerDirect : Enabled', '--rdma_device_status  : Up: 8 Down: 0', cut in its cuFile properties
    rig = _read(CORPUS / "s21-storage" / "gdscheck-p-gds-1.13-nvme-nfs-rdma-up-8-cut-in-cufile-config_henrybewell.txt")
    assert rig.network.peermem_loaded is True and rig.gpus == []
    (note,) = [p for p in rig.problems if "GPUDirect Storage" in p]
    assert "GDS release version 1.13.0.11" in note and "supported: NVMe, NFS, Userspace RDMA" in note
    assert "Up: 8 Down: 0" in note and _unread(rig) == []


_GDSCHECK_ROCKY = """\
[root@node002 src]# /usr/local/cuda-12.2/gds/tools/gdscheck.py -p
 GDS release version: 1.7.1.12
 nvidia_fs version:  2.17 libcufile version: 2.12
 Platform: x86_64
 =====================
 DRIVER CONFIGURATION:
 =====================
 NVMe               : Unsupported
 NFS                : Unsupported
 Userspace RDMA     : Unsupported
 --Mellanox PeerDirect : Disabled
 --rdma library        : Not Loaded (libcufile_rdma.so)
 --rdma devices        : Not configured
 --rdma_device_status  : Up: 0 Down: 0
"""


def test_gdscheck_p_peer_direct_disabled():
    # https://github.com/NVIDIA/gds-nvidia-fs/issues/31 (Rocky 8.6, GDS 1.7.1.12): every path Unsupported,
    # '--Mellanox PeerDirect : Disabled'
    rig = _read("gdscheck.txt", _GDSCHECK_ROCKY)
    assert rig.network.peermem_loaded is False
    (note,) = [p for p in rig.problems if "GPUDirect Storage" in p]
    assert "GDS release version 1.7.1.12" in note and "supported: none shown" in note
