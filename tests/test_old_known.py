"""Classes the older held-out sets still misread (their cases marked ``known``), each fixed as a class: a test on the
corpus file and on another public paste of the same form (its address cited)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.corpus_cases import CORPUS, import_paste
from tests.test_s28_rdma import _codes, _scan


def _notes(scan: dict[str, Any]) -> str:
    return "\n".join(scan["problems"])


# -- 1. iproute2's rdma res: the devices and their resource counts ------------------------------------------------


def test_rdma_res_summary_names_the_devices_and_their_counts() -> None:
    # github.com/ofiwg/libfabric/issues/8256: four mlx5 devices after 4026 libfabric clients connected
    scan = _scan(CORPUS / "s16-rdma-logs" / "rdma-res-mlx5-after-4026-clients_AdjoiningCat.txt")
    assert [p["device"] for p in scan["network"]["rdma_ports"]] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert all(p["state"] is None for p in scan["network"]["rdma_ports"])  # rdma res prints no port state
    assert "mlx5_2 has in use: pd 8056, cq 4030, qp 8053, cm_id 12079, mr 16159, ctx 4027, srq 2" in _notes(scan)
    assert not {"GA803", "GA822", "GA823", "GA826"} & set(_codes(scan))


# https://lore.kernel.org/linux-rdma/24f4f7e3-dada-5185-3988-2e821b321bc1@amazon.com/ (Gal Pressman, 30 Jul 2019):
# an EFA device's rdma res and rdma res show qp while ib_send_bw runs (kernel 5.3's older summary, no srq column)
EFA = """\
gal@server [~] $ rdma res
0: efa_0: pd 2 cq 4 qp 2 cm_id 0 mr 2 ctx 2
gal@server [~] $ rdma res show qp
link efa_0/1 lqpn 0 type UNKNOWN state RTS sq-psn 13400680 pdn 0 pid 17847 comm ib_send_bw
link efa_0/1 lqpn 1 type UNKNOWN state RTR sq-psn 0 pdn 1 pid 17820 comm ib_send_bw
"""


def test_rdma_res_and_its_queue_pairs_on_another_device(tmp_path: Path) -> None:
    scan = import_paste(tmp_path, EFA)
    (port,) = scan["network"]["rdma_ports"]
    assert port["device"] == "efa_0" and port["state"] is None  # a queue pair's RTS is not the port's state
    notes = _notes(scan)
    assert "efa_0 has in use: pd 2, cq 4, qp 2, cm_id 0, mr 2, ctx 2" in notes
    assert "efa_0/1: 2 queue pair(s) (RTS 1, RTR 1)" in notes
    assert "GA803" not in _codes(scan)


# -- 2. the device plugin marked a GPU unhealthy: out of the scheduler's pool ----------------------------------------


def _plugin_checks(scan: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in _codes(scan).get("GA827", []) if f["observed"]["tool"] == "NVIDIA device plugin"]


def test_a_gpu_the_device_plugin_marked_unhealthy_fails() -> None:
    # github.com/NVIDIA/k8s-device-plugin/issues/189: Xid 69 on GPU-7540a9b3-..., then "device marked unhealthy"
    scan = _scan(CORPUS / "s20-logs" / "k8s-device-plugin-xid69-gpu-7540a9b3-marked-unhealthy-2020_d1ablorus.txt")
    (f,) = _plugin_checks(scan)
    assert f["severity"] == "fail" and "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8" in f["message"]
    assert "restart the device plugin" in f["fix"]
    (xid,) = _codes(scan)["GA801"]  # Xid 69 is RESTART_APP in the catalog; marked unhealthy for it, it warns
    assert xid["observed"]["xid"] == 69 and xid["severity"] == "warn" and "marked the GPU unhealthy" in xid["message"]


# github.com/hhhyunwoo/hhhyunwoo.github.io, _posts/2023-05-06-gpu-uncorrectable-ecc.md (commit 24de199): one of eight
# GPUs missing from Allocatable, the device plugin's log with the UUID elided by the writer
ELIDED = """\
```bash
08:08:58 'nvidia.com/gpu' device marked unhealthy: GPU-XX-X-X-XX-XX
08:08:58 XidCriticalError: Xid=94 on Device=GPU-XX-X-X-XX-XX, the device will go unhealthy.
```
"""


def test_an_unhealthy_mark_with_the_uuid_elided_still_fails(tmp_path: Path) -> None:
    scan = import_paste(tmp_path, ELIDED)
    (f,) = _plugin_checks(scan)
    assert f["severity"] == "fail" and "GPU-XX-X-X-XX-XX" in f["message"]
    assert [(x["observed"]["xid"], x["severity"]) for x in _codes(scan)["GA801"]] == [(94, "warn")]


def test_the_unhealthy_mark_lands_on_the_gpu_of_that_uuid(tmp_path: Path) -> None:
    # github.com/akash-network/support/issues/244's plugin lines (klog form), repeated as the plugin repeats them, under
    # an nvidia-smi -L line of that UUID (the -L line in its form): one failed check, on GPU 0
    plugin = (
        "I0809 13:32:51.873541       1 health.go:185] XidCriticalError: Xid=94 on "
        "Device=GPU-3b6ec030-5adc-1847-e155-79f635584b4e; marking device as unhealthy.\n"
        "I0809 13:32:51.873567       1 server.go:292] 'nvidia.com/gpu' device marked "
        "unhealthy: GPU-3b6ec030-5adc-1847-e155-79f635584b4e\n"
    )
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3b6ec030-5adc-1847-e155-79f635584b4e)\n\n" + plugin * 2
    (f,) = _plugin_checks(import_paste(tmp_path, text))
    assert f["gpus"] == [0] and f["severity"] == "fail"


# -- 5. nvidia-smi nvlink -e with its GPU line's UUID left out ---------------------------------------------------------


def test_an_abridged_nvlink_e_block_in_a_job_snapshot_is_read() -> None:
    # github.com/NVIDIA/srt-slurm/pull/307: '===== node01 | before | ... =====', '$ nvidia-smi nvlink -e', then
    # 'GPU 0: NVIDIA GB300' (no UUID) over link 0's three error counters, all 0
    scan = _scan(
        CORPUS / "s15-logs" / "hwinfo-srt-slurm-before-nvlink-e-gb300-zero-errors-imex-channels-missing_arpera.txt"
    )
    (gpu,) = scan["gpus"]
    assert gpu["name"] == "NVIDIA GB300" and gpu["uuid"] is None
    assert not {"GA204", "GA205"} & set(_codes(scan))
    assert not any("not recognised" in p for p in scan["problems"])  # the script's banner is glue between steps


def test_a_bare_gpu_line_not_over_a_link_line_starts_nothing(tmp_path: Path) -> None:
    # 'GPU 0: NVIDIA GB300' alone is no nvlink output: only over its 'Link N:' line
    from gpuadvisor.importers.nvlink import starts

    assert starts(["GPU 0: NVIDIA GB300", "\t Link 0: Replay Errors: 0"], 0, None)
    assert not starts(["GPU 0: NVIDIA GB300", "some other line"], 0, None)


# -- 6. perftest found no RDMA device: libibverbs' failed check ------------------------------------------------------

# github.com/Mellanox/k8s-rdma-shared-dev-plugin/issues/169: ib_write_bw in a pod given rdma/hca
PERFTEST_169 = (  # the trailing spaces are perftest's (and the paste's)
    "ib_write_bw \n Did not detect devices \n If device exists, check if driver is up\n"
    " Unable to find the Infiniband/RoCE device\n"
)
# github.com/Mellanox/k8s-rdma-shared-dev-plugin/issues/106: the same in an Ubuntu 18.04 container (its perftest
# older than the node's kernel), pasted without the command
PERFTEST_106 = (
    "```\nDid not detect devices \nIf device exists, check if driver is up\nUnable to find the Infiniband/RoCE device\n"
    "```\n"
)


def test_perftest_finding_no_device_is_libibverbs_finding_none(tmp_path: Path) -> None:
    for text in (PERFTEST_169, PERFTEST_106):
        scan = import_paste(tmp_path, text)
        (f,) = _codes(scan)["GA829"]
        assert f["severity"] == "info"  # no reason shown: at most a note (GA829's threshold)
        assert f["observed"] == {"no-devices": "Did not detect devices"}
        assert "libibverbs found no RDMA device" in f["message"]


def test_perftest_after_ibv_devinfo_in_a_pod_keeps_the_abi_warning() -> None:
    # github.com/k8snetworkplumbingwg/sriov-cni/issues/348: ibv_devinfo's and ib_write_bw's no-device lines under the
    # provider's ABI warning: one GA829 warning with the rdma-core fix
    scan = _scan(
        CORPUS
        / "s28-rdma-logs"
        / "pod-rdma-link-bnxt-re-two-disabled-ibv-devinfo-abi-mismatch-no-devices_lululu-cloud.txt"
    )
    (f,) = _codes(scan)["GA829"]
    assert f["severity"] == "warn" and "ibv_devinfo found no device" in f["message"]
