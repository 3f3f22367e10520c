"""Held-out set 18's log misreads, as classes (files in tests/corpus/s18-logs, s18-fabric, s18-nccl-debug and
s18-dcgm, gathered and read by hand before the tool ran on them; each case names its source thread), each also
checked on another public sample of the same form (its URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import hostengine, nccl_log
from gpuadvisor.importers.merge import import_files
from gpuadvisor.importers.prefixed import strip_prefix
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found
from tests.test_s17_logs import _pasted, _rig, _warned

# https://github.com/kubernetes/kubernetes/pull/124732 (kubectl logs --prefix: "[pod/NAME/CONTAINER] ")
KUBECTL_PREFIX = """\
[pod/y-844fbc9777-vhl79/nginx] /docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh
[pod/y-844fbc9777-vhl79/nginx] /docker-entrypoint.sh: Configuration complete; ready for start up
[pod/y-844fbc9777-vhl79/nginx] 2024/03/07 21:10:16 [notice] 1#1: nginx/1.25.4
"""


def test_a_pods_and_containers_names_before_every_line_are_taken_off_and_its_kernel_messages_read() -> None:
    # https://github.com/NVIDIA/gpu-operator/issues/426: stern's "POD CONTAINER " before a driver container's log,
    # a progress bar's overwritten line without it; its "Kernel messages:" hold an AppArmor audit line, no GPU event
    path = _one("s18-logs/k8s-pod-prefixed-driver-ctr-*.txt")
    text, kind = strip_prefix(path.read_text())
    assert kind == "a pod's and container's names"
    assert "\nKernel messages:\n" in text and "\n[761171.103160] audit: type=1107 " in text
    assert _found(path) == []
    assert import_files([path]).kernel.events == []
    text, kind = strip_prefix(KUBECTL_PREFIX)
    assert kind == "a pod's and container's names"
    assert text.splitlines()[1] == "/docker-entrypoint.sh: Configuration complete; ready for start up"
    two_pods = KUBECTL_PREFIX.replace("y-844fbc9777-vhl79/nginx] 2024", "y-844fbc9777-abcde/nginx] 2024")
    assert strip_prefix(two_pods)[1] is None  # two pods' logs interleaved are not one output


# https://github.com/pop-os/pop/issues/751 (the last lines of its pasted kernel log, without times: an NVMe drive's
# corrected PCIe errors, the last line the AER driver's note on which agent reported first)
POP_NVME_AER = """\
 nvme 0000:03:00.0: AER: device [144d:a808] error status/mask=00000001/0000e000
 nvme 0000:03:00.0: AER: [ 0] RxErr
 nvme 0000:03:00.0: AER: Error of this Agent is reported first
"""


def test_a_non_gpu_devices_aer_lines_alone_are_a_kernel_log_with_no_gpu_event(tmp_path: Path) -> None:
    # https://github.com/archlinux/archinstall/issues/1554: a Realtek wifi card's and its port's "AER: Error of this
    # agent is reported first" (the kernel's AER driver, drivers/pci/pcie/aer.c): no GPU involved
    path = _one("s18-logs/aer-error-of-this-agent-reported-first-rtl8192ee-*.txt")
    rig = import_files([path])
    assert rig.kernel.events == [] and rig.gpus == []
    assert _found(path) == []
    rig = _rig(tmp_path, POP_NVME_AER)
    assert rig.kernel.events == [] and rig.gpus == []
    assert _warned(rig) == []


def test_an_nccl_21_warn_line_with_only_a_host_name_is_read_as_nccl_output() -> None:
    # https://github.com/horovod/horovod/issues/98: NCCL 2.1 (CUDA 9, 2018) "machine [0] misc/ibvwrap.cu:269 WARN
    # Call to ibv_create_qp failed": no pid:tid after the host, no "NCCL" before WARN; a queue pair NCCL could not
    # create (the thread: the locked-memory limit): a job configuration matter, no adapter or GPU fault
    path = _one("s18-nccl-debug/nccl21-warn-ibv-create-qp-failed-*.txt")
    assert nccl_log.starts("machine [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed")
    rig = import_files([path])
    assert rig.network.nccl_gdr_disabled == []  # read as NCCL's output (refused before)
    assert _found(path) == []
    # a bare word, a bracketed number and INFO without NCCL's source line is any logger's line, not NCCL's
    assert not nccl_log.starts("worker [0] INFO starting epoch 3")


# https://github.com/pytorch/pytorch/issues/35710 (a CUDA sample on the same box: bandwidthTest's error 802)
BANDWIDTH_802 = """\
> ./bandwidthTest
[CUDA Bandwidth Test] - Starting...
Running on...

