"""Held-out set 25's classes of fabric manager, kernel, NCCL and RDMA logs, each from a real paste (the corpus file in
tests/corpus/s25-* and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.importers.errors import ImportParseError
from tests.corpus_cases import run_import
from tests.test_s21_logs import _judged

CORPUS = Path(__file__).parent / "corpus"

# https://docs.digitalocean.com/support/how-do-i-fix-a-system-not-initialized-error-on-multi-gpu-droplets/ (the
# "Align Fabric Manager and Driver Versions" section): /var/log/fabricmanager.log of an H100x8 Droplet whose fabric
# manager (535.230.02) is ahead of the loaded driver (535.216.01)
_DO_FM_LOG = (
    "[Apr 02 2025 15:45:55] [ERROR] [tid 11713] fabric manager NVIDIA GPU driver interface version 535.230.02 don't "
    "match with driver version 535.216.01. Please update with matching NVIDIA driver package.\n"
)


def test_a_fabric_manager_that_does_not_match_the_driver_fails_ga809_even_cut_before_the_drivers_version(tmp_path):
    """The fabric manager's version check logs 'fabric manager NVIDIA GPU driver interface version X don't match with
    driver version Y' and exits (NVIDIA Fabric Manager User Guide: the fabric manager and driver versions must match):
    the NVSwitch fabric is never set up. The line names the fabric manager's version first, so a paste cut before the
    driver's version (the corpus journal, cut at "don'") still shows the failed check."""
    aws = next((CORPUS / "s25-fabric").glob("ssh-journalctl-u-fabricmanager-*.txt")).read_text()
    cut = _DO_FM_LOG[: _DO_FM_LOG.index("don't") + 4]
    for text, fm in ((aws, "535.183.01"), (_DO_FM_LOG, "535.230.02"), (cut, "535.230.02")):
        found = _judged(tmp_path, text)
        fails = [f for f in found if f[1] == "fail"]
        assert [c for c, _, _ in fails] == ["GA809"], found
        f = tmp_path / "fm.txt"
        f.write_text(text)
        fab = import_files([f]).fabric
        assert fab.manager_state == "failed"
        assert fab.manager_detail and f"fabric manager {fm} does not match" in fab.manager_detail
    f = tmp_path / "fm.txt"
    f.write_text(_DO_FM_LOG)
    assert "driver 535.216.01" in (import_files([f]).fabric.manager_detail or "")


# https://github.com/xdevs23/linux-nitrous/issues/4: newer kernels' page-fault oops with its RIP in nvidia_modeset
_NITROUS_OOPS = """\
kernel: BUG: unable to handle page fault for address: ffffffffffffffe0
kernel: #PF: supervisor read access in kernel mode
kernel: #PF: error_code(0x0000) - not-present page
kernel: PGD 3c9214067 P4D 3c9214067 PUD 3c9216067 PMD 0
kernel: Oops: 0000 [#1] PREEMPT SMP NOPTI
kernel: CPU: 6 PID: 622 Comm: Xorg Tainted: G     U     OE      6.8.0-nitrous-1 #1 \
6588a369a336e39df13ddf4f55975e1c05f72e2e
kernel: Hardware name: ASUSTeK COMPUTER INC. ASUS TUF Dash F15 FX516PE_FX516PE/FX516PE, BIOS FX516PE.330 05/15/2023
kernel: RIP: 0010:nvDPAllocTimer+0x6d/0xa0 [nvidia_modeset]
kernel: RSP: 0018:ffffacebc101bc90 EFLAGS: 00010246
"""
# https://github.com/ROCm/legacy-rocm-build/issues/2198: the same oops in an AMD tool's task (rocm-bandwidth-test on
# amdgpu), cut after its Hardware name line as the corpus Unraid journal is: no NVIDIA module, no NVIDIA task
_ROCM_OOPS = """\
[  110.623513] BUG: unable to handle page fault for address: ffffa92a3eaffff8
[  110.623533] #PF: supervisor write access in kernel mode
[  110.623543] #PF: error_code(0x0002) - not-present page
[  110.623551] PGD 100000067 P4D 100000067 PUD 0
[  110.623559] Oops: 0002 [#1] PREEMPT SMP NOPTI
[  110.623568] CPU: 19 PID: 1639 Comm: rocm-bandwidth- Tainted: G        W          6.2.16-060216-generic #202305171336
"""


