"""Held-out set 19's log misreads, as classes (files in tests/corpus/s19-logs, s19-fabric, s19-nccl-debug and
s19-rdma-logs, gathered and read by hand before the tool ran on them; each case names its source thread), each also
checked on another public sample of the same form (its URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.importers.merge import import_files
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one
from tests.test_s17_logs import _rig

# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1107 (journalctl -f: a python process's read of a mapped
# GPU buffer oopses in the open kernel module's nvidia_vma_access; the first lines of the report)
OPEN_MODULE_OOPS = """\
Apr 28 10:17:39 nixos kernel: BUG: kernel NULL pointer dereference, address: 0000000000000030
Apr 28 10:17:39 nixos kernel: #PF: supervisor read access in kernel mode
Apr 28 10:17:39 nixos kernel: #PF: error_code(0x0000) - not-present page
Apr 28 10:17:39 nixos kernel: PGD 55c190067 P4D 55c190067 PUD 0
Apr 28 10:17:39 nixos kernel: Oops: Oops: 0000 [#1] SMP NOPTI
Apr 28 10:17:39 nixos kernel: RIP: 0010:nvidia_vma_access+0x1b/0x350 [nvidia]
"""

# https://github.com/ROCm/hip/issues/15 (its syslog prefix 'Mar 24 11:53:43 pandemonium ' cut): an oops in amdgpu
# on a machine whose NVIDIA driver printed its console notice just before: not the NVIDIA driver's crash
AMDGPU_OOPS = """\
kernel: [   13.184444] NVRM: Your system is not currently configured to drive a VGA console
kernel: [   13.312533] BUG: unable to handle kernel NULL pointer dereference at 0000000000000010
kernel: [   13.312537] IP: [<ffffffffc01cc246>] amdgpu_bo_list_set+0x196/0x3d0 [amdgpu]
kernel: [   13.312554] PGD 0
kernel: [   13.312556] Oops: 0000 [#1] SMP
"""


def _oopses(rig: Rig) -> list[Finding]:
    return [f for f in evaluate(rig) if (f.observed or {}).get("sign") == "driver-oops"]


def test_a_kernel_oops_in_the_nvidia_module_fails_as_the_driver_crashed(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/nvidia-docker/issues/377: driver 375.51 loads on an Azure VM, then "BUG: unable to
    # handle kernel NULL pointer dereference at 0000000000000340" with "IP: ... _nv011745rm+0x1f/0x170" (the
    # closed core's symbol, no module name): the driver crashed at load
    rig = import_files([_one("s19-logs/dmesg-375-51-azure-vm-nvidia-oops-null-deref-*.txt")])
    oops = [ev for ev in rig.kernel.events if ev.kind == "driver-oops"]
    assert len(oops) == 1 and "_nv011745rm" in oops[0].text and "0000000000000340" in oops[0].text
    (found,) = _oopses(rig)
    assert found.severity == "fail" and found.expected["action"] == "reboot"
    assert "driver" in (found.fix or "")
    rig = _rig(tmp_path, OPEN_MODULE_OOPS)
    (ev,) = [ev for ev in rig.kernel.events if ev.kind == "driver-oops"]
    assert "nvidia_vma_access" in ev.text and ev.line == 1
    assert [f.severity for f in _oopses(rig)] == ["fail"]


def test_a_kernel_oops_in_another_module_is_not_the_nvidia_drivers(tmp_path: Path) -> None:
    rig = _rig(tmp_path, AMDGPU_OOPS)
    assert [ev for ev in rig.kernel.events if ev.kind == "driver-oops"] == []
    assert _oopses(rig) == []


# https://github.com/pytorch/ci-infra/pull/490 (a CI runner pod's NCCL 2.12+ lines, its collector's time first)
SHM_EXTEND_FULL = """\
[2026-04-22 21:34:20] mt-l-x86iavx512-45-172-t4-4-csmpw-runner-g4sfw-workflow:202016:202235 [0] misc/shmutils.cc:88 \
NCCL WARN Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)

[2026-04-22 21:34:20] mt-l-x86iavx512-45-172-t4-4-csmpw-runner-g4sfw-workflow:202016:202235 [0] misc/shmutils.cc:132 \
NCCL WARN Error while creating shared memory segment /dev/shm/nccl-WU88OE (size 9637888), error: No space left on \
device (28)
mt-l-x86iavx512-45-172-t4-4-csmpw-runner-g4sfw-workflow:202016:202235 [0] NCCL INFO transport/shm.cc:551 -> 2
"""


def _shm(rig: Rig) -> list[Finding]:
    return [f for f in evaluate(rig) if f.code == "GA812"]


def test_nccls_no_room_in_dev_shm_warns_that_the_shared_memory_is_too_small(tmp_path: Path) -> None:
    # https://github.com/PaddlePaddle/Paddle/issues/55987: NCCL 2.8.4 in Docker, "include/shm.h:28 NCCL WARN Call to
    # posix_fallocate failed : No space left on device" then "Error while creating shared memory segment"
    rig = import_files([_one("s19-nccl-debug/nccl-2-8-4-docker-shm-posix-fallocate-*.txt")])
    assert rig.network.nccl_shm_full == "Call to posix_fallocate failed : No space left on device"
    (found,) = _shm(rig)
    assert found.severity == "warn" and "--shm-size" in (found.fix or "") and "--ipc=host" in (found.fix or "")
    rig = _rig(tmp_path, SHM_EXTEND_FULL)
    assert (rig.network.nccl_shm_full or "").startswith("Error: failed to extend /dev/shm/nccl-WU88OE to 9637892")
    assert [f.severity for f in _shm(rig)] == ["warn"]
    other = SHM_EXTEND_FULL.replace("No space left on device (28)\n\n", "Operation not permitted (1)\n\n", 1)
    assert _rig(tmp_path, other).network.nccl_shm_full is None  # not /dev/shm's size


def _links_down(rig: Rig) -> list[Finding]:
    return [f for f in evaluate(rig) if f.code == "GA822"]


def test_one_quoted_nccl_warn_line_without_host_or_rank_is_read_as_nccl_output(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/nccl/issues/905: the maintainer quotes "NCCL WARN NET/IB : Got async event : port
    # error" from the poster's log (IBV_EVENT_PORT_ERR: a port NCCL used lost its link)
    rig = import_files([_one("s19-nccl-debug/nccl-warn-net-ib-async-event-port-error-one-line-quoted_*.txt")])
    (ev,) = rig.kernel.events
    assert ev.kind == "link-down" and ev.text.endswith("NCCL NET/IB async event: port error")
    assert [f.severity for f in _links_down(rig)] == ["warn"]
    assert not [f for f in evaluate(rig) if f.code in ("GA801", "GA820")]
    # the same line with NCCL's source line first (transport/net_ib.cc, ncclIbAsyncThreadMain's WARN)
    rig = _rig(tmp_path, "transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n")
    assert [ev.kind for ev in rig.kernel.events] == ["link-down"]
    assert [f.severity for f in _links_down(rig)] == ["warn"]


# https://github.com/NVIDIA/nccl/issues/1518 (the poster's summary above the log: two WARN lines without a prefix)
BARE_SHM_WARNS = """\
NCCL WARN Cuda failure 'invalid argument'
NCCL WARN Error while creating shared memory segment /dev/shm/nccl-NzwJ7O (size 9637888)
"""


def test_bare_nccl_warn_lines_are_a_nccl_log_not_a_refusal(tmp_path: Path) -> None:
    rig = _rig(tmp_path, BARE_SHM_WARNS)  # read (a refusal raises), nothing in it said /dev/shm was full
    assert not rig.kernel.events and rig.network.nccl_shm_full is None
    assert (rig.source.detail or "").endswith(": NCCL debug log")
    assert [f for f in evaluate(rig) if f.severity in ("warn", "fail")] == []


# https://github.com/NVIDIA/nccl/issues/1573 (show_gids in a pod on macvlan sub-interfaces, tab-separated; the first
# two devices of its table)
MACVLAN_POD_GIDS = """\
root@test-macvlan-pod-2:/# show_gids
DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV
---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---
mlx5_0\t1\t4\tfe80:0000:0000:0000:a4ed:ccff:fe8b:1994\t\t\tv1\tnet1
mlx5_0\t1\t5\tfe80:0000:0000:0000:a4ed:ccff:fe8b:1994\t\t\tv2\tnet1
mlx5_0\t1\t6\t0000:0000:0000:0000:0000:ffff:0a98:000c\t10.152.0.12  \tv1\tnet1
mlx5_0\t1\t7\t0000:0000:0000:0000:0000:ffff:0a98:000c\t10.152.0.12  \tv2\tnet1
mlx5_1\t1\t4\tfe80:0000:0000:0000:9459:9bff:fe54:7704\t\t\tv1\tnet2
mlx5_1\t1\t5\tfe80:0000:0000:0000:9459:9bff:fe54:7704\t\t\tv2\tnet2
"""


def test_show_gids_is_read_into_the_rdma_ports_it_names(tmp_path: Path) -> None:
    # https://github.com/IBM/SpectrumScale_NETWORK_READINESS/pull/4: mlx5_0 port 1 on ens1f0, six GIDs (v1 and v2)
    rig = import_files([_one("s19-rdma-logs/show-gids-cx6-roce-v1-v2-ipv4-172-19-healthy_*.txt")])
    (port,) = rig.network.rdma_ports or []
    assert (port.device, port.port, port.link_layer, port.state) == ("mlx5_0", 1, "Ethernet", None)
    assert "6 GID(s), RoCE v1/v2 on ens1f0" in (port.why("state") or "")
    assert [f for f in evaluate(rig) if f.severity in ("warn", "fail")] == []
    rig = _rig(tmp_path, MACVLAN_POD_GIDS)
    assert [(p.device, p.port, p.link_layer) for p in rig.network.rdma_ports or []] == [
        ("mlx5_0", 1, "Ethernet"),
        ("mlx5_1", 1, "Ethernet"),
    ]
    assert "on net2" in (rig.network.rdma_ports or [])[1].why("state")


def test_show_gids_finding_no_gid_in_a_pod_is_noted_not_refused() -> None:
    # https://github.com/Mellanox/k8s-rdma-sriov-dev-plugin/issues/30: n_gids_found=0 in a pod whose eth0 is a veth
    # the paste's ibv_devices table below it names mlx5_0 (mlx5_1's row is cut): a device whose ports are not shown
    rig = import_files([_one("s19-rdma-logs/k8s-pod-show-gids-zero-veth-*.txt")])
    assert [(p.device, p.why("port")) for p in rig.network.rdma_ports or []] == [
        ("mlx5_0", "ibv_devices lists devices, not their ports")
    ]
    assert "n_gids_found=0" in (rig.network.why("rdma_ports") or "")
    assert not [f for f in evaluate(rig) if f.severity == "fail"]


def test_the_fabric_manager_start_scripts_usage_error_is_a_fabric_manager_that_did_not_start() -> None:
    # https://github.com/NVIDIA/gpu-operator/issues/1595: the driver container's "Starting NVIDIA fabric manager
    # daemon for NVLink5+...", then "Unknown option: /usr/share/nvidia/nvswitch/fabricmanager.cfg" and the start
    # script's usage text (its interface changed in driver 570.158.01: NVIDIA/gpu-driver-container#383)
    rig = import_files([_one("s19-fabric/k8s-driver-daemonset-fm-start-nvlink5-unknown-option-*.txt")])
    assert rig.fabric.manager_state == "failed"
    assert "Unknown option: /usr/share/nvidia/nvswitch/fabricmanager.cfg" in (rig.fabric.manager_detail or "")
    (found,) = [f for f in evaluate(rig) if f.code == "GA809"]
    assert found.severity == "fail" and "not the hardware" in (found.fix or "")
    assert "options" in (found.fix or "")


# NVIDIA/NVSentinel's own tests (tests/, verify_gpu_inforom_watch_condition): the GpuInforomWatch condition message
# its platform connector writes, https://github.com/NVIDIA/NVSentinel
INFOROM_CONDITION = (
    "ErrorCode:DCGM_FR_CORRUPT_INFOROM GPU:0 A corrupt InfoROM has been detected in GPU 0. Flash the InfoROM to "
    "clear this corruption. Recommended Action=COMPONENT_RESET;\n"
)


def test_an_nvsentinel_node_condition_is_another_checkers_verdict_that_warns(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/NVSentinel/issues/1471: DCGM_FR_IMEX_UNHEALTHY on a single p5 node without IMEX,
    # wrapped over three lines to "Recommended Action=CONTACT_SUPPORT;"
    rig = import_files([_one("s19-logs/nvsentinel-dcgm-imex-unhealthy-status-3-p5-single-node-no-imex_*.txt")])
    (hc,) = rig.node.health_checks or []
    assert (hc.tool, hc.check, hc.gpus) == ("NVSentinel", "DCGM_FR_IMEX_UNHEALTHY", [0])
    assert hc.detail.startswith("IMEX daemon status is -3 (not READY)")
    assert hc.detail.endswith("Recommended Action=CONTACT_SUPPORT;")
    (found,) = [f for f in evaluate(rig) if f.code == "GA827"]
    assert found.severity == "warn" and "IMEX" in (found.fix or "")
    rig = _rig(tmp_path, INFOROM_CONDITION)
    (hc,) = rig.node.health_checks or []
    assert (hc.check, hc.gpus) == ("DCGM_FR_CORRUPT_INFOROM", [0]) and "COMPONENT_RESET" in hc.detail
    assert [f.severity for f in evaluate(rig) if f.code == "GA827"] == ["warn"]
