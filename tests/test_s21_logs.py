"""Held-out set 21's classes of job and service logs, each from a real paste (the corpus file in tests/corpus/s21-*
and one more public sample of the same form, its source URL beside it): NVML's lost-GPU error raised in Python."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import go_log, import_files, nccl_log, verbs_qp
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"


def _judged(tmp_path: Path, text: str) -> list[tuple[str, str, str]]:
    f = tmp_path / "paste.txt"
    f.write_text(text)
    return sorted((x.code, x.severity, x.subject) for x in evaluate(import_files([f])) if x.severity != "ok")


def _worst(found: list[tuple[str, str, str]]) -> str:
    order = ["ok", "info", "warn", "fail"]
    return max((sev for _, sev, _ in found), key=order.index, default="ok")


# https://github.com/shuvozula/eth-runner (its NVIDIA watchdog quotes the traceback a mining rig's pynvml raised)
_ETH_RUNNER = """\
Traceback (most recent call last):
  File "/home/shuvo/projects/eth-runner/metrics/collect_nvidia_metrics.py", line 54, in start_collection
    handle = nvmlDeviceGetHandleByIndex(gpu_num)
  File "/usr/local/lib/python2.7/dist-packages/pynvml.py", line 807, in nvmlDeviceGetHandleByIndex
    _nvmlCheckReturn(ret)
  File "/usr/local/lib/python2.7/dist-packages/pynvml.py", line 310, in _nvmlCheckReturn
    raise NVMLError(ret)
