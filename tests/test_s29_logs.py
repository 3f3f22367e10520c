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
