# ruff: noqa: E501  (real pastes, quoted as their threads show them)
"""Logs of any logging library are read as logs, and their error lines about the GPU stack that no sign judges are
listed (GA828), never passed over as "no fault". Every paste below is a real one, quoted from its thread."""

from __future__ import annotations

import pytest
from gpuadvisor.probes.kmsg_unjudged import unjudged

from gpuadvisor.importers.log_lines import is_log_line, starts_log
from tests.corpus_cases import import_paste

# https://github.com/NVIDIA/k8s-device-plugin/issues/303 (the device plugin's Go log, through kubectl logs)
DEVICE_PLUGIN_GO = """$ kubectl logs nvidia-device-plugin-daemonset-j76n5 -n kube-system
2022/05/13 23:09:23 Loading NVML
2022/05/13 23:09:23 Failed to initialize NVML: could not load NVML library.
2022/05/13 23:09:23 If this is a GPU node, did you set the docker default runtime to 'nvidia'?
2022/05/13 23:09:23 You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites
2022/05/13 23:09:23 You can learn how to set the runtime at: https://github.com/NVIDIA/k8s-device-plugin#quick-start
2022/05/13 23:09:23 If this is not a GPU node, you should set up a toleration or nodeSelector to only deploy this plugin on GPU nodes`
"""

# https://github.com/NVIDIA/k8s-device-plugin/issues/1371 (klog lines, a multi-line value in the first)
DEVICE_PLUGIN_KLOG = """kubectl logs -n nvidia nvdp-nvidia-device-plugin-7btjn -p
I0819 07:02:54.756486       1 main.go:235] "Starting NVIDIA Device Plugin" version=<
        e0a461e1
        commit: e0a461e1e7ad1d239d4708c954f08c3038e2654a
 >
I0819 07:02:54.756557       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins
I0819 07:02:54.756599       1 main.go:245] Starting OS watcher.
I0819 07:02:54.756857       1 main.go:260] Starting Plugins.
I0819 07:02:54.756880       1 main.go:317] Loading configuration.
I0819 07:02:54.757465       1 main.go:342] Updating config with default resource matching patterns.
W0819 07:02:54.757542       1 rm.go:108] mig-strategy="mixed" is only supported with NVML
W0819 07:02:54.757556       1 rm.go:109] NVML not detected: could not load NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or directory
"""

# https://github.com/cms-sw/cmssw/issues/40911 (Triton's glog lines, an elision, then a C++ traceback)
TRITON_TRACEBACK = """E0301 02:32:36.968122 25 metrics.cc:506] Unable to get device UUID: Bad parameter passed to function
E0301 02:32:36.968144 25 metrics.cc:506] Unable to get device UUID: Bad parameter passed to function
(...)
E0301 02:32:37.097455 25 model_repository_manager.cc:1215] failed to load 'gat_test' version 1: Internal: failed to load model 'gat_test': CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect. For debugging consider passing CUDA_LAUNCH_BLOCKING=1. CUDA error: unknown error
Exception raised from currentStreamCaptureStatusMayInitCtx at ../c10/cuda/CUDAGraphsC10Utils.h:83 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >) + 0x6c (0x2b161f78178c in /opt/tritonserver/backends/pytorch/libc10.so)
frame #1: <unknown function> + 0x16d05 (0x2b161fa59d05 in /opt/tritonserver/backends/pytorch/libc10_cuda.so)
"""

