"""Importing real, public outputs beyond the GPU (tests/fixtures/beyond, sources in SOURCES.md): the events,
ports and states a careful engineer reads from each, and findings no stronger than the evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.importers import detect, import_files
from gpuadvisor.rules import evaluate

DIR = Path(__file__).parent / "fixtures" / "beyond"


def imported(name: str) -> facts.Rig:
    return import_files([DIR / name])


def judged(rig: facts.Rig) -> list[tuple[str, str, str]]:
    return [
        (f.code, f.severity, f.message)
        for f in evaluate(rig)
        if f.code.startswith("GA8") and f.severity != "not-checked"
    ]


def test_dmesg_ctime_xid13_is_an_application_fault_and_xid109_a_gpu_reset() -> None:
    rig = imported("dmesg-T-xid13-xid109.txt")
    assert detect((DIR / "dmesg-T-xid13-xid109.txt").read_text()) == ["kernel-log"]
    ev = rig.kernel.events or []
    assert [(e.code, e.bus_id, e.line, e.time, e.pid, e.process) for e in ev] == [
        (13, "0000:cb:00", 2, "Fri Aug 30 11:43:09 2024", None, None),
        (13, "0000:cb:00", 3, "Fri Aug 30 11:43:09 2024", None, None),
        (13, "0000:cb:00", 4, "Fri Aug 30 11:43:09 2024", None, None),
        (109, "0000:cb:00", 5, "Fri Aug 30 11:43:14 2024", 1797828, "pt_main_thread"),
    ]
    assert ev[0].text == "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    assert rig.kernel.lines_read == 5 and rig.kernel.why("uptime_s") is not None
    assert judged(rig) == [
        (
            "GA801",
            "fail",
            "PCI 0000:cb:00: Xid 109 x1, Context Switch Timeout Error "
            "(ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR); process pt_main_thread",
        ),
        (
            "GA801",
            "info",
            "PCI 0000:cb:00: Xid 13 x3, Graphics Engine Exception (ROBUST_CHANNEL_GR_EXCEPTION) (repeated)",
        ),
    ]


def test_six_xid13_on_an_a800_stay_info_and_the_cut_line_is_not_an_event() -> None:
    rig = imported("dmesg-xid13-a800-cut.txt")
    ev = rig.kernel.events or []
    assert [(e.code, e.uptime_s) for e in ev][:2] == [(13, 93297.027938), (13, 93297.029837)]
    assert len(ev) == 6 and rig.kernel.lines_read == 7
    assert [(c, s) for c, s, _ in judged(rig)] == [("GA801", "info")]


def test_xid45_after_nvlink_xids_is_cleanup_and_says_what_it_followed() -> None:
    rig = imported("journal-xid45-after-145-149.txt")
    ev = rig.kernel.events or []
    assert len(ev) == 7 and {e.code for e in ev} == {45}
    assert {e.bus_id for e in ev} == {"0000:dc:00", "0000:ed:00", "0000:ba:00", "0000:97:00"}
    got = judged(rig)
    assert {s for _, s, _ in got} == {"info"} and len(got) == 4
    assert got[2][2] == (  # the cause first (was "... (after Xid 149, not in this log)" at the end)
        "PCI 0000:dc:00: Xid 45 x2 caused by Xid 149 (NVLINK: NETIR Error), Preemptive cleanup, due to previous "
        "errors (ROBUST_CHANNEL_PREEMPTIVE_REMOVAL); process python3 (its cause is not in this log)"
    )
    fixes = {f.fix for f in evaluate(rig) if f.code == "GA801"}
    assert (
        "follow the cause (find it in the full log: it is not in this one): Xid 149: WORKFLOW_NVLINK5_ERR; "
        "Xid 45 is cleanup" in fixes
    )
    assert not any("debug the job" in f for f in fixes)  # the NVLink cause, not the application


def test_elided_bus_ids_and_a_nonfatal_nvlink5_xid() -> None:
    rig = imported("journal-xid145-137-elided-bus.txt")
    assert [(e.code, e.bus_id, e.line) for e in rig.kernel.events or []] == [(145, None, 2), (137, None, 3)]
    assert judged(rig) == [
        ("GA801", "warn", "GPU (bus id elided in the paste): Xid 145 x1, NVLINK: RLW Error (NVLINK_RLW_ERROR)"),
        ("GA801", "info", "GPU (bus id elided in the paste): Xid 137 x1, NVLink Privilege Error (NVLINK_PRIV_ERR)"),
    ]


def test_fallen_off_the_bus_without_an_xid_line_is_read_as_xid_79() -> None:
    rig = imported("dmesg-fallen-off-bus-no-xid.txt")
    ev = rig.kernel.events or []
    assert [(e.code, e.bus_id, e.uptime_s, e.line) for e in ev] == [(79, "0000:b3:00", 1843.308145, 1)]
    assert [(c, s) for c, s, _ in judged(rig)] == [("GA801", "fail")]


def test_ibstat_hdr_one_port_disabled_one_cut() -> None:
    rig = imported("ibstat-a100-hdr-one-disabled.txt")
    ports = rig.network.rdma_ports or []
    assert [(p.device, p.ca_type, p.firmware, p.state, p.phys_state, p.rate_gbps, p.link_layer) for p in ports] == [
        ("mlx5_0", "MT4123", "20.33.1048", "ACTIVE", "LinkUp", 200.0, "InfiniBand"),
        ("mlx5_1", "MT4123", "20.33.1048", "DOWN", "Disabled", 10.0, "InfiniBand"),
        ("mlx5_2", "MT4117", "14.32.1010", "ACTIVE", "LinkUp", None, None),
    ]
    # the disabled port is a port down until it is enabled or declared unused (node health checks count it so);
    # HDR at 200 on a ConnectX-6 is its full rate: nothing else
    assert judged(rig) == [
        (
            "GA803",
            "warn",
            "mlx5_1 port 1 is DOWN (physical state Disabled); disabled: down until enabled, unless it "
            "is meant to be unused",
        )
    ]


def test_healthy_ibstat_after_an_elision_raises_nothing() -> None:
    rig = imported("ibstat-h100-ndr-elided.txt")
    assert [(p.device, p.state, p.rate_gbps, p.ca_type) for p in rig.network.rdma_ports or []] == [
        ("mlx5_5", "ACTIVE", 400.0, "MT4129")
    ]
    assert judged(rig) == []


def test_ibv_devinfo_port_down_without_rate() -> None:
    rig = imported("ibv_devinfo-port-down.txt")
    (p,) = rig.network.rdma_ports or []
    assert (p.device, p.ca_type, p.firmware, p.state, p.link_layer) == (
        "mlx5_0",
        "MT4129",
        "28.39.2048",
        "DOWN",
        "InfiniBand",
    )
    assert p.rate_gbps is None and "-v" in (p.why("rate_gbps") or "")
    assert judged(rig) == [("GA803", "warn", "mlx5_0 port 1 is DOWN (physical state not shown)")]


def test_ibstatus_roce_ports_and_a_cut_block() -> None:
    rig = imported("ibstatus-roce-cut.txt")
    assert [(p.device, p.state, p.phys_state, p.rate_gbps, p.link_layer) for p in rig.network.rdma_ports or []] == [
        ("mlx5_0", "ACTIVE", "LinkUp", 100.0, "Ethernet"),
        ("mlx5_1", "ACTIVE", "LinkUp", 100.0, "Ethernet"),
        ("mlx5_2", None, None, None, None),
    ]
    assert judged(rig) == []  # the cut port is not reported as down


def test_fabric_manager_active_and_a_fabric_error_status() -> None:
    fm = imported("fabricmanager-active.txt")
    assert fm.fabric.manager_state == "active"
    assert fm.fabric.manager_detail == "Active: active (running) since Thu 2024-05-16 23:22:02 UTC; 7s ago"
    assert judged(fm) == []
    fab = imported("smi-fabric-insufficient-resources.txt")
    (g,) = fab.fabric.gpus or []
    assert (g.state, g.status, g.clique_id, g.cluster_uuid) == (
        "completed",
        "Insufficient Resources",
        0,
        "00000000-0000-0000-0000-000000000000",
    )
    assert [(c, s) for c, s, _ in judged(fab)] == [("GA809", "fail")]


def test_lspci_acs_redirect_on_an_unnamed_bridge_is_only_info() -> None:
    rig = imported("lspci-acs-plx-switch.txt")
    (port,) = rig.network.acs or []
    assert port.bus_id == "" and port.control == {
        "SrcValid": True,
        "TransBlk": False,
        "ReqRedir": True,
        "CmpltRedir": True,
        "UpstreamFwd": True,
        "EgressCtrl": False,
        "DirectTrans": False,
    }
    assert [(c, s) for c, s, _ in judged(rig)] == [("GA806", "info")]


def test_outputs_combine_into_one_rig_with_origins() -> None:
    rig = import_files(
        [DIR / "ibstat-a100-hdr-one-disabled.txt", DIR / "dmesg-T-xid13-xid109.txt", DIR / "fabricmanager-active.txt"]
    )
    assert len(rig.network.rdma_ports or []) == 3 and len(rig.kernel.events or []) == 4
    assert rig.fabric.manager_state == "active"
    assert rig.origins["kernel.events"].startswith(str(DIR / "dmesg-T-xid13-xid109.txt") + ":1")
    assert rig.provenance["kernel"] == rig.provenance["network"] == "imported"


@pytest.mark.parametrize("name", sorted(p.name for p in DIR.glob("*.txt")))
def test_every_fixture_round_trips_through_the_scan_json(name: str) -> None:
    rig = imported(name)
    back = facts.from_dict(__import__("json").loads(rig.to_json()))
    assert back.kernel == rig.kernel and back.network == rig.network and back.fabric == rig.fabric


def test_sxid_counts_each_event_once_not_its_data_and_severity_lines() -> None:
    rig = imported("dmesg-sxid22013-nonfatal-cut.txt")
    assert [(e.kind, e.code, e.bus_id, e.line, e.uptime_s) for e in rig.kernel.events or []] == [
        ("sxid", 22013, "0000:04:00.0", 3, 38.17872),
        ("sxid", 22013, "0000:04:00.0", 6, 38.18783),
        ("sxid", 22013, "0000:04:00.0", 9, 38.194959),
    ]
    assert judged(rig) == [
        (
            "GA802",
            "warn",
            "NVSwitch 0000:04:00.0: SXid 22013 x3, non-fatal on links 44, 45, 46: Minion Link DLREQ interrupt "
            "(repeated)",  # non-fatal: info once, warn when it repeats
        )
    ]


def test_nvlink5_xids_fatal_fail_and_nonfatal_warn() -> None:
    rig = imported("kmsg-xid144-149-nvlink5.txt")
    assert [(e.code, e.bus_id) for e in rig.kernel.events or []] == [
        (144, "0000:01:00"),
        (149, "0000:00:00"),
        (149, "0000:00:00"),
    ]
    assert [(c, s) for c, s, _ in judged(rig)] == [("GA801", "fail"), ("GA801", "warn")]


def test_fabric_blocks_of_a_real_h100_sxm_nvidia_smi_q() -> None:
    """shared/samples smi-q_h100sxmx8_thamada.txt (8x H100 SXM): every GPU Completed / Success."""
    rig = import_files([Path(__file__).parent / "fixtures" / "import" / "samples" / "smi-q_h100sxmx8_thamada.txt"])
    assert [(g.gpu_index, g.state, g.status, g.clique_id) for g in rig.fabric.gpus or []] == [
        (i, "completed", "success", 0) for i in range(8)
    ]
    assert judged(rig) == []
    # what the outputs did not hold is unknown with that reason, not "not recorded"
    assert rig.network.why("iommu_mode") == facts.NOT_IN_SOURCE
    assert rig.node.why("shm_bytes") == facts.NOT_IN_SOURCE


def test_fabric_n_a_of_an_h100_vm_is_not_supported_not_a_fault() -> None:
    rig = import_files([Path(__file__).parent / "fixtures" / "h100-vm" / "smi.txt"])
    (g,) = rig.fabric.gpus or []
    assert (g.state, g.why("state")) == (None, facts.NOT_SUPPORTED)
    assert [f for f in evaluate(rig) if f.code == "GA809" and f.severity != "not-checked"] == []


def test_fabric_manager_log_lines_with_a_version_mismatch() -> None:
    rig = imported("fabricmanager-version-mismatch.txt")
    assert rig.fabric.manager_state == "failed"
    assert rig.fabric.manager_detail == (
        "fabric manager 550.127.05 does not match driver 550.120; the service's log shows it exiting with a failure"
    )
    assert judged(rig) == [
        (
            "GA809",
            "fail",
            "nvidia-fabricmanager is failed (fabric manager 550.127.05 does not "
            "match driver 550.120; the service's log shows it exiting with a "
            "failure)",
        )
    ]


def test_an_empty_process_table_of_real_nvidia_smi_is_no_process() -> None:
    """h100-vm/smi.txt: plain nvidia-smi with "No running processes found": the fact is [] and GA811 is checked."""
    rig = import_files([Path(__file__).parent / "fixtures" / "h100-vm" / "smi.txt"])
    assert rig.node.gpu_processes == []
    assert [f for f in evaluate(rig) if f.code == "GA811"] == []


def test_process_rows_of_nvidia_smi_both_layouts() -> None:
    from gpuadvisor.importers.beyond import smi_processes

    new = (
        "| Processes:                                                                              |\n"
        "|    0   N/A  N/A    123456      C   python3                                    30000MiB |\n"
        "|    1   N/A  N/A      2345      G   /usr/lib/xorg/Xorg                             4MiB |\n"
    )
    old = (
        "| Processes:                                                       GPU Memory |\n"
        "|    0     12345      C   python                                     30000MiB |\n"
    )
    assert [(p.gpu_index, p.pid, p.name, p.used_bytes) for p in smi_processes(new) or []] == [
        (0, 123456, "python3", 30000 * 2**20),
        (1, 2345, "/usr/lib/xorg/Xorg", 4 * 2**20),
    ]
    assert [(p.gpu_index, p.pid, p.name) for p in smi_processes(old) or []] == [(0, 12345, "python")]
    assert smi_processes("no table here") is None


def test_the_kernel_log_says_which_nvidia_kernel_module_is_loaded() -> None:
    assert imported("dmesg-fallen-off-bus-no-xid.txt").network.gpu_kernel_module == "open"
    assert imported("dmesg-T-xid13-xid109.txt").network.gpu_kernel_module is None


def test_fabric_block_of_a_real_h100_without_nvswitch_is_unknown_not_healthy() -> None:
    """Recorded on an H100 80GB HBM3 (driver 580): State, Status and the Health sub-block all N/A."""
    rig = imported("smi-fabric-h100-na.txt")
    (g,) = rig.fabric.gpus or []
    assert (g.state, g.status, g.clique_id, g.cluster_uuid, g.degraded_bandwidth) == (None, None, None, None, None)
    assert g.unavailable["state"] == facts.NOT_SUPPORTED
    assert g.unavailable["degraded_bandwidth"] == facts.NOT_SUPPORTED
    assert judged(rig) == []


@pytest.mark.parametrize(("value", "degraded", "fired"), [("Degraded", True, [("GA809", "warn")]), ("Full", False, [])])
def test_fabric_health_bandwidth_degraded_warns(value: str, degraded: bool, fired: list[tuple[str, str]]) -> None:
    text = (DIR / "smi-fabric-h100-na.txt").read_text()
    text = text.replace("State                                          : N/A", "State    : Completed")
    text = text.replace("Status                                         : N/A", "Status   : Success")
    text = text.replace("Bandwidth                                  : N/A", f"Bandwidth    : {value}")
    from gpuadvisor.importers.beyond import smi_fabric

    (g,) = smi_fabric(text, bare=True)
    assert (g.state, g.status, g.degraded_bandwidth) == ("completed", "success", degraded)
    rig = facts.Rig()
    rig.fabric.gpus = [g]
    assert [(c, s) for c, s, _ in judged(rig)] == fired
