"""Held-out set 29's classes of RDMA logs and outputs and kernel logs, each from a real paste (the corpus file in
tests/corpus/s29-* and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"


def _scan(tmp_path: Path, text: str):  # noqa: ANN202 (a Rig)
    f = tmp_path / "paste.txt"
    f.write_text(text)
    return import_files([f])


def _found(rig) -> list[tuple[str, str, str]]:  # noqa: ANN001 (a Rig)
    return sorted((x.code, x.severity, x.message) for x in evaluate(rig) if x.severity not in ("ok", "not-checked"))


# https://github.com/openucx/ucx/issues/8684 (gkatev's comment): the same UCX 1.13 message copied without its time
# and host prefix
_UCX_BARE = (
    "ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory. Please set max locked memory "
    "(ulimit -l) to 'unlimited' (current: 64 kbytes)\n"
)
# https://github.com/openucx/ucx/pull/7930 (ivankochin's CI log): UCX's own test run in a container, the later form
# that disables the RDMA transports and states the limit in its middle
_UCX_CI = """\
2022-03-01T08:52:58.1401374Z Got 0 errors and 4 warnings during the test
2022-03-01T08:52:58.1403598Z [     INFO ] < /__w/1/s/contrib/../src/uct/ib/base/ib_md.c:1193 RDMA transports are \
disabled because max locked memory limit (64 kbytes) is too low. Please set max locked memory (ulimit -l) to \
'unlimited' >
"""


_GKATEV = "ucx-ib-create-cq-cannot-allocate-memory-ulimit-l-64-kbytes-osu-bcast_gkatev.txt"


def test_an_rdma_library_stating_the_locked_memory_limit_is_that_limit_judged(tmp_path):
    """UCX says the limit it failed under ('Please set max locked memory (ulimit -l) to 'unlimited' (current: 64
    kbytes)', or 'max locked memory limit (64 kbytes) is too low'): 64 KiB is the process's RLIMIT_MEMLOCK, far below
    what RDMA registration needs, and the program used RDMA on the node: GA813 warns (a host configuration fix), and
    the line is judged (GA828 does not list it); no adapter fault."""
    corpus = (
        CORPUS / "s29-rdma-logs" / "ucx-ib-create-cq-cannot-allocate-memory-ulimit-l-64-kbytes-osu-bcast_gkatev.txt"
    )
    for text in (corpus.read_text(), _UCX_BARE, _UCX_CI):
        rig = _scan(tmp_path, text)
        assert rig.node.memlock_bytes == 64 * 1024 and rig.node.memlock_unlimited is False
        found = _found(rig)
        assert [(c, s) for c, s, _ in found] == [("GA813", "warn")], found
        assert "64 KiB" in found[0][2]


def test_libibverbs_rlimit_memlock_warning_is_the_limit_in_bytes(tmp_path):
    """libibverbs (rdma-core, libibverbs/init.c) warns 'RLIMIT_MEMLOCK is 32768 bytes.' when a process may lock 32 KiB
    or less; the number is bytes, not KiB."""
    text = "libibverbs: Warning: RLIMIT_MEMLOCK is 32768 bytes.\n    This will severely limit memory registrations.\n"
    rig = _scan(tmp_path, text)
    assert rig.node.memlock_bytes == 32768
    assert [(c, s) for c, s, _ in _found(rig)] == [("GA813", "warn")]


def test_a_failure_that_states_no_limit_reads_no_limit(tmp_path):
    """UCX before 1.14 printed 'ibv_create_cq(cqe=4096) failed: Cannot allocate memory' without the limit: the limit
    stays unknown (no GA813 from a guess)."""
    corpus = CORPUS / "s29-rdma-logs"
    rig = import_files(
        [corpus / "ucx-ib-iface-create-cq-4096-failed-cannot-allocate-memory-ucp-worker_thomasgillis.txt"]
    )
    assert rig.node.memlock_bytes is None and rig.node.memlock_message is None
    assert "GA813" not in [c for c, _, _ in _found(rig)]


# https://github.com/mej/nhc/issues/111: the same check on an Omni-Path node whose adapter was removed; NHC's
# check_hw_ib finds no user-level MAD driver and says so in its own words
_NHC_NO_ADAPTER = (
    "ERROR:  nhc:  Health check failed:  check_hw_ib:  Version mismatch between kernel OFED drivers and userspace "
    "OFED libraries.\n"
)


def test_nhcs_failed_fabric_port_check_fails_the_node(tmp_path):
    """LBNL NHC's check_hw_ib (scripts/lbnl_hw.nhc) dies 'No IB port hfi1_0:1 is ACTIVE (LinkUp 100 Gb/sec).' when no
    port (of the device named) is Active and LinkUp at the site's rate, and 'Version mismatch ...' when the adapter's
    user-level driver is not there: no fabric port the site requires is up, NHC has taken the node offline and no
    multi-node job runs on it: GA827 fails, and its fix reads the port's state with ibstat (the words in parentheses
    are what the site expects, not the state found: the port is not read as LinkUp, nor at 100 Gb/s)."""
    corpus = CORPUS / "s29-rdma-logs" / "nhc-check-hw-ib-no-port-hfi1-active-omnipath-inline-code_lipixx.txt"
    for text in (corpus.read_text(), _NHC_NO_ADAPTER):
        rig = _scan(tmp_path, text)
        found = [x for x in evaluate(rig) if x.severity not in ("ok", "not-checked")]
        assert [(x.code, x.severity, x.subject) for x in found] == [("GA827", "fail", "NHC check_hw_ib")], found
        assert "ibstat" in found[0].fix
        assert rig.network.rdma_ports is None  # NHC's expectation is no reading of the port


# https://github.com/deepseek-ai/DeepEP/issues/60 (MinhuiWan's ibv_devinfo): a RoCE adapter whose port is down, then
# the next adapter's block, cut here after its port count (the thread's paste goes on)
_DEEPEP_DEVINFO = """\
hca_id: mlx5_12
        transport:                      InfiniBand (0)
        fw_ver:                         22.38.1900
        node_guid:                      a088:c203:0030:9a0d
        sys_image_guid:                 a088:c203:0030:9a0c
        vendor_id:                      0x02c9
        vendor_part_id:                 4125
        hw_ver:                         0x0
        board_id:                       MT_0000000436
        phys_port_cnt:                  1
                port:   1
                        state:                  PORT_DOWN (1)
                        max_mtu:                4096 (5)
                        active_mtu:             1024 (3)
                        sm_lid:                 0
                        port_lid:               0
                        port_lmc:               0x00
                        link_layer:             Ethernet

