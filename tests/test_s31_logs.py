"""Held-out set 31's log classes (files in tests/corpus/s31-fabric, s31-logs and s31-rdma-logs, gathered and read by
hand before the tool ran on them; each case names its source thread), each also checked on another public sample of
the same form (its URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers.beyond_tools import cuda_not_ready
from gpuadvisor.importers.log_lines import is_log_line
from gpuadvisor.importers.merge import import_files
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found
from tests.test_s17_logs import _rig, _warned

# https://github.com/ollama/ollama/issues/12173 (the title and the description's inline code: ollama on a Lambda
# Hyperplane of 8 H100s, the same error after every reinstall)
OLLAMA_INIT_802 = (
    "Unable to load cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.570.169: cuda driver library init failure: "
    "802\n"
)
# https://github.com/ollama/ollama/issues/11593 (tjwebb's comment: an RTX PRO 6000 Blackwell, CUDA's error 3, not
# initialized: HMM in nvidia_uvm, per the thread; not the fabric)
OLLAMA_INIT_3 = (
    'time=2025-08-02T22:42:20.643Z level=INFO source=gpu.go:612 msg="Unable to load cudart library '
    '/usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08: cuda driver library init failure: 3"\n'
)


def test_cudas_error_802_by_its_number_alone_is_the_fabric_not_ready(tmp_path: Path) -> None:
    # https://github.com/ollama/ollama/issues/9031: ollama's debug log on an H200 host, "cuInit err: 802" then
    # "cuda driver library init failure: 802" (CUDA_ERROR_SYSTEM_NOT_READY: the fabric manager not running on an
    # NVSwitch system): no CUDA work can start: fail, a configuration to fix, not an RMA
    path = _one("s31-fabric/ollama-debug-cuinit-err-802-*.txt")
    assert _found(path) == [("GA809", "fail", "host")]
    (finding,) = [f for f in evaluate(import_files([path])) if f.code == "GA809"]
    assert finding.observed["evidence"] == "CUDA error 802 'system not yet initialized': cuInit err: 802"
    assert finding.observed["count"] == 2  # cuInit's error and ollama's "init failure" line after it
    assert "nvidia-fabricmanager" in finding.fix
    assert _warned(_rig(tmp_path, OLLAMA_INIT_802)) == [("GA809", "fail", "host")]
    # another number after the same words is another error (3: CUDA_ERROR_NOT_INITIALIZED), not the fabric's
    assert not cuda_not_ready(OLLAMA_INIT_3.strip())
    assert "GA809" not in {f.code for f in evaluate(_rig(tmp_path, OLLAMA_INIT_3))}
    # the number after an error word, but on a line that names nothing of CUDA, is not CUDA's error 802
    assert not cuda_not_ready(
        OLLAMA_INIT_802.replace(
            "cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.570.169: cuda driver library", "plugin"
        )
    )


def test_the_device_plugins_skipped_nvml_event_is_read_as_its_note_not_a_fault() -> None:
    # https://github.com/NVIDIA/gpu-operator/issues/1065: the device plugin's klog lines (internal/rm/health.go) on an
    # H100 node: "Skipping non-nvmlEventTypeXidCriticalError event: {... EventType:2 EventData:0 ...}", then a line cut
    # after "Proc": the plugin passed an NVML event by (type 2 is nvmlEventTypeDoubleBitEccError, NVML API Reference,
    # Event Types) and marked no GPU unhealthy: read, no Xid finding, at most a note
    path = _one("s31-logs/k8s-device-plugin-klog-health-skipping-*.txt")
    rig = import_files([path])
    assert rig.kernel.events == []
    (note,) = rig.problems
    assert "line 2: the NVIDIA device plugin's health check skipped an NVML event that is not a critical Xid" in note
    assert "EventType 2, nvmlEventTypeDoubleBitEccError" in note and "nvidia-smi -q -d ECC" in note
    assert _found(path) == []
    assert not {f.code for f in evaluate(rig)} & {"GA801", "GA820", "GA315", "GA827"}


# https://github.com/NVIDIA/gpu-operator/issues/414 (kubectl logs of nvidia-dcgm-exporter: logrus' text lines, the
# exporter failing to reach a remote nv-hostengine at start)
EXPORTER_NO_HOSTENGINE = """\
time="2022-09-29T12:09:09Z" level=info msg="Starting dcgm-exporter"
time="2022-09-29T12:09:09Z" level=info msg="Attemping to connect to remote hostengine at localhost:5555"
time="2022-09-29T12:09:14Z" level=fatal msg="Error connecting to nv-hostengine: Host engine connection invalid/disconnected"
"""  # noqa: E501


def test_logrus_key_value_lines_are_a_log_and_a_lost_host_engine_is_listed_not_failed(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/gpu-monitoring-tools/issues/188: dcgm-exporter 2.1.8's logrus lines 30 s apart,
    # 'level=error msg="Failed to collect metrics ... Host engine connection invalid/disconnected"' after
    # nv-hostengine restarted (DCGM_ST_CONNECTION_NOT_VALID): the monitoring lost its engine, no GPU fault: read as
    # a log, its error lines listed (GA828, info), no GPU health finding
    path = _one("s31-logs/dcgm-exporter-logrus-host-engine-*.txt")
    assert is_log_line(path.read_text().splitlines()[1])
    rig = import_files([path])
    found = [(f.code, f.severity) for f in evaluate(rig) if f.severity not in ("ok", "not-checked")]
    assert found == [("GA828", "info")]
    assert [e.line for e in rig.kernel.events or []] == [2, 3]
    rig = _rig(tmp_path, EXPORTER_NO_HOSTENGINE)
    assert [(e.kind, e.line) for e in rig.kernel.events or []] == [("unjudged", 3)]
    assert _warned(rig) == []


# https://github.com/microsoft/mscclpp/issues/496 (MSCCL++'s Python binding registering a RawGpuBuffer for IB0: the
# same IbError raised in Python; the traceback alone does not show the buffer to be GPU memory)
MSCCLPP_PY_IBERROR = """\
Traceback (most recent call last):
  File "/root/bug.py", line 10, in <module>
    comm.register_memory(data_ptr, 1024 * 1024, Transport.IB0)