def test_newer_kernels_page_fault_oops_in_the_nvidia_driver_is_a_driver_oops(tmp_path):
    """Linux 4.20+ words an oops on a bad address "BUG: unable to handle page fault for address: ..." (older: "BUG:
    unable to handle kernel paging request at ..."; arch/x86/mm/fault.c). Its report names the driver by a code
    address in an NVIDIA module (RIP, call trace) or, cut before any, by the task it ran for (nvidia-smi): the
    driver's state is not to be trusted until a reboot (fail, GA820); an oops of another vendor's task is not the
    NVIDIA driver's."""
    unraid = next((CORPUS / "s25-logs").glob("journal-unraid-nvidia-smi-oops-*.txt")).read_text()
    for text in (unraid, _NITROUS_OOPS):
        found = _judged(tmp_path, text)
        assert [(c, s) for c, s, _ in found if s != "not-checked"] == [("GA820", "fail")], found
    f = tmp_path / "oops.txt"
    f.write_text(_NITROUS_OOPS)
    events = import_files([f]).kernel.events or []
    assert [(e.kind, e.line) for e in events] == [("driver-oops", 1)]
    assert "nvDPAllocTimer+0x6d/0xa0 [nvidia_modeset]" in (events[0].text or "")
    found = _judged(tmp_path, _ROCM_OOPS)
    assert not [c for c, s, _ in found if s in ("warn", "fail")], found


# https://github.com/NVIDIA/nccl/issues/901: four GPUs of one host whose NCCL uses its TCP NICs (NET/Socket)
_SOCKET_GDR_LINES = """\
qygpu047:411931:411931 [3] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 1 'lan3'
qygpu047:411929:411929 [1] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 3 'lan5'
qygpu047:411931:411931 [3] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 2 'lan4'
qygpu047:411930:411930 [2] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'lan2'
qygpu047:411929:411929 [1] NCCL INFO transport/p2p.cc:163 Cuda Alloc Size 2097152 pointer 0x7fef92a00000
qygpu047:411931:411931 [3] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 3 'lan5'
qygpu047:411930:411930 [2] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 1 'lan3'
qygpu047:411929:411929 [1] NCCL INFO === System : maxBw 160.0 totalBw 160.0 ===
"""


def test_the_socket_transports_gdr_disabled_lines_are_no_gpudirect_finding(tmp_path):
    """NCCL's socket transport reports every TCP NIC as "NET/Socket : GPU Direct RDMA Disabled for HCA N 'eth0'": a NIC
    without RDMA has no GPUDirect RDMA to lose (NCCL User Guide: GPUDirect RDMA is an InfiniBand/RoCE path), so GA825
    says nothing of it; the IB transport's same words still count (tests/test_import_s8_nccl_log.py)."""
    accelerate = next((CORPUS / "s25-nccl-debug").glob("accelerate-4gpu-socket-*.txt")).read_text()
    for text in (accelerate, _SOCKET_GDR_LINES):
        found = _judged(tmp_path, text)
        assert "GA825" not in [c for c, _, _ in found], found
        assert not [f for f in found if f[1] in ("warn", "fail")], found
        f = tmp_path / "nccl.txt"
        f.write_text(text)
        assert not import_files([f]).network.nccl_gdr_disabled
    # https://github.com/NVIDIA/nccl/issues/1537: the IB transport's line on ConnectX RoCE adapters
    ib = (
        "hostname1:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB "
        "primaryip:10.10.10.10<0>\n"
        "hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
    )
    assert [c for c, s, _ in _judged(tmp_path, ib) if s == "warn"] == ["GA825"]