pynvml.NVMLError_GpuIsLost: GPU is lost
"""


def test_a_python_traceback_ending_in_nvmls_gpu_is_lost_is_a_lost_gpu_of_unknown_device(tmp_path):
    corpus = (CORPUS / "s21-lost-gpu/python-traceback-pynvml-nvmlerror-gpuislost-nvgpu_bzamecnik.txt").read_text()
    for text in (corpus, _ETH_RUNNER):
        found = [x for x in _judged(tmp_path, text) if x[0] == "GA820"]
        assert len(found) == 1 and found[0][1] == "fail"
        scan = import_files([tmp_path / "paste.txt"])
        (ev,) = scan.kernel.events
        assert (ev.kind, ev.bus_id, ev.gpu_index) == ("gpu-is-lost", None, None)  # which GPU: not on the line
        assert scan.gpus == []


def test_a_nccl_warn_line_with_its_pid_redacted_and_a_date_before_the_host_is_read_as_nccl_output(tmp_path):
    # https://github.com/NVIDIA/nccl/issues/2013: the pid (and tid) written XXXXXX, a log date before the host
    redacted = (CORPUS / "s21-nccl-debug").glob("nccl-warn-ibv-modify-qp-110-*.txt")
    text = next(redacted).read_text()
    assert ":XXXXXX [5] ibvwrap.c:262 NCCL WARN" in text
    found = _judged(tmp_path, text)
    assert _worst([x for x in found if x[1] != "not-checked"]) in ("ok", "info", "warn")
    # the same line as NCCL writes it (host:pid:tid) is judged the same: the redaction changes nothing
    plain = _judged(tmp_path, text.replace(":XXXXXX [5]", ":2152176:2152299 [5]"))
    assert found == plain
    assert nccl_log.starts("host-01:***:*** [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>")
    assert not nccl_log.starts("host-01:XX [0] NCCL INFO x")  # two letters: not a redaction NCCL's readers write


# https://github.com/vllm-project/vllm/issues/4108: a vLLM worker's log (PyTorch 2.2's older watchdog words)
_VLLM = """\
(RayWorkerVllm pid=7046) Fatal Python error: Aborted
[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory \
access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
"""
# the words of PyTorch 2.2 and later (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: logPrefix() then "Process
# group watchdog thread terminated with exception: "), as https://github.com/InternLM/lmdeploy/issues/3258 (C++'s
# "what():" alone on its line, the message below it) and https://github.com/InternLM/lmdeploy/issues/3048 show them
_PG = """\
  what():
[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: CUDA error: an \
illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
[rank0]:[E117 11:40:54.259889664 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group \
watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
"""


def test_pytorchs_nccl_watchdog_ending_a_job_on_a_cuda_error_is_read_and_blames_no_gpu(tmp_path):
    corpus = next((CORPUS / "s21-nccl-debug").glob("torch-nccl-watchdog-*.txt")).read_text()
    for text in (corpus, _VLLM, _PG):
        found = [x for x in _judged(tmp_path, text) if x[1] != "not-checked"]
        assert _worst(found) in ("ok", "info", "warn"), found
        scan = import_files([tmp_path / "paste.txt"])
        # no kernel line: no Xid, no GPU named; the job's own CUDA error at most (an application fault, no device)
        assert scan.gpus == [] and all(e.kind == "app-fault" and e.bus_id is None for e in scan.kernel.events or [])
    assert not nccl_log.starts("[Rank 0] HCCL watchdog thread terminated with exception: x")  # Ascend's, not NCCL


# https://github.com/NVIDIA/k8s-device-plugin/issues/65: the plugin's Go log lines when it could not watch the
# kubelet's socket directory (no GPU fault, no "No devices found")
_PLUGIN_2018 = """\
2018/08/07 18:05:29 Loading NVML
2018/08/07 18:05:29 Fetching devices.
2018/08/07 18:05:29 Starting FS watcher.
2018/08/07 18:05:29 Failed to created FS watcher.
"""


def test_a_go_services_log_is_read_as_a_log_and_the_device_plugin_finding_no_gpu_is_a_note(tmp_path):
    plugin = (CORPUS / "s21-lost-gpu").glob("k8s-device-plugin-pod-log-no-devices-found-*.txt")
    sentinel = (CORPUS / "s21-logs").glob("kubectl-logs-nvsentinel-syslog-health-monitor-*.txt")
    gpud = CORPUS / "s16-fabric/gpud-fabric-manager-check-a100-active_gyuho.txt"  # zap's JSON line
    for text, notes in ((next(plugin).read_text(), 1), (next(sentinel).read_text(), 0), (_PLUGIN_2018, 0)):
        found = [x for x in _judged(tmp_path, text) if x[1] != "not-checked"]
        assert _worst(found) in ("ok", "info"), found  # no lost GPU (GA315, GA820), no Xid (GA801)
        scan = import_files([tmp_path / "paste.txt"])
        said = [p for p in scan.problems if "device plugin found no GPU" in p]
        assert len(said) == notes and scan.gpus == [] and scan.kernel.events == []
    assert _worst([x for x in _judged(tmp_path, gpud.read_text()) if x[1] != "not-checked"]) in ("ok", "info")
    # an Xid the service quotes is the kernel log reader's (judged as a kernel line is)
    xid = '{"time":"2026-07-10T07:38:05Z","level":"INFO","msg":"NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has '
    xid += 'fallen off the bus."}\n'
    assert [x for x in _judged(tmp_path, xid) if x[0] == "GA801"][0][1] == "fail"
    # a JSON object without a level and a message is no log line
    assert not go_log.starts(['{"time": "x", "value": 3}'], 0, None)


def test_a_verbs_programs_port_check_is_read_and_its_timed_out_queue_pairs_are_a_note(tmp_path):
    # https://github.com/uccl-project/uccl/issues/641: two ports ACTIVE, then "Failed to modify QP to RTR: Connection
    # timed out" many times, the last line cut
    text = next((CORPUS / "s21-rdma-logs").glob("uccl-ep-roce-*.txt")).read_text()
    found = [x for x in _judged(tmp_path, text) if x[1] != "not-checked"]
    assert _worst(found) in ("ok", "info", "warn"), found
    scan = import_files([tmp_path / "paste.txt"])
    assert [(p.state, p.link_layer, p.device) for p in scan.network.rdma_ports] == [("ACTIVE", "Ethernet", "")] * 2
    (said,) = [p for p in scan.problems if "queue pairs" in p]
    assert "to RTR: Connection timed out (x14)" in said and "every port shown is ACTIVE" in said
    # a port the program says is "NOT ACTIVE" (UCCL's ep/src/rdma.cpp prints only ACTIVE or NOT ACTIVE): which state
    # is unknown, so no state is read
    down = "Verifying port state:\n  link_layer: InfiniBand\n  port_state: NOT ACTIVE\n  max_mtu: 5\n"
    (port,) = verbs_qp.parse_verbs_qp(down).network.rdma_ports
    assert (port.state, port.link_layer) == (None, "InfiniBand") and "NOT ACTIVE" in (port.why("state") or "")