cudaGetDeviceProperties returned 802
-> system not yet initialized
CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice(currentDevice)"
"""
# https://github.com/wilicc/gpu-burn/issues/36: gpu_burn's GPU list (nvidia-smi -L's lines) on a box of TITAN RTX cards
TITAN_RTX = """\
GPU 0: TITAN RTX (UUID: GPU-5ca89547-0a71-fc6d-f749-1651ee078536)
GPU 1: TITAN RTX (UUID: GPU-fd78f358-3e8b-e2bb-abca-a5c099d7e983)
"""


def test_cudas_error_802_is_the_fabric_manager_not_running_on_an_nvswitch_box(tmp_path: Path) -> None:
    # https://github.com/wilicc/gpu-burn/issues/92: H100 80GB HBM3 (SXM), every gpu_burn worker: "system not yet
    # initialized" (cudaErrorSystemNotReady, 802: "all required driver daemons are actively running", the CUDA
    # Runtime API), then "OS call failed or operation not supported on this OS": the fabric manager is not running
    path = _one("s18-fabric/gpu-burn-h100-hbm3-system-not-yet-initialized-*.txt")
    assert _found(path) == [("GA809", "fail", "host")]
    (finding,) = [f for f in evaluate(import_files([path])) if f.code == "GA809"]
    assert finding.observed["evidence"].startswith("CUDA error 802 'system not yet initialized': what():  Error")
    assert "3 more worker(s)" in finding.observed["evidence"]
    assert "nvidia-fabricmanager" in finding.fix
    assert _warned(_rig(tmp_path, BANDWIDTH_802)) == [("GA809", "fail", "host")]
    # on a box of PCIe cards (no NVSwitch baseboard) the daemon missing is not the fabric manager: a warning
    cards = import_files([_pasted(tmp_path, TITAN_RTX, "smi.txt"), _pasted(tmp_path, BANDWIDTH_802, "bw.txt")])
    assert [(f.code, f.severity) for f in evaluate(cards) if f.code == "GA809"] == [("GA809", "warn")]


# https://github.com/NVIDIA/dcgm-exporter/issues/144 (nv-hostengine started by hand: its DEBUG and INFO lines)
HOSTENGINE_DEBUG = """\
2023-03-14 07:35:17.289 DEBUG [39:39] Allowlist NOT bypassed with env variable [/workspaces/dcgm-rel_dcgm_3_1-postmerge/dcgmlib/src/DcgmCacheManager.cpp:1027] [DcgmCacheManager::IsGpuAllowlisted]
2023-03-14 07:35:17.289 DEBUG [39:39] gpuId 0, arch 6 is on the allowlist. [/workspaces/dcgm-rel_dcgm_3_1-postmerge/dcgmlib/src/DcgmCacheManager.cpp:1051] [DcgmCacheManager::IsGpuAllowlisted]
2023-03-14 07:35:17.289 INFO  [39:39] Got 0 excluded GPUs [/workspaces/dcgm-rel_dcgm_3_1-postmerge/dcgmlib/src/DcgmCacheManager.cpp:1087] [DcgmCacheManager::ReadAndCacheGpuExclusionList]
"""  # noqa: E501


def test_dcgms_host_engine_log_is_read_and_its_nvswitch_module_errors_are_noise(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/DCGM/issues/159: one nv-hostengine.log line in inline code, "[[NvSwitch]] Not attached
    # to NvSwitches. Aborting" (DCGM's DcgmNvSwitchManager::ReadNvSwitchStatusAllSwitches when NSCQ is not
    # attached), repeated every few seconds on a node without NVSwitches: monitoring noise, no fabric fault
    path = _one("s18-fabric/nv-hostengine-log-not-attached-to-nvswitches-*.txt")
    rig = import_files([path])
    assert [(e.kind, e.text) for e in rig.kernel.events or []] == [
        ("dcgm-error", "[[NvSwitch]] Not attached to NvSwitches. Aborting")
    ]
    assert _found(path) == []
    assert [(f.code, f.severity) for f in evaluate(rig) if f.code == "GA809"] == [("GA809", "info")]
    rig = _rig(tmp_path, HOSTENGINE_DEBUG)  # read, its DEBUG and INFO lines no event
    assert rig.kernel.events == [] and _warned(rig) == []
    assert not hostengine.starts(["ERROR [1:2] something failed"], 0, None)  # no module, no source line
    # https://github.com/NVIDIA/DCGM/issues/272: nvvs's debug log, the same form (DEBUG and WARN lines, no error)
    nvvs = import_files([_one("s15-fabric/nvvs-debug-log-fabric-manager-started-*.txt")])
    assert nvvs.kernel.events == [] and _warned(nvvs) == []


# https://github.com/leptonai/gpud/pull/1174 (its kmsg input: a contained ECC error killing one process)
GPUD_XID_94 = "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error\n"


def test_sxid_12028_with_xid_137_and_94_warns_as_the_catalog_says_never_fails(tmp_path: Path) -> None:
    # https://sulao.cn/post/1165: SXid 12028 on three NVSwitches (its own line on nvswitch2 says "Non-fatal",
    # Severity 0), Xid 137 on links 4-7 of 4c:00 and Xid 94 (RST: No, D-RST: No) on 4c:00 and cb:00. NVIDIA's Xid
    # catalog: 137 NVLINK_PRIV_ERR, immediate action IGNORE; 94 contained ECC, RESTART_APP: no reset, no drain
    path = _one("s18-fabric/dmesg-ctime-sxid-12028-*.txt")
    found = evaluate(import_files([path]))
    judged = sorted(
        (f.code, f.severity, f.subject, f.observed.get("xid")) for f in found if f.code in ("GA801", "GA802")
    )
    assert judged == [
        ("GA801", "info", "PCI 0000:4c:00", 137),
        ("GA801", "warn", "PCI 0000:4c:00", 94),
        ("GA801", "warn", "PCI 0000:cb:00", 94),
        ("GA802", "info", "NVSwitch 0000:07:00.0", None),  # its own line: Non-fatal
        ("GA802", "warn", "NVSwitch 0000:06:00.0", None),  # only Data lines: fatality not shown
        ("GA802", "warn", "NVSwitch 0000:08:00.0", None),
    ]
    assert not [f for f in found if f.severity == "fail"]
    assert _warned(_rig(tmp_path, GPUD_XID_94)) == [("GA801", "warn", "PCI 0000:9b:00")]


# https://github.com/NVIDIA/DCGM/issues/70 (MIG on GPU 2 only; the diagnostic asked for GPU 0, a zsh prompt above)
DCGM_70 = """\
% dcgmi diag -i 0 -r 1
GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU.
"""


def test_nvvss_mig_message_is_dcgm_output_naming_a_gpu_in_mig_mode(tmp_path: Path) -> None:
    # https://github.com/mej/nhc/issues/29: nvvs 418's own message for GPU 0 (DCGM's NvidiaValidationSuite.cpp:
    # "GPU <id>'s MIG configuration is incompatible with the diagnostic because it prevents access to the entire
    # GPU."): the diagnostic did not run, MIG is on for GPU 0
    path = _one("s18-dcgm/nvvs-418-mig-configuration-incompatible-gpu0-*.txt")
    rig = import_files([path])
    assert [(g.index, g.mig_mode) for g in rig.gpus] == [(0, True)]
    assert [(c, s) for c, s, _ in _found(path)] == [("GA314", "warn")]
    rig = _rig(tmp_path, DCGM_70)
    assert [(g.index, g.mig_mode) for g in rig.gpus] == [(2, True)]
    assert [(c, s) for c, s, _ in _warned(rig)] == [("GA314", "warn")]