# https://wiki.gentoo.org/wiki/InfiniBand ("IP over InfiniBand"): `ifconfig ib0` of an IPoIB interface brought up
# (UP) whose link is not (no RUNNING: no subnet manager or cable yet), with ifconfig's own hardware-address notice
_GENTOO_IFCONFIG_IB0 = """\
    ib0: flags=4099<UP,BROADCAST,MULTICAST>  mtu 2044
    Infiniband hardware address can be incorrect! Please read BUGS section in ifconfig(8).
            infiniband 00:00:04:04:FE:80:00:00:00:00:00:00:00:00:00:00:00:00:00:00  txqueuelen 256  (InfiniBand)
            RX packets 0  bytes 0 (0.0 B)
            RX errors 0  dropped 0  overruns 0  frame 0
            TX packets 0  bytes 0 (0.0 B)
            TX errors 0  dropped 0 overruns 0  carrier 0  collisions 0
"""


def test_ifconfig_of_an_ipoib_interface_is_read_not_refused(tmp_path):
    """net-tools' ifconfig prints an interface as "ib0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu 2044": UP is
    the administrative state, RUNNING the link's (netdevice(7) IFF_RUNNING); its "Infiniband hardware address can be
    incorrect!" is ifconfig's own notice (a 20-byte address it cannot print). The interface is read as ip link's is:
    its name, and a note, no finding, for an IPoIB interface whose link is not up (the interface's state, not the
    InfiniBand port's)."""
    azure = next((CORPUS / "s25-rdma-logs").glob("ifconfig-ib0-*.txt"))
    rig = import_files([azure])
    assert rig.host.net_interfaces == ["ib0"]
    assert not [p for p in rig.problems if "IPoIB" in p]
    assert not [f for f in _judged(tmp_path, azure.read_text()) if f[1] in ("warn", "fail")]
    f = tmp_path / "ifconfig.txt"
    f.write_text(_GENTOO_IFCONFIG_IB0)
    rig = import_files([f])
    assert rig.host.net_interfaces == ["ib0"]
    assert [p.split(": ", 2)[2] for p in rig.problems if "IPoIB" in p] == [
        "ib0: IPoIB interface up, but its state is not RUNNING: the network interface's state, not the InfiniBand "
        "port's (ibstat shows the port)"
    ]
    assert not [x for x in _judged(tmp_path, _GENTOO_IFCONFIG_IB0) if x[1] in ("warn", "fail")]


# https://github.com/ROCm/rocm_smi_lib/issues/108: `rocm-smi --showtopo` of four AMD GPUs (its matrices look like
# nvidia-smi topo -m's, with weights and hops where topo -m has link codes)
_ROCM_SHOWTOPO = """\
======================= ROCm System Management Interface =======================
=========================== Weight between two GPUs ============================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            52           52           52
GPU1   52           0            52           52
GPU2   52           52           0            52
GPU3   52           52           52           0

============================ Hops between two GPUs =============================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            3            3            3
GPU1   3            0            3            3
GPU2   3            3            0            3
GPU3   3            3            3            0

========================== Link Type between two GPUs ==========================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            PCIE         PCIE         PCIE
GPU1   PCIE         0            PCIE         PCIE
GPU2   PCIE         PCIE         0            PCIE
GPU3   PCIE         PCIE         PCIE         0
"""


def test_another_vendors_tool_beside_lines_a_reader_took_is_refused_as_that_vendors_paste(tmp_path):
    """rocm-smi (AMD's) with nothing NVIDIA in the text is refused as an AMD paste, one line saying so, whatever a
    reader took of the rest: TensorFlow's "Created device ... name: AMD Radeon RX 6800 XT" lines (a framework log,
    no NVIDIA GPU) or the matrices tried as nvidia-smi topo -m's."""
    tf_rocm = next((CORPUS / "s25-not-read").glob("tf-rocm-*.txt"))
    f = tmp_path / "showtopo.txt"
    f.write_text(_ROCM_SHOWTOPO)
    for path in (tf_rocm, f):
        rc, scan = run_import([path])
        assert (rc, scan) == (2, None)
        with pytest.raises(ImportParseError, match=r"rocm-smi output \(an AMD GPU tool\)"):
            import_files([path])