mscclpp._mscclpp.IbError: (14, 'ibv_reg_mr failed (errno 14) (Ib failure: Bad address)')
"""


def test_a_failed_registration_of_gpu_memory_is_gpudirect_rdma_not_working(tmp_path: Path) -> None:
    # https://github.com/microsoft/mscclpp/issues/657: MSCCL++'s IbMr debug lines (GPU 4's buffer, memoryType=2,
    # nv_peer_mem loaded: yes, dmaBufSupported: 0), then 'ibv_reg_mr failed (errno 14) (Ib failure: Bad address)':
    # the peer-memory path did not pin the GPU's pages (VMM memory needs dma-buf): GPUDirect RDMA not working for it,
    # a configuration matter (warn), no adapter or GPU fault
    path = _one("s31-rdma-logs/mscclpp-ibmr-*.txt")
    rig = import_files([path])
    assert _warned(rig) == [("GA825", "warn", "host")]
    (finding,) = [f for f in evaluate(rig) if f.code == "GA825"]
    assert finding.observed["line"] == 17
    assert finding.observed["evidence"].endswith("[GPU memory; nv_peer_mem loaded: yes; dma-buf not supported]")
    assert "dma-buf" in finding.fix and "nvidia_peermem" in finding.fix
    # the same error raised in Python, no line showing the buffer's memory: a lead (info), never a fault
    rig = _rig(tmp_path, MSCCLPP_PY_IBERROR)
    assert [(f.code, f.severity) for f in evaluate(rig) if f.code == "GA825"] == [("GA825", "info")]
    assert _warned(rig) == []
