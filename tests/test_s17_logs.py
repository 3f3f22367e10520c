"""Held-out set 17's log misreads, as classes (files in tests/corpus/s17-logs, s17-lost-gpu, s17-fabric,
s17-rdma-logs and s17-nccl-debug, gathered and read by hand before the tool ran on them; each case names its source
thread), each also checked on another public sample of the same form (its URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.facts import Rig
from gpuadvisor.importers.merge import import_files
from gpuadvisor.importers.prefixed import strip_prefix
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def _pasted(tmp_path: Path, text: str, name: str = "paste.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _rig(tmp_path: Path, text: str) -> Rig:
    return import_files([_pasted(tmp_path, text)])


def _warned(rig: Rig) -> list[tuple[str, str, str]]:
    return sorted((f.code, f.severity, f.subject) for f in evaluate(rig) if f.severity in ("warn", "fail"))


# https://github.com/MrMEEE/ironhide/issues/41 (2011, the older wording, every line stamped)
IRONHIDE_NOT_PROBED = """\
[ 9687.215135] NVRM: The NVIDIA probe routine was not called for 1 device(s).
[ 9687.215145] NVRM: This can occur when a driver such as nouveau, rivafb,
[ 9687.215149] NVRM: nvidiafb, or rivatv was loaded and obtained ownership of
[ 9687.215153] NVRM: the NVIDIA device(s).
[ 9687.215161] NVRM: Try unloading the conflicting kernel module (and/or
[ 9687.215165] NVRM: reconfigure your kernel without the conflicting
[ 9687.215168] NVRM: driver(s)), then try loading the NVIDIA kernel module
[ 9687.215172] NVRM: again.
[ 9687.215178] NVRM: No NVIDIA graphics adapter probed!
"""


def test_gpus_another_driver_took_first_are_lost_to_cuda_and_the_fix_is_the_driver_binding(tmp_path: Path) -> None:
    # https://github.com/mattshma/bigdata/issues/133: "The NVIDIA probe routine was not called for 3 device(s)."
    # (open-gpu-kernel-modules, kernel-open/nvidia/nv.c: printed when num_probed_nv_devices != count)
    path = _one("s17-lost-gpu/dmesg-probe-not-called-3-*.txt")
    assert _found(path) == [("GA820", "fail", "3 GPU(s) held by another driver (no bus id logged)")]
    (finding,) = [f for f in evaluate(import_files([path])) if f.code == "GA820"]
    assert finding.expected == {"action": "fix-config"}
    assert "lspci" in finding.fix and "blacklist nouveau" in finding.fix
    assert _warned(_rig(tmp_path, IRONHIDE_NOT_PROBED)) == [
        ("GA820", "fail", "1 GPU(s) held by another driver (no bus id logged)")
    ]


# https://github.com/huggingface/accelerate/issues/1317: DeepSpeed's pdsh runner, two nodes' lines interleaved
ACCELERATE_PDSH = """\
104.171.201.172: lambda-scalar03:148966:148966 [0] NCCL INFO Using network Socket
104.171.201.171: lambda-scalar02:95756:95756 [6] NCCL INFO cudaDriverVersion 11070
104.171.201.171: lambda-scalar02:95756:95756 [6] NCCL INFO Bootstrap : Using enp161s0f0:104.171.201.171<0>
104.171.201.171: lambda-scalar02:95756:96916 [6] NCCL INFO NET/IB : No device found.
104.171.201.171: lambda-scalar02:95756:96916 [6] NCCL INFO NET/Socket : Using [0]enp161s0f0:104.171.201.171<0>
"""


def test_a_hosts_address_before_every_line_once_or_twice_is_a_launchers_prefix() -> None:
    # https://github.com/NVIDIA/nccl/issues/563: "10.0.87.143: 10.0.87.143: ip-10-0-87-143:149:298 [5] ... NCCL WARN"
    text = _one("s17-nccl-debug/pdsh-ip-prefix-*.txt").read_text()
    out, what = strip_prefix(text)
    assert what == "a host's address"
    assert out.splitlines()[1].startswith("ip-10-0-87-143:149:298 [5] register_mr_buffers:465 NCCL WARN NET/OFI")
    assert out.splitlines()[8] == '  File "main_moe.py", line 187, in <module>'  # the traceback keeps its indent
    # several nodes' NCCL lines interleaved are one log (each line names its host); other outputs stay one host's
    out, what = strip_prefix(ACCELERATE_PDSH)
    assert what == "a host's address"
    assert out.splitlines()[0] == "lambda-scalar03:148966:148966 [0] NCCL INFO Using network Socket"
    two = "10.0.0.1: GPU 0: NVIDIA H100 80GB HBM3\n10.0.0.2: GPU 0: NVIDIA H100 80GB HBM3\n10.0.0.1: GPU 1: x\n"
    assert strip_prefix(two) == (two, None)


def test_a_kernel_log_behind_a_hosts_address_is_read_without_it() -> None:
    # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/446 (talosctl dmesg): "192.168.11.119: kern: warning:"
    rig = import_files([_one("s8-logs/talos-kern-gsp-back-to-back-*.txt")])
    assert [(e.kind, e.code, e.bus_id) for e in rig.kernel.events or []][:1] == [("xid", 154, "0000:0b:00")]
    # the same dmesg relayed twice, as in nvidia/nccl#563's launcher: the wall clock of a syslog line is kept
    line = "10.0.87.143: 10.0.87.143: Nov 26 07:00:00 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0\n"
    out, what = strip_prefix(line * 3)
    assert what == "a host's address" and out.startswith("Nov 26 07:00:00 h kernel: NVRM: Xid")


def test_a_line_in_inline_code_marks_is_read_as_what_is_inside() -> None:
    # https://github.com/siderolabs/pkgs/issues/720: "`fabric manager NVIDIA GPU driver interface version ...`."
    out, _ = strip_prefix(_one("s17-fabric/inline-backticks-*.txt").read_text())
    assert out.startswith("fabric manager NVIDIA GPU driver interface version 525.85.12 don't match") and "`" not in out
    # https://github.com/siderolabs/extensions/issues/511: the same form, another fabric manager line
    out, _ = strip_prefix(_one("s15-fabric/talos-ext-fm-config-*.txt").read_text())
    assert out.startswith("<node ip>: fabric manager config file item: FABRIC_NODE_CONFIG_FILE") and "`" not in out
    fence = "```\n`x`\n```\n"
    assert strip_prefix(fence)[0] == "```\nx\n```\n"  # a fence's marks open no inline span


# https://github.com/NVIDIA/gpu-driver-container/issues/735: the bundled fabric manager's version check, wrapped after
# its first sentence, no journal prefix, fenced
DRIVER_CONTAINER_735 = """\
```
fabric manager NVIDIA GPU driver interface version 590.48.01 don't match with driver version 580.126.09.
Please update with matching NVIDIA driver package.
```
"""


def test_a_fabric_manager_that_does_not_match_the_driver_cannot_run(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/gpu-operator/issues/544: "nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver
    # interface version 530.30.02 don't match with driver version 530.41.03." (the fabric manager's
    # FMGpuDriverVersionCheck logs it and throws: the daemon exits)
    for path, versions in (
        (_one("s17-fabric/journal-line-fm-*.txt"), ("530.30.02", "530.41.03")),
        (_one("s17-fabric/inline-backticks-*.txt"), ("525.85.12", "530.41.03")),
        (_pasted(tmp_path, DRIVER_CONTAINER_735), ("590.48.01", "580.126.09")),
    ):
        rig = import_files([path])
        assert rig.fabric.manager_state == "failed"
        assert f"fabric manager {versions[0]} does not match driver {versions[1]}" in (rig.fabric.manager_detail or "")
        (f,) = [f for f in evaluate(rig) if f.code == "GA809"]
        assert f.severity == "fail" and "exact version" in f.fix
        assert f"interface version {versions[0]} don't match with driver version {versions[1]}" in str(f.observed)
    # on a box of PCIe cards (no NVSwitch to manage) the same line is information, not a failure
    from gpuadvisor.facts import Gpu

    rig = import_files([_one("s17-fabric/journal-line-fm-*.txt")])
    rig.gpus = [Gpu(index=0, name="NVIDIA GeForce RTX 4090"), Gpu(index=1, name="NVIDIA GeForce RTX 4090")]
    assert [f.severity for f in evaluate(rig) if f.code == "GA809"] == ["info"]


# https://github.com/pytorch/pytorch/pull/177472: the same NCCL error as torch's "Last error:", unwrapped
PYTORCH_177472 = """\
torch.distributed.DistBackendError: NCCL error in: /var/lib/jenkins/workspace/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.29.3
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'.
This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.
Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.
"""  # noqa: E501


def test_nccls_nvls_bind_error_without_its_prefix_is_a_fabric_not_set_up(tmp_path: Path) -> None:
    # https://github.com/pytorch/ci-infra/pull/541: NCCL's message wrapped on three lines, no "NCCL WARN" before it
    # (NCCL src/transport/nvls.cc: "... This is usually caused by a system or configuration error in the Fabric
    # Manager or NVSwitches.")
    for path in (_one("s17-fabric/nccl-nvls-*.txt"), _pasted(tmp_path, PYTORCH_177472)):
        rig = import_files([path])
        (f,) = [f for f in evaluate(rig) if f.code == "GA809"]
        assert f.severity == "fail" and "CUDA error 401 'the operation cannot be performed in the present state'" in (
            f.message
        )
        assert "fabric manager" in f.message and "NVSwitches" in f.message and "nvidia-fabricmanager" in f.fix


def test_a_freebsd_mellanox_drivers_line_is_a_kernel_log_and_its_device_no_host() -> None:
    # https://docs.nvidia.com/networking/display/FREEBSDv371/Port+Down+State+Diagnostics (sys/dev/mlx5/driver.h's
    # mlx5_core_info: device_printf "INFO: %s:%d:(pid %d): "): a transceiver detected, nothing wrong
    rig = import_files([_one("s17-rdma-logs/freebsd-mlx5-*.txt")])
    assert (rig.kernel.lines_read, rig.kernel.events) == (1, [])
    # https://github.com/sebhildebrandt/systeminformation/pull/331: FreeBSD's mlx4 "mlx4_core0: port level mtu is
    # only used for IB ports", repeated: the driver's unit, not a host name to strip
    text = "mlx4_core0: port level mtu is only used for IB ports\n" * 3
    assert strip_prefix(text) == (text, None)


# https://github.com/NVIDIA/dcgm-exporter/issues/576: dcgmi nvlink -s of eight GPUs, every link Up, no model named
DCGMI_ALL_UP = (
    "dcgmi nvlink -s\n+----------------------+\n|  NvLink Link Status  |\n+----------------------+\nGPUs:\n"
    + "".join(f"    gpuId {k}:\n        " + " ".join(["U"] * 18) + "\n" for k in range(8))
    + "NvSwitches:\n    No NvSwitches found.\n\nKey: Up=U, Down=D, Disabled=X, Not Supported=_\n"
)


def test_gpus_of_no_named_model_whose_every_listed_nvlink_is_down_warn(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/DCGM/issues/198: two GPUs, 18 links each, every one "D", no model in the paste
    path = _one("s17-logs/dcgmi-nvlink-link-status-*.txt")
    assert _found(path) == [("GA204", "warn", "GPU 0"), ("GA204", "warn", "GPU 1")]
    (f, _) = [f for f in evaluate(import_files([path])) if f.code == "GA204"]
    assert f.observed == {"active_links": 0, "inactive_links": list(range(18))}
    assert "every link it lists is down" in f.message and "no bridge fitted" in f.message
    assert [f.code for f in evaluate(_rig(tmp_path, DCGMI_ALL_UP)) if f.code == "GA204"] == []


# https://github.com/leptonai/gpud/pull/1151, its third block: the same H100 after the fabric manager was restarted
GPUD_1151_RESTARTED = """\
```
    "component": "accelerator-nvidia-fabric-manager",
    "states": [
      {
        "time": "2025-11-20T04:49:02Z",
        "component": "accelerator-nvidia-fabric-manager",
        "name": "accelerator-nvidia-fabric-manager",
        "health": "Healthy",
        "reason": "fabric manager found and active",
```
"""


def test_gpuds_fabric_manager_component_json_is_read(tmp_path: Path) -> None:
    # https://github.com/leptonai/gpud/pull/1106: GB200, gpud checks the GPUs' fabric state only (no local daemon),
    # each GPU Completed / Success in clique 4026, the third cut inside its UUID (left out)
    rig = import_files([_one("s17-fabric/gpud-fabric-state-json-*.txt")])
    fab = rig.fabric
    assert [(g.state, g.status, g.clique_id) for g in fab.gpus or []] == [("completed", "success", 4026)] * 2
    assert (fab.manager_state, fab.nvswitches) == (None, None) and "GB200" in (fab.why("manager_state") or "")
    assert [f for f in evaluate(rig) if f.code == "GA809" and f.severity != "ok"] == []
    # https://github.com/leptonai/gpud/pull/1151: H100, "checked fabric state; fabric manager found but not active"
    # (gpud looks for NVSwitches before it checks the daemon): an inactive fabric manager on an NVSwitch box fails
    path = _one("s14-fabric/gpud-fm-component-json-*.txt")
    rig = import_files([path])
    assert (rig.fabric.manager_state, rig.fabric.nvswitches) == ("inactive", True)
    assert _found(path) == [("GA809", "fail", "host")]
    rig = _rig(tmp_path, GPUD_1151_RESTARTED)
    assert rig.fabric.manager_state == "active" and _warned(rig) == []
