"""Old public logs the importer used to refuse or misread, one class each: the corpus's paste and at least one other
real paste of the same form (each cited), read as an engineer reads them."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers.sections import split_sections
from tests.corpus_cases import import_paste, run_import

CORPUS = Path(__file__).parent / "corpus"
WORSE_THAN_INFO = ("warn", "fail")


# --- a syslog or journal of services only (no kernel line): a log with no GPU event, never refused --------------

# https://github.com/NVIDIA/nvidia-docker/issues/720 (the persistence daemon stopped by signal 15 on Azure, its
# syslog as posted, cut where the post's excerpt ends): tags without a pid ("nvidia-persistenced:")
PERSISTENCED_SYSLOG = """\
Apr 26 20:40:04 servername systemd[1]: Started ACPI event daemon.
Apr 26 20:40:08 servername systemd[1]: Configuration file /lib/systemd/system/nvidia-persistenced.service is marked \
executable. Please remove executable permission bits. Proceeding anyway.
Apr 26 20:40:08 servername systemd[1]: Starting NVIDIA Persistence Daemon...
Apr 26 20:40:08 servername nvidia-persistenced: Verbose syslog connection opened
Apr 26 20:40:08 servername nvidia-persistenced: Now running with user ID 116 and group ID 123
Apr 26 20:40:08 servername nvidia-persistenced: Started (3400)
Apr 26 20:40:08 servername nvidia-persistenced: device 44857:00:00.0 - registered
Apr 26 20:40:08 servername nvidia-persistenced: device 50479:00:00.0 - registered
"""


def test_a_syslog_of_services_only_is_a_log_with_no_gpu_event(tmp_path: Path) -> None:
    assert [s.kind for s in split_sections(PERSISTENCED_SYSLOG)] == ["daemon-log"]
    scan = import_paste(tmp_path, PERSISTENCED_SYSLOG)
    assert scan["kernel"]["lines_read"] == 8 and scan["kernel"]["events"] == []
    assert scan["gpus"] == []
    assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]


def test_the_persistence_daemons_journal_and_bumblebeeds_syslog_grep_are_read() -> None:
    # github.com/NVIDIA/nvidia-persistenced/issues/2, github.com/Bumblebee-Project/Bumblebee/issues/730
    for name, lines in (
        ("s16-logs/journal-nvidia-persistenced-registers-3d00-then-sigterm-shutdown_jelmd.txt", 11),
        ("s11-logs/syslog-grep-bumblebeed-restarts-only-no-kernel-lines-cut_deyneb.txt", 8),
    ):
        rc, scan = run_import([CORPUS / name])
        assert rc == 0 and scan is not None, name
        assert scan["kernel"]["lines_read"] == lines and scan["kernel"]["events"] == [], name


def test_an_ibm_csm_daemon_log_is_a_log_with_no_gpu_event() -> None:
    # github.com/IBM/CAST/pull/954: the CSM compute daemon's DCGM field reads and its 'unexpected case!' warnings
    name = "s19-logs/ibm-csm-daemon-dcgm-fields-gpu0-nvlink-bandwidth-unexpected-case-cut_besawn.txt"
    rc, scan = run_import([CORPUS / name])
    assert rc == 0 and scan is not None
    assert scan["kernel"]["lines_read"] == 12 and scan["kernel"]["events"] == []
    assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]


def test_a_service_line_another_row_reads_stays_that_rows() -> None:
    """systemd's 'Starting' line over the fabric manager's own lines is that output's preamble, not a log of its own
    (github.com/akash-network/website/pull/632, in tests/fixtures/beyond); systemd's line alone is a service
    log."""
    text = (Path(__file__).parent / "fixtures" / "beyond" / "fabricmanager-version-mismatch.txt").read_text()
    assert [(s.kind, s.start) for s in split_sections(text)] == [("fabric-manager", 3)]
    starting = text.splitlines()[1]
    assert "systemd[1]: Starting" in starting and [s.kind for s in split_sections(starting)] == ["daemon-log"]


# --- ibstatus's fatal error when no RDMA device is registered: an RDMA output that lists no adapter ---------------

# infiniband-diags' ibstatus script: fatal() { echo "Fatal error: " $*; ...}, hence the two spaces
NO_DEVICE = "Fatal error:  device '*': sys files not found (/sys/class/infiniband/*/ports)"


def test_ibstatus_without_a_device_lists_no_port(tmp_path: Path) -> None:
    # the Open MPI users list, "Infiniband errors", 2012-12-19 (github.com/open-mpi/ompi-www,
    # community/lists/users/2012/12/21011.php), a node whose driver had not started; and
    # github.com/clustervision/trinity/issues/219 (node045, its ConnectX firmware needed an update)
    ompi = f"[root@compute-01-08 ~]# ibstatus\n{NO_DEVICE}\n"
    assert [s.kind for s in split_sections(ompi)] == ["ibstatus"]
    for scan in (
        import_paste(tmp_path, ompi),
        run_import([CORPUS / "s16-rdma/prompt-ibstatus-fatal-no-sysfs-ports-2015-node045_hansthen.txt"])[1],
    ):
        assert scan is not None and scan["network"]["rdma_ports"] == []
        assert not [f for f in scan["findings"] if f["severity"] == "fail"]


def test_ibstatus_fatal_error_of_one_named_device_is_not_a_hostwide_none() -> None:
    """'device 'mlx5_8'' names one adapter: it says nothing of the others, so it is not read as 'no adapter'."""
    assert "ibstatus" not in [s.kind for s in split_sections(NO_DEVICE.replace("'*'", "'mlx5_8'"))]


# --- perftest's check of its port: ' Port number N state is S' (perftest_parameters.c, portStates) ----------------


def test_perftests_port_error_is_a_port_of_an_unnamed_device_in_that_state() -> None:
    # github.com/linux-rdma/perftest/issues/43 (the corpus paste, quoted with '  > '); the same user's report first
    # filed as github.com/lsgunth/perftest/issues/1 (ib_send_lat --duration=30 -H): the one real form found
    rc, scan = run_import(
        [CORPUS / "s15-rdma-logs/perftest-ib-send-lat-quoted-port-1-state-down-no-context_mycatnamedweb.txt"]
    )
    assert rc == 0 and scan is not None
    (port,) = scan["network"]["rdma_ports"]
    assert (port["port"], port["state"], port["phys_state"], port["rate_gbps"]) == (1, "DOWN", None, None)
    assert port["device"].startswith("?")
    assert [f["code"] for f in scan["findings"] if f["severity"] == "warn"] == ["GA803"]
    text = " Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device\n"
    assert [s.kind for s in split_sections(text)] == ["perftest"]


# --- a port in physical state Disabled: down until enabled (GA803 warn), as node health checks count it -----------


def test_a_disabled_port_warns_as_a_port_down() -> None:
    # github.com/DDNStorage/LustrePerfMon/issues/27 (mlx5_2 Disabled beside active HDR adapters) and
    # github.com/deepseek-ai/3FS/issues/39 (two ConnectX-6 Dx RoCE ports Down/Disabled): gpud takes every adapter
    # present as an expected LinkUp port and names Disabled ports among the missing (leptonai/gpud PRs 200, 482)
    for name, down in (
        ("s16-rdma-logs/ibstat-pre-cx6-mlx5-2-down-disabled-cut_sihara.txt", ["mlx5_2 port 1"]),
        (
            "s18-rdma-logs/ibstat-2-roce-ports-down-disabled-cx6dx-22-37-no-link_gaowayne.txt",
            ["mlx5_0 port 1", "mlx5_1 port 1"],
        ),
    ):
        rc, scan = run_import([CORPUS / name])
        assert rc == 0 and scan is not None
        ga803 = [f for f in scan["findings"] if f["code"] == "GA803"]
        assert [(f["severity"], f["subject"]) for f in ga803] == [("warn", d) for d in down], name
        assert not [f for f in scan["findings"] if f["severity"] == "fail"]


# --- NCCL's '(no module)': its own look for the peer-memory module (net_ib: no /sys/kernel/mm/memory_peers/nv_mem) --


def test_nccl_no_module_is_the_peer_memory_rule_and_a_loaded_module_is_not() -> None:
    # github.com/NVIDIA/nccl/issues/899: '(no module)' on mlx5_1..3, channels via NET/IB/0 (no GDRDMA): GA808;
    # github.com/NVIDIA/nccl/issues/1537: GDR disabled with nvidia_peermem loaded (lsmod): not the module, GA825
    def warned(name: str) -> list[str]:
        rc, scan = run_import([CORPUS / name])
        assert rc == 0 and scan is not None
        return [f["code"] for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]

    assert warned("nccl-debug/nccl-info-gdr-disabled-no-module_raninbow.txt") == ["GA808"]
    assert "GA808" not in warned("nccl-debug/nccl-info-gdr-disabled-peermem-loaded_blegear.txt")


# --- ibdev2netdev's '(Down)': the interface's carrier (/sys/class/net/NETDEV/carrier), not the RDMA port's state ----


def test_ibdev2netdev_down_is_the_interfaces_carrier_not_the_ports_state() -> None:
    # github.com/k8snetworkplumbingwg/sriov-network-operator/issues/382 (a pod's VF: 'mlx5_3 port 1 ==> net1 (Down)')
    rc, scan = run_import([CORPUS / "s16-rdma-logs/ibdev2netdev-ifconfig-sriov-ib-vf-pod-down-cut_jason-gideon.txt"])
    assert rc == 0 and scan is not None
    (port,) = scan["network"]["rdma_ports"]
    assert (port["device"], port["port"], port["state"]) == ("mlx5_3", 1, None)
    assert "net1 Down" in port["unavailable"]["state"]
    assert "GA803" not in [f["code"] for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]
