"""Held-out set 23's classes of job, kernel and health-check logs, each from a real paste (the corpus file in
tests/corpus/s23-* and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.probes import kmsg_signs

from gpuadvisor.importers import import_files, nccl_log
from gpuadvisor.rules import evaluate
from tests.test_s21_logs import _judged, _worst

CORPUS = Path(__file__).parent / "corpus"


# https://github.com/ray-project/ray/issues/59778: Ray's "(RayWorkerWrapper pid=N, ip=ADDR) " prefix, the first
# line's cut at the start of the paste ("WorkerWrapper pid=2361) "), so no one prefix is on every line
_RAY_CUT = """\
WorkerWrapper pid=2361) k8s19:2361:2361 [0] NCCL INFO Channel
(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO P2P Chunksize set to 131072
(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO NCCL_MIN_P2P_NCHANNELS set by environment \
to 16.
(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO NCCL_NCHANNELS_PER_PEER set by environment \
to 16.
(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO Channel 00/0 : 16[17000] -> 18[21000] via \
P2P/IPC comm 0x5609976f9470 nRanks 32
(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:2506 [0] NCCL INFO New proxy send connection 0 from local \
rank 0, transport 0
"""
# https://github.com/aws/aws-ofi-nccl/issues/715: CloudWatch's "  | TIME | " column, libfabric's lines among NCCL's
_CLOUDWATCH = """\
  | 2024-12-04T07:19:43.480Z | algo-1:18569:18641 [7] NCCL INFO NET/OFI Internode latency set at 75.0 us
  | 2024-12-04T07:19:43.480Z | algo-1:18569:18641 [7] NCCL INFO NET/OFI Creating one domain per process
  | 2024-12-04T07:19:43.480Z | algo-1:18564:18638 [2] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)
  | 2024-12-04T07:19:43.480Z | \
libfabric:18563:1733296782::efa:ep_ctrl:efa_rdm_ep_set_shared_memory_permitted():1410<warn> \
FI_OPT_SHARED_MEMORY_PERMITTED set to false
  | 2024-12-04T07:19:43.480Z | algo-1:18563:18636 [1] NCCL INFO NET/OFI Global registrations supported
  | 2024-12-04T07:19:43.480Z | algo-1:18563:18636 [1] NCCL INFO Using non-device net plugin version 0
"""


def test_nccl_lines_behind_any_launcher_or_collector_prefix_are_read_as_the_nccl_log(tmp_path):
    s23 = CORPUS / "s23-nccl-debug"
    ray = next(s23.glob("ray-host-rank-prefixed-*.txt")).read_text()
    cloudwatch = next(s23.glob("cloudwatch-column-*.txt")).read_text()
    assert "(head, rank=0, pid=5634) [nccl-e9ef-7d4f-0:2]:nccl-e9ef-7d4f-0:11171:11240 [2] NCCL INFO" in ray
    assert "  | 2025-05-16T16:40:02.222-07:00 | ip-10-36-29-253:82:2548 [0] NCCL INFO" in cloudwatch
    for text in (ray, cloudwatch, _RAY_CUT, _CLOUDWATCH):
        f = tmp_path / "paste.txt"
        f.write_text(text)
        scan = import_files([f])  # read, not refused (exit 2)
        assert scan.gpus == []
        assert _worst([x for x in _judged(tmp_path, text) if x[1] != "not-checked"]) in ("ok", "info", "warn")
    # the line after the prefix is NCCL's own: what the readers take from it is as without the prefix
    assert nccl_log.split_runs(_RAY_CUT)[1] == "k8s17:581:581 [0] NCCL INFO P2P Chunksize set to 131072"
    f.write_text(ray)
    assert import_files([f]).network.nccl_nics is None  # sockets only: "Using network Socket", no NET/IB line
    # another output's line naming a host:pid pair is not an NCCL line: it needs NCCL's "[rank] NCCL INFO|WARN"
    assert not nccl_log.starts("Jan 25 18:15:26 node13 kernel: [382330.121233] NVRM: Xid (PCI:0000:05:00): 31")
    assert not nccl_log.starts("(pid=909608) host:12:34 [0] INFO something else")


# https://github.com/awsdocs/aws-deep-learning-amis (doc_source/tutorial-efa-using.md): the plugin's own test
# (nccl_message_transfer) printing aws-ofi-nccl's lines with its own logger, "INFO: Function: F Line: N: NET/OFI ..."
_OFI_TEST = """\
INFO: Function: ofi_init Line: 702: NET/OFI Forcing AWS OFI ndev 4
INFO: Function: ofi_init Line: 714: NET/OFI Selected Provider is efa
INFO: Function: main Line: 49: NET/OFI Process rank 1 started. NCCLNet device used on ip-172-31-15-30 is AWS Libfabric.
INFO: Function: main Line: 53: NET/OFI Received 4 network devices
INFO: Function: main Line: 57: NET/OFI Server: Listening on dev 0
"""


def test_aws_ofi_nccls_own_log_lines_are_read_as_the_nccl_net_plugins_lines(tmp_path):
    pdsh = next((CORPUS / "s23-nccl-debug").glob("pdsh-prefixed-aws-ofi-nccl-*.txt")).read_text()
    assert "10.3.35.83: WARN: Function: find_ofi_provider Line: 543: NET/OFI Couldn't find any optimal provider" in pdsh
    for text in (pdsh, _OFI_TEST):
        found = _judged(tmp_path, text)  # read, not refused
        assert _worst([x for x in found if x[1] != "not-checked"]) in ("ok", "info", "warn")
        assert not [x for x in found if x[0] in ("GA801", "GA826", "GA820") and x[1] in ("warn", "fail")]
    assert nccl_log.starts("WARN: Function: find_ofi_provider Line: 543: NET/OFI Couldn't find any optimal provider")
    assert not nccl_log.starts("WARN: Function: main, Line: 66, ---> something")  # another program's logger


# https://github.com/tloen/alpaca-lora/issues/123 (PyTorch), https://github.com/nagadit/DeepFaceLab_Linux/issues/89
# (TensorFlow 1.x naming the driver API's code); neither names a bus id
_ALPACA = """\
RuntimeError: CUDA error: uncorrectable ECC error encountered
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""
_TF = """\
F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of handling error Internal: \
failed initializing StreamExecutor for CUDA device ordinal 0: Internal: failed call to cuDevicePrimaryCtxRetain: \
CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered
"""


def test_an_applications_uncorrectable_ecc_error_fails_the_gpus_memory_on_no_named_device(tmp_path):
    s23 = CORPUS / "s23-logs/torch-runtimeerror-uncorrectable-ecc-slurm-node-dgk713_philipdarke.txt"
    watchdog = next((CORPUS / "s23-nccl-debug").glob("torchrun-tee-watchdog-uncorrectable-ecc-*.txt"))
    for text in (s23.read_text(), watchdog.read_text(), _ALPACA, _TF):
        found = [x for x in _judged(tmp_path, text) if x[1] in ("warn", "fail")]
        assert [(code, sev) for code, sev, _ in found] == [("GA302", "fail")]
        assert "names none" in found[0][2]  # no device on the line: none guessed
        (ev,) = import_files([tmp_path / "paste.txt"]).kernel.events
        assert (ev.bus_id, ev.gpu_index, ev.code) == (None, None, 214)
    # a line that names the GPU by its bus id (NVML's form) puts the error on it
    f = tmp_path / "paste.txt"
    f.write_text("GPU 00000000:3B:00.0: CUDA error: uncorrectable ECC error encountered\n")
    (ev,) = import_files([f]).kernel.events
    assert ev.bus_id == "0000:3b:00.0"


# AzNHC's GPU-count check (https://github.com/Azure/azurehpc-health-checks, customTests/azure_gpu_count.nhc: its
# die() message, as NHC prints it); and a site's IB check failing (corpus/s16-rdma-logs' NHC run): no fabric port the
# site requires is up, the node is offline for multi-node jobs: it fails too (tests/test_s29_logs.py)
_AZNHC_COUNT = (
    "ERROR:  nhc:  Health check failed:  check_gpu_count: Expected to see 8 but found 7. FaultCode: NHC2009\n"
)
_IB = "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port is ACTIVE (LinkUp 100 Gb/sec).\n"


def test_nhcs_failed_gpu_count_and_fabric_port_checks_fail_the_node(tmp_path):
    deepops = (CORPUS / "s23-logs/nhc-v-health-check-failed-check-nv-gpu-count-2-returned-1_ajdecon.txt").read_text()
    assert "Check check_nv_gpu_count 2 returned 1" in deepops
    for text, check in ((deepops, "check_nv_gpu_count"), (_AZNHC_COUNT, "check_gpu_count")):
        found = [x for x in _judged(tmp_path, text) if x[1] in ("warn", "fail")]
        assert found == [("GA827", "fail", f"NHC {check}")]
    assert [x for x in _judged(tmp_path, _IB) if x[1] in ("warn", "fail")] == [("GA827", "fail", "NHC check_hw_ib")]


# the nouveau list (lists.freedesktop.org/archives/nouveau, as archived in github.com/linux-mailinglist-archives):
# Mel Henning's patch quoting what nouveau logs on an Ada GPU with GSP disabled (nouveau.config=NvGspRm=0)
_NOUVEAU_NO_GSP = """\
nouveau 0000:01:00.0: gsp: Failed to load required firmware for device.
nouveau 0000:01:00.0: gsp ctor failed: -22
nouveau 0000:01:00.0: probe with driver nouveau failed with error -22
"""


def test_nouveau_without_gsp_firmware_leaves_the_gpu_undriven_a_config_fix_on_its_bus_id(tmp_path):
    s23 = (CORPUS / "s23-lost-gpu/dmesg-err-nouveau-ad107-gsp-ctor-failed-probe-failed_philipanda.txt").read_text()
    for text in (s23, _NOUVEAU_NO_GSP):
        f = tmp_path / "paste.txt"
        f.write_text(text)
        found = [x for x in evaluate(import_files([f])) if x.severity in ("warn", "fail")]
        assert [(x.code, x.severity, x.subject) for x in found] == [("GA820", "fail", "GPU 0000:01:00.0")]
        assert found[0].expected == {"action": "fix-config"}  # firmware / driver, not a reseat or an RMA
        assert "no RMA" in found[0].fix and "GSP firmware" in found[0].message
    # another errno of nouveau's GSP set-up is not read as a missing file; the probe failure alone is still read
    assert kmsg_signs.install_sign("nouveau 0000:01:00.0: gsp ctor failed: -110") is None


# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/659: the RPC history under a GSP timeout, its rows alone
# (the report's Xid 119 line above them not pasted), in journalctl's form
_RPC_HISTORY = """\
Apr 24 13:23:29 banana kernel: NVRM: GPU0 RPC history (CPU -> GSP):
Apr 24 13:23:29 banana kernel: NVRM:     entry function                   data0              data1              \
ts_start           ts_end             duration actively_polling
Apr 24 13:23:29 banana kernel: NVRM:      0    47   UNLOADING_GUEST_DRIVE 0x0000000000000000 0x0000000000000000 \
0x000616daa95805e8 0x000616daa95d9f17    366 s y
"""


def test_the_gsp_rpc_history_rows_of_a_timeout_report_are_the_gsp_timeout_sign(tmp_path):
    s23 = (CORPUS / "s23-lost-gpu").glob("dmesg-gsp-rpc-history-lockdown-notice-*.txt")
    for text in (next(s23).read_text(), _RPC_HISTORY):
        found = [x for x in _judged(tmp_path, text) if x[1] in ("warn", "fail")]
        assert [(code, sev) for code, sev, _ in found] == [("GA820", "fail")]
        assert {e.kind for e in import_files([tmp_path / "paste.txt"]).kernel.events} == {"gsp-timeout"}
    # the driver's other NVRM lines with hex values are no history row: a register dump, a PC trace
    assert kmsg_signs.sign_of("NVRM:         0x0000000001a82424  0x000000000010013e  0x0000000001a82424") is None
    assert kmsg_signs.sign_of("NVRM: GPU6 kflcnCoreDumpDestructive_IMPL: ICD: csr[100] = 0x0000000200000020") is None


# https://github.com/aws/aws-parallelcluster/issues/2162: clustermgtd's log (the same daemons' logging format)
_CLUSTERMGTD = """\
2020-11-02 17:12:00,524 - [slurm_plugin.clustermgtd:_get_config] - INFO - Reading \
/etc/parallelcluster/slurm_plugin/parallelcluster_clustermgtd.conf
2020-11-02 17:12:00,526 - [slurm_plugin.clustermgtd:manage_cluster] - INFO - Managing cluster...
2020-11-02 17:12:00,533 - [slurm_plugin.clustermgtd:_manage_compute_fleet_status_transitions] - INFO - Current \
compute fleet status: RUNNING
2020-11-02 17:12:05,656 - [slurm_plugin.clustermgtd:_perform_health_check_actions] - INFO - Performing instance \
health check actions
"""
# https://github.com/yavdr/yavdr-ansible/issues/12: a task that could not find nvidia-persistenced's service (the
# legacy nvidia-340 driver ships none)
_ANSIBLE = """\
TASK [yavdr-xorg : start nvidia-persistenced] ********************************************************************
fatal: [localhost]: FAILED! => {"changed": false, "msg": "Could not find the requested service nvidia-persistenced: \
host"}
"""


def test_service_manager_logs_are_read_and_a_missing_service_is_the_playbooks_matter_not_a_fault(tmp_path):
    pcluster = next((CORPUS / "s23-logs").glob("parallelcluster-health-check-manager-*.txt")).read_text()
    ansible = next((CORPUS / "s23-fabric").glob("ansible-stop-services-*.txt")).read_text()
    assert "failed: [local] (item=nvidia-fabricmanager)" in ansible
    for text in (pcluster, _CLUSTERMGTD, ansible, _ANSIBLE):
        found = _judged(tmp_path, text)  # read, not refused
        assert _worst([x for x in found if x[1] != "not-checked"]) in ("ok", "info")
        assert not [x for x in found if x[0] in ("GA809", "GA827", "GA801") and x[1] in ("warn", "fail")]


# https://github.com/openucx/ucx/issues/10317: ibv_devinfo -v pasted from its node_guid line (a ConnectX-6, part 4127)
_DEVINFO_CUT = """\
        node_guid:                      387c:7603:007c:ab4f
        sys_image_guid:                 387c:7603:007c:ab4e
        vendor_id:                      0x02c9
        vendor_part_id:                 4127
        hw_ver:                         0x0
        board_id:                       LNV0000000049
        phys_port_cnt:                  1
        max_mr_size:                    0xffffffffffffffff
        page_size_cap:                  0xfffffffffffff000
        max_qp:                         131072
"""


def test_ibv_devinfo_v_cut_below_its_hca_id_is_read_its_ports_unknown(tmp_path):
    s23 = next((CORPUS / "s23-rdma-logs").glob("ibv-devinfo-v-zero-guid-*.txt")).read_text()
    for text in (s23, _DEVINFO_CUT):
        found = _judged(tmp_path, text)  # read, not refused
        assert _worst([x for x in found if x[1] != "not-checked"]) in ("ok", "info")
        assert import_files([tmp_path / "paste.txt"]).network.rdma_ports is None  # cut before its port blocks: unknown


def test_the_rpc_history_under_an_xid_119_line_is_that_gsp_timeout_not_another_finding(tmp_path):
    # gpud's capture (corpus/kernel-log): Xid 119 on 0000:9b:00 with the driver's RPC history rows below it
    text = (CORPUS / "kernel-log/dmesg-T_xid119-gsp-rpc-timeout-xe9680_gpud.txt").read_text()
    assert "NVRM:      0    103  GSP_RM_ALLOC          0x0000000000002081" in text
    found = {code for code, sev, _ in _judged(tmp_path, text) if sev in ("warn", "fail")}
    assert "GA801" in found and "GA820" not in found
    events = import_files([tmp_path / "paste.txt"]).kernel.events or []
    assert not [e for e in events if e.kind == "gsp-timeout" and e.bus_id is None]