hca_id: mlx5_13
        transport:                      InfiniBand (0)
        fw_ver:                         28.39.2048
        node_guid:                      58a2:e103:002a:1640
        sys_image_guid:                 58a2:e103:002a:1640
        vendor_id:                      0x02c9
        vendor_part_id:                 4129
        hw_ver:                         0x0
        board_id:                       MT_0000000838
        phys_port_cnt:                  1
"""


def test_ibv_devinfo_cut_inside_an_adapter_reads_the_ports_shown_and_names_the_cut_one(tmp_path):
    """ibv_devinfo of RoCE bonds (mlx5_bond_0, a bond's own RDMA device) or adapters: each port shown is read; an
    adapter whose block the paste cuts before its ports is named in the reason the port list is partial, never given
    a port it does not show."""
    corpus = CORPUS / "s29-rdma" / "ibv-devinfo-2x-cx7-roce-bond-active-mtu4096-cut_cscyuge.txt"
    for text, read, cut in (
        (corpus.read_text(), ("mlx5_bond_0", "ACTIVE"), "mlx5_bond_1"),
        (_DEEPEP_DEVINFO, ("mlx5_12", "DOWN"), "mlx5_13"),
    ):
        rig = _scan(tmp_path, text)
        ports = rig.network.rdma_ports or []
        assert [(p.device, p.state, p.link_layer) for p in ports] == [(*read, "Ethernet")]
        assert rig.network.why("rdma_ports") == f"{cut}: its ports are not shown (the paste is cut)"


# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/916 (kenorb): an oops on a 6.x kernel quoted from its RIP
# line down (its header above the lines quoted), the driver's own frames in the trace
_OGKM_916 = """\
RIP: 0010:nvidia_dev_put+0xb1/0xc0 [nvidia]
PKRU: 55555554
Call Trace:
 <TASK>
 nvidia_close+0x1a2/0x270 [nvidia]
 __fput+0xea/0x2d0
 ____fput+0x15/0x20
 task_work_run+0x5d/0xa0
"""


def test_an_oops_cut_above_its_header_with_its_code_address_in_the_driver_fails(tmp_path):
    """The kernel's oops report prints the faulting code address (x86-64 'RIP: 0010:...', i386 'EIP:', arm64 'pc :');
    inside an NVIDIA module ('_nv003083rm+0x87/0xad [nvidia]', 'nvidia_dev_put+0xb1/0xc0 [nvidia]') the driver
    faulted in the kernel whatever header the paste cut off: the GPU and the module are unusable until a reboot:
    GA820 fails once, naming the task where the report shows it (2.6 kernels' 'Pid: 6510, comm: Xorg')."""
    corpus = (
        CORPUS / "s29-lost-gpu" / "dmesg-2011-oops-nvidia-nv003083rm-xorg-after-suspend-register-dump-cut_foxbunny.txt"
    )
    for text, where, task in (
        (corpus.read_text(), "_nv003083rm+0x87/0xad [nvidia]", "Xorg"),
        (_OGKM_916, "nvidia_dev_put+0xb1/0xc0 [nvidia]", None),
    ):
        rig = _scan(tmp_path, text)
        events = [e for e in rig.kernel.events or [] if e.kind == "driver-oops"]
        assert len(events) == 1 and where in events[0].text, events
        assert (f"task {task}" in events[0].text) == (task is not None)
        found = [x for x in evaluate(rig) if x.severity == "fail"]
        assert [x.code for x in found] == ["GA820"] and "reboot" in found[0].message, found


def test_an_oops_with_its_header_is_one_event_and_an_address_elsewhere_none(tmp_path):
    """With its header ('BUG: kernel NULL pointer dereference') above, the report's RIP is that oops's (one event);
    its reprint after '---[ end trace ]---' too; a RIP in another module (mlx5_core) is no NVIDIA driver fault."""
    header = "BUG: kernel NULL pointer dereference, address: 0000000000000008\nOops: 0000 [#1] SMP NOPTI\n"
    reprint = "---[ end trace 0000000000000000 ]---\n" + _OGKM_916.split("\n", 1)[0] + "\n"
    rig = _scan(tmp_path, header + _OGKM_916 + reprint)
    assert [e.kind for e in rig.kernel.events or []] == ["driver-oops"]
    rig = _scan(tmp_path, "[ 1.0] RIP: 0010:esw_port_metadata_get+0x19/0x30 [mlx5_core]\n")
    assert [e.kind for e in rig.kernel.events or []] == []


def test_a_kernel_warnings_register_dump_is_no_oops(tmp_path):
    """A kernel warning (WARN) dumps the same registers, its RIP in the module that warned: with the Code line's trap
    the ud1 of WARN ('<67> 48 0f b9', corpus s25-logs: modprobe loading nvidia on a new kernel) or its 'WARNING: CPU:
    N PID: N at' header above, the RIP is no driver fault."""
    name = "journal-polish-month-modprobe-nvidia-kernel-warning-rip-in-nvidia-cut_hotline1337.txt"
    rig = import_files([CORPUS / "s25-logs" / name])
    assert [e for e in rig.kernel.events or [] if e.kind == "driver-oops"] == []
    warned = "[ 5.0] WARNING: CPU: 0 PID: 290 at nv.c:100 nv_probe+0x1/0x2 [nvidia]\n[ 5.0] " + _OGKM_916.split("\n")[0]
    assert [e.kind for e in _scan(tmp_path, warned + "\n").kernel.events or []] == []


# https://github.com/MrBr-github/lshca/issues/47 (lshca 3.8 on a BlueField-2): lshca's elastic view without its
# LnkStat column, the bond's RDMA device on its own row and a member interface with no RDMA device
_LSHCA_47 = """\
----------------------------------------------------------------------------------------------------------------------
  PCI_addr   |  RDMA  |     Net     | Numa | Link | Rate | SRIOV | Parent_addr | LnkCapWidth | LnkStaWidth | HCA_Type
----------------------------------------------------------------------------------------------------------------------
rdma_bond_0  | mlx5_0 | ovs-system  |  -1  | Eth  |  >!< | PF    |      -      |   x16 G4    |   x16 G4    | MT41686
0000:03:00.0 |        | en3f0pf0sf0 |  -1  | Eth  |  25  | PF    |      -      |   x16 G4    |   x16 G4    | MT41686
"""


def test_lshcas_hca_table_is_read_as_the_rdma_ports_it_lists(tmp_path):
    """lshca (UCX's CI prints it for its nodes): a row per RDMA device, its LnkStat ('down', 'init', 'actv') the
    port's logical state, Link its layer, HCA_Type its adapter; a port down and one in init are GA803's warnings (no
    fail: no GPU, nothing crashed); a PCIe link narrower than the card's (LnkStaWidth x8 of LnkCapWidth x16, lshca's
    '>!<') is a note; where lshca leaves LnkStat out, the state is not shown, never taken as up."""
    corpus = CORPUS / "s29-rdma-logs" / "ucx-ci-hca-table-mlx5-0-down-mlx5-1-init-pcie-x8-of-x16_avildema.txt"
    rig = import_files([corpus])
    got = [(p.device, p.state, p.link_layer, p.ca_type, p.bus_id) for p in rig.network.rdma_ports or []]
    assert got == [
        ("mlx5_0", "DOWN", "InfiniBand", "MT4119", "000a:11:00.0"),
        ("mlx5_1", "INIT", "InfiniBand", "MT4119", "000a:11:00.1"),
    ]
    found = [(x.code, x.severity, x.subject) for x in evaluate(rig) if x.severity not in ("ok", "not-checked")]
    assert found == [("GA803", "warn", "mlx5_0"), ("GA803", "warn", "mlx5_1")]  # a row per device, no port number
    assert [(p.port, p.why("port")) for p in rig.network.rdma_ports or []] == [
        (None, "lshca shows one row per RDMA device, not its port number")
    ] * 2
    assert any("x8 of x16" in p for p in rig.problems)
    rig = _scan(tmp_path, _LSHCA_47)
    (port,) = rig.network.rdma_ports or []
    assert (port.device, port.state, port.link_layer, port.rate_gbps) == ("mlx5_0", None, "Ethernet", None)
    assert "LnkStat" in (port.why("state") or "")
    assert not [x for x in evaluate(rig) if x.code == "GA803" and x.severity == "warn"]