# https://github.com/triton-inference-server/server/issues/1935 (a healthy start: TensorFlow's and Triton's lines)
TRITON_HEALTHY = """2020-08-27 08:14:49.149376: I tensorflow/stream_executor/platform/default/dso_loader.cc:48] Successfully opened dynamic library libcudart.so.11.0
I0827 08:14:49.184434 1 metrics.cc:164] found 3 GPUs supporting NVML metrics
I0827 08:14:49.190249 1 metrics.cc:173]   GPU 0: Tesla T4
I0827 08:14:49.196444 1 metrics.cc:173]   GPU 1: Tesla T4
I0827 08:14:49.202433 1 metrics.cc:173]   GPU 2: Tesla T4
I0827 08:14:49.202691 1 server.cc:127] Initializing Triton Inference Server
I0827 08:14:49.669202 1 server_status.cc:55] New status tracking for model 'densenet_onnx'
I0827 08:14:49.669504 1 model_repository_manager.cc:723] loading: inception_graphdef:1
"""

# https://github.com/triton-inference-server/server/issues/6413 (one glog error line, quoted by a maintainer)
TRITON_CUDA_INIT = """E1011 08:02:59.085540 1 logging.cc:40] [runtime.cpp::isCudaInstalledCorrectly::38] Error Code 6: Internal Error (CUDA initialization failure with error 35. Please check your CUDA installation:  http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html)
"""


def _ga828_lines(scan: dict) -> list[int]:
    (f,) = [f for f in scan["findings"] if f["code"] == "GA828"]
    assert f["severity"] == "info"
    return [x["line"] for x in f["observed"]["lines"]]


@pytest.mark.parametrize(
    ("text", "lines"),
    [(DEVICE_PLUGIN_GO, [3]), (DEVICE_PLUGIN_KLOG, [12])],
    ids=["go-log", "klog"],
)
def test_a_log_of_any_library_is_read_and_its_unknown_errors_are_listed(tmp_path, text, lines):
    scan = import_paste(tmp_path, text)
    assert _ga828_lines(scan) == lines
    assert scan["verdict"]["why"].startswith("no known fault in the logs given, but error lines")
    assert not [f for f in scan["findings"] if f["severity"] in ("warn", "fail")]


@pytest.mark.parametrize(
    ("text", "code", "severity"),
    [(TRITON_TRACEBACK, 999, "info"), (TRITON_CUDA_INIT, 35, "warn")],
    ids=["glog-traceback", "glog-one-line"],
)
def test_a_cuda_code_in_a_log_is_judged_as_the_error_table_says(tmp_path, text, code, severity):
    # "CUDA error: unknown error" is cudaErrorUnknown (999: says nothing of the GPU by itself), "CUDA initialization
    # failure with error 35" cudaErrorInsufficientDriver (a driver older than the program's CUDA): the CUDA Runtime
    # API's cudaError_t; each judged with the driver's stack (GA507), neither a fault of a GPU
    scan = import_paste(tmp_path, text)
    (f,) = [f for f in scan["findings"] if f["code"] == "GA507" and f["severity"] != "not-checked"]
    assert (f["observed"]["code"], f["severity"]) == (code, severity)
    assert not [f for f in scan["findings"] if f["severity"] == "fail"]


def test_a_healthy_log_says_no_fault(tmp_path):
    scan = import_paste(tmp_path, TRITON_HEALTHY)
    assert [f["code"] for f in scan["findings"] if f["severity"] != "not-checked"] == []
    assert scan["verdict"]["why"].startswith("no fault in the logs given")


@pytest.mark.parametrize(
    "line",
    [
        "2022/05/13 23:09:23 Loading NVML",
        "I0819 07:02:54.756486       1 main.go:235] Starting",
        "Mar  3 10:01:02 gpu01 kernel: NVRM: loading",
        "[  123.456789] nvidia: loading",
        "2024-03-01 12:00:00,123 INFO  [main] o.a.s.SparkContext - Running Spark",
        "INFO 05-02 08:11:12 llm_engine.py:98] Initializing an LLM engine",
        "WARNING:torch.distributed.run:Setting OMP_NUM_THREADS",
        "[INFO] starting",
        '{"level":"error","ts":"2024-01-02T03:04:06Z","msg":"failed"}',
        "| INFO     | vllm.engine:123 - Initializing",
    ],
)
def test_the_common_logging_prefixes_are_log_lines(line):
    assert is_log_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "+-----------------------------------------------------------------------------+",
        "| NVIDIA-SMI 390.25                 Driver Version: 390.25                    |",
        "GPU 0: Tesla T4 (UUID: GPU-1234)",
        "frame #0: c10::Error::Error",
        "        GPU0    GPU1    CPU Affinity",
    ],
)
def test_tool_output_is_not_a_log_line(line):
    assert not is_log_line(line)


def test_a_date_over_a_table_does_not_start_a_log():
    banner = ["Fri Jun 29 09:38:08 2018", "+------+", "| NVIDIA-SMI 390.25   Driver Version: 390.25 |", "+------+"]
    assert not starts_log(banner, 0)


@pytest.mark.parametrize(
    "line",
    [
        "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
        "GPU 0: ECC errors: 0",
        "NCCL INFO NCCL_ASYNC_ERROR_HANDLING set by environment to 1",
        "2022/05/13 23:09:23 If this is not a GPU node, you should set up a toleration",
        "kernel: e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex",
    ],
)
def test_lines_that_report_no_failure_of_the_gpu_stack_are_not_listed(line):
    assert unjudged(line + "\n", 1, set()) == []


def test_a_line_next_to_an_event_is_that_event_and_the_rest_are_counted():
    text = "".join(f"NVRM: GPU {k} init failed\n" for k in range(40))
    got = unjudged(text, 1, {2})
    assert [e.line for e in got][:3] == [11, 12, 13]  # lines 1-10 stand by the event on line 2 (its report)
    assert len(got) == 20 and got[-1].more == 10  # 30 lines: 20 kept, the last counts 10 more


# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/484 (dmesg of an RTX 3090 whose 8K display went blank)
MODESET = """[   23.138228] nvidia-modeset: WARNING: GPU:0: Lost display notification (0:0x00000000); continuing.
[   39.156353] snd_hda_codec_hdmi hdaudioC1D0: HDMI: invalid ELD data byte 12
[  158.666001] nvidia-modeset: ERROR: GPU:0: Idling display engine timed out: 0x0000c67d:0:0:1051
[  166.672768] nvidia-modeset: ERROR: GPU:0: Idling display engine timed out: 0x0000c67e:0:0:1060
"""
# https://github.com/Bumblebee-Project/Bumblebee/issues/111 (dmesg | tail -10: the GPU fails to initialise)
VBIOS = """[   87.938175] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  280.13  Wed Jul 27 16:53:56 PDT 2011
[   98.991758] NVRM: failed to copy vbios to system memory.
[   98.992885] NVRM: RmInitAdapter failed! (0x30:0xffffffff:859)
[   98.992895] NVRM: rm_init_adapter(0) failed
"""


def test_the_live_probe_lists_the_drivers_failure_lines_no_sign_judges(tmp_path):
    from gpuadvisor.probes.kmsg import read_kernel_log

    kmsg = tmp_path / "kmsg"
    kmsg.write_text(MODESET, encoding="utf-8")
    log = read_kernel_log(kmsg=str(kmsg))
    assert [(e.kind, e.line) for e in log.events or []] == [
        ("unjudged", 1),
        ("unjudged", 3),
        ("unjudged", 4),
    ]  # not the HDMI line
    kmsg.write_text(VBIOS, encoding="utf-8")  # the vbios and rm_init_adapter lines are the RmInitAdapter event's
    log = read_kernel_log(kmsg=str(kmsg))
    assert [(e.kind, e.line) for e in log.events or []] == [("gpu-init-failed", 3)]


def test_a_log_that_never_names_the_gpu_stack_holds_nothing_for_this_tool():
    backup = ["10:02:03  backup started", "10:02:04  backup done"]
    assert not starts_log(backup, 0)  # refused as not recognised (tests/test_beyond_pasted_forms.py)
    assert starts_log([*backup, "10:02:05  CUDA error: out of memory"], 0)
